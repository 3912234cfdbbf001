"""The module/autograd facts TT203-TT207 share: grad-off contexts,
parameters and graph values, train-mode layers, model constructors and
callers (the two single-file answers a project index extends)."""

from __future__ import annotations

import ast
import textwrap

from torchtrap.config import Config
from torchtrap.facts import ModuleFacts
from torchtrap.facts.autograd import grad_off_context
from torchtrap.facts.modules import argument_for, is_eval_call
from torchtrap.rules.base import Context
from torchtrap.source import SourceText
from torchtrap.values.autograd import AutogradFacts
from torchtrap.values.models import ModelFacts

SOURCE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.block = Block()

        def forward(self, x):
            return self.block(self.fc(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(4)

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.0)

    @torch.no_grad()
    def evaluate(model, x):
        return model(x)

    def main(x):
        model = Net().to("cpu")
        frozen = Net().eval()
        w = torch.ones(4, requires_grad=True)
        y = (x * w).sigmoid()
        with torch.no_grad():
            z = y * 2
        return evaluate(model, x=x), frozen, z
    """
)


_KEEP: list[Context] = []  # the values hold their context weakly


def _facts() -> tuple[ast.Module, ModelFacts, AutogradFacts]:
    tree = ast.parse(SOURCE)
    ctx = Context(SourceText(SOURCE), "example.py", tree, ModuleFacts(tree), Config(), None)
    _KEEP.append(ctx)
    return tree, ctx.values.models, ctx.values.autograd


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _call_named(tree: ast.AST, name: str) -> ast.Call:
    return next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
    )


def test_train_mode_layers_through_local_submodules_and_inert_layers() -> None:
    _, models, _ = _facts()
    classes = models.classes
    net, plain = classes.get("Net"), classes.get("Plain")
    assert net is not None and plain is not None
    assert [ast.unparse(layer) for layer in models.train_mode_layers(net)] == ["nn.BatchNorm1d(4)"]
    assert models.train_mode_layers(plain) == []  # Dropout(0.0)


def test_model_constructor_follows_to_and_sees_eval() -> None:
    tree, models, _ = _facts()
    main = _function(tree, "main")
    ret = main.body[-1]
    frozen = ret.value.elts[1]  # type: ignore[attr-defined]
    call = _call_named(main, "evaluate")
    origin = models.model_constructor(call.args[0], call)
    assert origin is not None and ast.unparse(origin.call) == "Net()" and not origin.eval_mode
    frozen_origin = models.model_constructor(frozen, ret)
    assert frozen_origin is not None and frozen_origin.eval_mode


def test_callers_of_and_argument_for() -> None:
    tree, models, _ = _facts()
    evaluate = _function(tree, "evaluate")
    sites = models.callers_of(evaluate)
    assert [s.caller.name for s in sites if s.caller] == ["main"]
    site = sites[0]
    assert ast.unparse(argument_for(site.call, evaluate, "model")) == "model"
    assert ast.unparse(argument_for(site.call, evaluate, "x")) == "x"


def test_grad_off_context_and_graph_values() -> None:
    tree, models, autograd = _facts()
    evaluate = _function(tree, "evaluate")
    assert grad_off_context(evaluate.body[0], models.imports) is evaluate
    main = _function(tree, "main")
    ret = main.body[-1]
    names = {n.id: n for n in ast.walk(main) if isinstance(n, ast.Name)}
    assert autograd.in_graph(names["y"], ret)
    assert not autograd.in_graph(names["z"], ret)  # computed under no_grad
    assert not autograd.in_graph(names["x"], ret)  # a parameter of unknown kind


def test_is_eval_call() -> None:
    calls = [
        ast.parse(src, mode="eval").body for src in ("m.eval()", "m.train(False)", "m.train()")
    ]
    assert [is_eval_call(c) for c in calls] == [True, True, False]
