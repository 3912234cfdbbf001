"""The layer's questions about names in scopes: where a fix may go, what
was written to a name, whether a literal is the only binding."""

from __future__ import annotations

import ast

from tests.values.helpers import probe_calls
from torchtrap.facts.index import enclosing_function, enclosing_statement
from torchtrap.values import Kind


def _arg(call: ast.Call) -> ast.expr:
    return call.args[0]


def test_binds_is_the_scope_itself() -> None:
    ctx, calls = probe_calls(
        """
        x = 1
        def f(y):
            z = 2
            probe(x)
        """
    )
    fn = enclosing_function(calls[0])
    assert fn is not None
    assert ctx.values.binds("y", fn)  # a parameter
    assert ctx.values.binds("z", fn)
    assert not ctx.values.binds("x", fn)  # a global: assigning it in f makes a local
    assert ctx.values.binds("x", ctx.tree)


def test_bound_before_needs_a_binding_before_the_use() -> None:
    ctx, calls = probe_calls(
        """
        def f(net):
            probe(net)
            probe(late)
            late = 1
        """
    )
    first, second = (_arg(c) for c in calls)
    assert isinstance(first, ast.Name) and isinstance(second, ast.Name)
    assert ctx.values.bound_before(first, calls[0])
    assert not ctx.values.bound_before(second, calls[1])


def test_mutated_after_sees_in_place_changes_only_later() -> None:
    ctx, calls = probe_calls(
        """
        def f(w):
            w.add_(1)
            probe(w)
            v = w
            probe(v)
            v += 1
        """
    )
    stmts = [enclosing_statement(c) for c in calls]
    first, second = stmts
    assert isinstance(first, ast.stmt) and isinstance(second, ast.stmt)
    assert not ctx.values.mutated_after("w", first)  # w.add_ is before
    assert ctx.values.mutated_after("v", second)


def test_sources_are_the_reaching_writes_or_unknown() -> None:
    ctx, calls = probe_calls(
        """
        def f(flag, p):
            n = (p == 1).sum()
            probe(n)
            if flag:
                m = 1
            probe(m)
            probe(p)
        """
    )
    written, partial, param = calls
    sources = ctx.values.sources(_arg(written), written)
    assert sources is not None and [ast.unparse(v) for v, _ in sources] == ["(p == 1).sum()"]
    assert ctx.values.sources(_arg(partial), partial) is None  # only one path writes it
    assert ctx.values.sources(_arg(param), param) is None  # the callers' values


def test_a_literal_counts_only_as_the_names_single_binding() -> None:
    ctx, calls = probe_calls(
        """
        workers = 4
        def a():
            probe(workers)
        def b(workers):
            probe(workers)
        def c(flag):
            n = 2
            if flag:
                n = 0
            probe(n)
        """
    )
    module_level, parameter, twice = calls
    value = ctx.values.constant(_arg(module_level), module_level)
    assert value.kind is Kind.CONSTANT and value.constant is not None
    assert value.constant.value == 4
    # A parameter of the same name hides the module's literal: what callers pass.
    assert ctx.values.constant(_arg(parameter), parameter).kind is Kind.UNKNOWN
    assert ctx.values.constant(_arg(twice), twice).kind is Kind.UNKNOWN


def test_a_parameter_on_some_path_and_a_self_assignment_cycle() -> None:
    ctx, calls = probe_calls(
        """
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self, flag):
                super().__init__()
                self.w = nn.Parameter(torch.ones(2))
                self.loop = self.loop

            def reset(self):
                self.w = None

            def f(self):
                probe(self.w)
                probe(self.loop)
        """
    )
    some, cycle = calls
    autograd = ctx.values.autograd
    assert not autograd.is_parameter(_arg(some), some)  # not on every path
    assert autograd.is_parameter(_arg(some), some, every=False)
    assert not autograd.is_parameter(_arg(cycle), cycle, every=False)  # unknown, no recursion
