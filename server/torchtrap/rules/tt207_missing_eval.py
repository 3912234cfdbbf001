"""TT207: a model with Dropout/BatchNorm evaluated under no_grad in training mode."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from torchtrap.facts.autograd import grad_off_context, is_grad_off
from torchtrap.facts.imports import ImportTable, dotted_name
from torchtrap.facts.index import ancestors, enclosing_function, parent, walk, walk_scope
from torchtrap.facts.modules import (
    MODE_METHODS,
    argument_for,
    may_be_module,
)
from torchtrap.facts.remote import MESSAGE_LIMIT, REMOTE_ATTR, remote_node, remote_where
from torchtrap.facts.tensors import TORCH_TENSOR_FUNCTIONS
from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity
from torchtrap.fixes import edits
from torchtrap.project.index import location
from torchtrap.project.summary import Span
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values.models import ModelOrigin
from torchtrap.values.program import module_model
from torchtrap.values.program_values import (
    program_callers_known,
    program_train_mode_classes,
    program_train_mode_parts,
    program_train_mode_places,
)
from torchtrap.values.remote import passed_model_layers

Function = ast.FunctionDef | ast.AsyncFunctionDef

# Calls that mark a function as a training step: a no_grad block there
# computes a target or a teacher's output, not an evaluation.
_TRAINING_CALLS = frozenset({"backward", "manual_backward", "step", "zero_grad"})
# Lightning runs these with the model already in eval mode.
_LIGHTNING_EVAL_HOOKS = ("validation_", "test_", "predict_", "on_validation", "on_test")
# Dummy inputs: a shape probe, not an evaluation.
_DUMMY_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn", "full", "randint"})
# A helper whose name says it handles the mode (`inference_context(model)`, `set_eval(model)`).
_MODE_HELPER_PREFIXES = ("eval", "infer", "train", "mode")
_MAX_CALLER_DEPTH = 3
# Qualified names that are never project code (no need to ask the project).
_FOREIGN = ("torch.", "numpy.", "math.", "builtins.", "typing.", "collections.")
# On a layer's stand-in node: the model holding it is one of several a
# factory may pick, and only these classes have such layers.
_SOME_ONLY = "_torchtrap_some_models"


@dataclass(frozen=True)
class _Imported:
    """A model built from a class imported from another file (``Net()``
    with ``from models import Net``): its layers are the project's to tell,
    asked only once the rest of the pattern matched."""

    name: str  # as this file spells it: "Net", "models.Net"
    qualname: str | None  # "models.Net"; None for a relative import


@dataclass(frozen=True)
class _Passed:
    """A parameter with no caller in this file: the models the project's
    other files pass to it (the value layer's call-site join), asked only
    once the rest of the pattern matched."""

    function: Function
    name: str

    def __hash__(self) -> int:
        return hash((id(self.function), self.name))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Passed)
            and other.function is self.function
            and other.name == self.name
        )


@dataclass(frozen=True)
class _Trained:
    """A model a caller puts in training mode (``net.train()``) just before
    it passes the model here: the mode is known whatever ran before; which
    models it may be (a factory's pick) and their layers are the
    whole-program model's to tell, asked only once the rest matched."""

    passed: ast.expr  # the argument at the call site, a node of this file
    caller: Function  # the function that trains it and passes it

    def __hash__(self) -> int:
        return id(self.passed)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Trained) and other.passed is self.passed


Layer = ast.AST | _Imported | _Passed | _Trained


class MissingEval(Rule):
    """Flags a model with Dropout or BatchNorm run under `torch.no_grad()` while in training mode.

    ## What it does
    Flags a call of a model inside `with torch.no_grad():` /
    `torch.inference_mode()` (or a function decorated with them, or one
    that every caller in this file calls inside such a block) when the
    model's class holds `nn.Dropout*` or `nn.BatchNorm*` layers (or
    `F.dropout(..., training=self.training)`) and nothing calls `.eval()` or
    `.train(False)` on it: not in the function, and not in any caller in
    this file that passes the model in. Only `.eval()` / `.train(False)`
    (or `.train(mode)`, which may be False) manage the mode: a caller's
    `model.train()` leaves it in training mode, and a caller that runs
    optimizer steps (`fit()` calling `validate(net)` each epoch) does not
    make the callee's `no_grad` pass anything but an evaluation.

    The model's class may be defined in another file of the project
    (`from models import Net`, `import models; models.Net()`, a relative
    import, a re-export through a package's `__init__.py`, layers inherited
    from a project base class): the project index tells whether its
    `__init__` builds `nn.Dropout*`/`nn.BatchNorm*` layers, and the finding
    points at the layer in that file.

    A model may also be passed in from another file: a function or method
    without callers in its own file (`Solver.test(model)`, called by
    `Solver.train`, called from `main.py` as `solver.train(net)` with
    `solver = Solver(...)` and `net = vgg16_bn()`) holds what the project's
    call sites pass, when every call of that name in the project is such a
    site, each passes a model built by a project class or factory (followed
    to the class), and none of them switches its mode. A site may pass its
    own caller's parameter: the epoch loop `train(model, ...)` in train.py
    calling `evaluate(model, val_loader)` from utils.py holds what
    `train`'s callers pass (`main()` building `Net()`), up to three callers
    up, when no caller on the way rebinds the model or switches its mode.
    A caller that puts the model in training mode just before it passes it
    (`net.train()` at the top of the epoch loop, then `val(net, ...)`)
    fixes the mode there whatever ran before; the models it may hold are
    the whole-program model's to tell (a factory such as `get_model(name)`
    that picks one of many classes, in another file too). When only some of
    them have Dropout/BatchNorm, the finding is info and names them.

    Silent when the model is unknown (built by a factory whose class is not
    known, a third-party class such as `timm.create_model(...)`, passed in
    from another file by a caller that passes anything else, switches the
    mode, or calls it inside an expression; a class whose layers are built
    in a way the index does not record, or with a base outside the project
    that may not be an `nn.Module`), when its class has neither layer (or `nn.Dropout(0.0)`,
    `track_running_stats=False`), when the function also trains (calls
    `.backward()`, `.step()`, `zero_grad()`: a target or a teacher's output
    computed inside a training step), when the input is a dummy tensor
    (`model(torch.zeros(1, 3, 224, 224))`: a shape probe), when the model
    is handed to a helper whose name mentions the mode (`inference_context(model)`),
    in Lightning's validation/test/predict hooks (Lightning switches modes
    itself), and when the function has no known callers to pass the model in.

    `torchtrap run` reports a module with Dropout/BatchNorm called under
    `no_grad`/`inference_mode` in training mode twice at the same place with
    no optimizer step in between, or with none after it (a teacher called
    inside a training step is not an evaluation), on the line of the call,
    also when the model or the helper is in another module.

    ## Why is this bad?
    `torch.no_grad()` only stops gradient recording; it does not switch
    layers to inference behaviour. In training mode, measured with torch
    2.13: `nn.Dropout(0.5)` zeroes about half of the outputs (32 of 64) and
    two evaluations of the same input differ; `nn.BatchNorm1d` normalizes
    with the batch's statistics and *updates its running statistics* with
    the evaluation data (`running_mean` 0 → 0.48 after one batch of mean 5,
    `num_batches_tracked` 1): evaluating without `.eval()` gives noisy
    metrics and silently changes the model.

    Fixes (both unsafe: code after the block may rely on training mode):
    insert `model.eval()` before the block, or the bracketed form that
    restores the previous mode afterwards
    (`was_training = model.training; model.eval(); ...; model.train(was_training)`).

    ## Example
    ```python
    model = Net()  # holds nn.Dropout(0.5)
    train(model)
    with torch.no_grad():
        accuracy = (model(x_val).argmax(1) == y_val).float().mean()
    ```

    ## Use instead
    ```python
    model = Net()
    train(model)
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_val).argmax(1) == y_val).float().mean()
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    - https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
    """

    code = "TT207"
    name = "missing-eval"
    summary = "a model with Dropout/BatchNorm run under `torch.no_grad()` without `.eval()`"
    requires_text = ("no_grad", "inference_mode", "set_grad_enabled")

    def check(self) -> Iterable[Finding]:
        self.models = self.ctx.values.models
        self.imports = self.ctx.facts.imports
        self._managed: dict[int, set[str]] = {}
        self._functions: dict[str, Function] | None = None
        self._visiting: set[int] = set()
        self._training: dict[int, bool] = {}
        self._remote: dict[_Imported, list[ast.AST]] = {}
        self._constructions: dict[_Imported, ast.Call] = {}
        self._callers_off: dict[int, bool] = {}
        seen: set[int] = set()
        for block in self._grad_off_blocks():
            for call in _calls_in(block):
                if id(call) in seen:
                    continue
                seen.add(id(call))
                finding = self._check_call(call)
                if finding is not None:
                    yield finding

    def _grad_off_blocks(self) -> Iterator[ast.AST]:
        index = self.ctx.facts.index
        withs: list[ast.With | ast.AsyncWith] = [*index.of(ast.With), *index.of(ast.AsyncWith)]
        for node in withs:
            if any(is_grad_off(item.context_expr, self.imports) for item in node.items):
                yield node
        functions: list[Function] = [*index.of(ast.FunctionDef), *index.of(ast.AsyncFunctionDef)]
        loops = self.ctx.values.loops
        for function in functions:
            if any(is_grad_off(d, self.imports) for d in function.decorator_list):
                yield function
            elif function.name in self.ctx.facts.calls_by_name and loops.grad_off_by_callers(
                function
            ):
                yield function  # every caller runs it under `torch.no_grad()`

    # -- detection ------------------------------------------------------------
    def _check_call(self, call: ast.Call) -> Finding | None:
        model = call.func
        # A model is a local name or `self.<attr>`; `x.reshape(...)` is not.
        if isinstance(model, ast.Name):
            name = model.id
        elif isinstance(model, ast.Attribute) and _is_self(model.value):
            name = f"self.{model.attr}"
        else:
            return None
        qualname = self.imports.qualname(model)
        if qualname is not None and (
            qualname.startswith(_FOREIGN)
            or not isinstance(model, ast.Name)
            or enclosing_function(call) is not None
        ):
            return None  # a library call; a project global only in a script's top level
        block = grad_off_context(call, self.imports)
        function = enclosing_function(call)
        if block is None and function is not None and self._off_by_callers(function):
            block = function
        if block is None or _is_shape_probe(call, self.imports):
            return None
        if function is not None and (
            function.name.startswith(_LIGHTNING_EVAL_HOOKS)
            or function.name.lstrip("_").startswith("train")
        ):
            return None
        if name.startswith("self.") and self._in_module_class(call):
            return None  # a submodule follows its parent's mode, set by the caller
        # The cheap evidence first: most calls are of unknown models.
        layers = self._unguarded_layers(model, call, function, name, 0)
        if not layers:
            return None
        if function is not None and self._trains(function):
            return None
        if self._mode_managed(function, name):
            return None
        # Last, the costly evidence: classes defined in other files.
        found = self._project_layers(layers)
        if not found:
            return None
        return self._finding(call, model, name, block, function, found)

    def _unguarded_layers(
        self, model: ast.expr, at: ast.AST, function: Function | None, name: str, depth: int
    ) -> list[Layer]:
        """Train-mode layers of the model, when no path to ``at`` switches it
        to eval mode (``_Imported`` for a class of another file: the project
        tells); empty when unknown or switched."""
        if depth > _MAX_CALLER_DEPTH:
            return []
        origins = self.models.model_constructors(model, at) or []
        if len(origins) > 1:
            # One class per branch: a finding only when every one has layers.
            found_all: list[Layer] = []
            for each in origins:
                layers = self._origin_layers(each, model, function, depth)
                if not layers or not self._project_layers(layers):
                    return []
                found_all.extend(layers)
            return found_all
        if origins:
            return self._origin_layers(origins[0], model, function, depth)
        return self._other_layers(model, at, function, depth)

    def _origin_layers(
        self, origin: ModelOrigin, model: ast.expr, function: Function | None, depth: int
    ) -> list[Layer]:
        if origin.eval_mode:
            return []
        local: list[Layer] = []
        local.extend(self.models.layers_of_constructor(origin.call))
        if not local and isinstance(model, ast.Name) and function is None and depth == 0:
            local.extend(self._global_layers(model))  # `net = build()`: what it returns
        if not local:
            imported = self._imported_class(origin.call.func)
            if imported is not None:
                local.append(imported)
                self._constructions.setdefault(imported, origin.call)
        return local

    def _other_layers(
        self, model: ast.expr, at: ast.AST, function: Function | None, depth: int
    ) -> list[Layer]:
        if isinstance(model, ast.Name) and function is None and depth == 0:
            return self._global_layers(model)
        if not (isinstance(model, ast.Name) and function is not None):
            return []
        if self.ctx.values.parameter(model, at) is not function:
            return []
        # A parameter: what the callers pass, unless a caller switches it.
        sites = self.models.callers_of(function)
        if not sites:
            # No caller here: the callers in other files (`solver.train(net)`
            # in main.py with `net = build_net()`), asked last.
            return [_Passed(function, model.id)]
        found: list[Layer] = []
        for site in sites:
            passed = argument_for(site.call, function, model.id)
            if passed is None:
                return []
            passed_name = dotted_name(passed)
            if passed_name is None or self._mode_managed(site.caller, passed_name):
                return []
            # A caller that runs optimizer steps (`fit()` calling `validate(net)`
            # each epoch) proves nothing: the callee's no_grad pass is an evaluation.
            found.extend(
                self._unguarded_layers(passed, site.call, site.caller, passed_name, depth + 1)
            )
            if site.caller is not None and _trained_before(site.caller, passed_name, site.call):
                found.append(_Trained(passed, site.caller))
        return found

    def _global_layers(self, model: ast.Name) -> list[Layer]:
        """A script's model built elsewhere (``from model import model``,
        built and trained there; a factory's result): the classes the
        whole-program model says it holds, when nothing in the program may
        switch it out of training mode."""
        ctx = self.ctx
        program = module_model(ctx.project, ctx.path, ctx.text, ctx.tree)
        classes = program_train_mode_classes(program, model) if program is not None else None
        return [_Imported(model.id, qualname) for qualname in classes or ()]

    def _imported_class(self, func: ast.expr) -> _Imported | None:
        """``Net`` / ``models.Net`` imported from a module that may be in the
        project (not torch, not a local name); None otherwise."""
        dotted = dotted_name(func)
        if dotted is None:
            return None
        qualname = self.imports.qualname(func)
        if qualname is not None:
            return None if qualname.startswith(_FOREIGN) else _Imported(dotted, qualname)
        if dotted.split(".", 1)[0] in self.models.relative_imports:
            return _Imported(dotted, None)
        return None

    def _project_layers(self, layers: list[Layer]) -> list[ast.AST]:
        """The layers, with each imported class replaced by the train-mode
        layers the project index finds in it (stand-in nodes located in its
        file); an imported class the project does not know adds nothing."""
        found: list[ast.AST] = []
        trained = [layer for layer in layers if isinstance(layer, _Trained)]
        for layer in layers:
            if isinstance(layer, _Trained):
                continue  # asked last, when nothing else is known
            if isinstance(layer, _Passed):
                found.extend(self._passed_layers(layer))
                continue
            if not isinstance(layer, _Imported):
                found.append(layer)
                continue
            if layer not in self._remote:
                self._remote[layer] = self._remote_layers(layer)
            found.extend(self._remote[layer])
        for layer in trained if not found else ():
            found.extend(self._trained_layers(layer))
        return found

    def _trained_layers(self, trained: _Trained) -> list[ast.AST]:
        """The train-mode layers of the models the whole-program model says
        ``trained.passed`` may hold (stand-in nodes where each is made);
        some models only (a factory that picks one of many classes): the
        finding says so, at a lower severity."""
        ctx = self.ctx
        project = ctx.project  # may raise NeedsProject: the engine asks again
        program = module_model(project, ctx.path, ctx.text, ctx.tree)
        if program is None or not program_callers_known(program, trained.caller.name):
            return []  # a caller the model cannot resolve may pass another model
        parts = program_train_mode_parts(program, trained.passed)
        if parts is None:
            return []
        found: list[ast.AST] = []
        for name, site in parts.layers:
            where = program.where(site.module, site.line, site.col)
            if where is None:
                continue
            path, rng = where
            span = Span.of(rng)
            node = remote_node(
                path, span, location(path, span, project.root if project else None), name
            )
            if not parts.every:
                setattr(node, _SOME_ONLY, parts.classes)
            found.append(node)
        return found

    def _passed_layers(self, passed: _Passed) -> list[ast.AST]:
        project = self.ctx.project  # may raise NeedsProject: the engine asks again
        layers = passed_model_layers(project, self.ctx.path, passed.function, passed.name)
        if not layers or project is None:
            return []
        return [
            remote_node(path, span, location(path, span, project.root), qual.rsplit(".", 1)[-1])
            for path, qual, span in layers
        ]

    def _remote_layers(self, imported: _Imported) -> list[ast.AST]:
        project = self.ctx.project  # may raise NeedsProject: the engine asks again
        if project is None:
            return []
        ref = (
            project.resolve(imported.qualname, self.ctx.path)
            if imported.qualname is not None  # also imported inside a function
            else project.ref(self.ctx.path, imported.name)  # relative: module level only
        )
        if ref is None:
            return []
        layers = project.train_mode_layers(ref) or []
        call = self._constructions.get(imported)
        if not layers and call is not None:
            # Deeper than the class's own `__init__`: its submodule classes,
            # the `Sequential` a helper returns, as the whole program holds them.
            ctx = self.ctx
            program = module_model(ctx.project, ctx.path, ctx.text, ctx.tree)
            layers = program_train_mode_places(program, call) if program is not None else []
        return [
            remote_node(path, span, location(path, span, project.root), qual.rsplit(".", 1)[-1])
            for path, qual, span in layers
        ]

    def _off_by_callers(self, function: Function) -> bool:
        key = id(function)
        if key not in self._callers_off:
            self._callers_off[key] = self.ctx.values.loops.grad_off_by_callers(function)
        return self._callers_off[key]

    def _in_module_class(self, node: ast.AST) -> bool:
        cls = next((a for a in ancestors(node) if isinstance(a, ast.ClassDef)), None)
        if cls is None:
            return False
        info = self.ctx.facts.classes.get(cls.name)
        return info is None or may_be_module(info, self.ctx.facts.classes)

    def _trains(self, function: Function) -> bool:
        key = id(function)
        if key not in self._training:
            self._training[key] = any(
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _TRAINING_CALLS
                for node in walk_scope(function)
            )
        return self._training[key]

    def _mode_managed(self, function: Function | None, name: str) -> bool:
        """Does ``function`` switch the model's mode or hand it to a helper
        that may? For ``self.<attr>``, any method of the class; for a
        module-level name, any code in the module."""
        root = name.split(".", 1)[0]
        scopes: list[ast.AST] = [function] if function is not None else []
        if root == "self" and function is not None:
            cls = next((a for a in ancestors(function) if isinstance(a, ast.ClassDef)), None)
            if cls is not None:
                scopes.extend(
                    s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                )
        elif function is None or root not in _local_names(function):
            scopes.append(self.ctx.tree)
            scopes.extend(self.ctx.facts.index.of(ast.FunctionDef))
        return any(
            _same_model(receiver, name) for scope in scopes for receiver in self._switched(scope)
        )

    def _switched(self, scope: ast.AST) -> set[str]:
        """Dotted names whose mode ``scope`` switches (``m.eval()``,
        ``m.train(...)``) or hands to a mode helper."""
        key = id(scope)
        if key not in self._managed:
            names: set[str] = set()
            for node in walk_scope(scope):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in MODE_METHODS:
                    if _sets_eval(node):
                        names.add(_dotted_prefix(func.value))
                    continue
                if self._mode_helper(func):
                    for arg in (*node.args, *(kw.value for kw in node.keywords)):
                        names.add(_dotted_prefix(arg))
            self._managed[key] = names
        return self._managed[key]

    def _mode_helper(self, func: ast.expr) -> bool:
        """A function that may switch the mode of a model passed to it: a
        local function that switches some mode, or one defined elsewhere
        whose name mentions the mode (``inference_context``, ``set_eval``)."""
        if isinstance(func, ast.Name):
            local = self._local_functions().get(func.id)
            if local is not None:
                if id(local) in self._visiting:
                    return False
                self._visiting.add(id(local))
                try:
                    return bool(self._switched(local))
                finally:
                    self._visiting.discard(id(local))
        words = re.split(r"[._]", (dotted_name(func) or "").lower())
        return any(
            word.startswith(_MODE_HELPER_PREFIXES) and not word.startswith("model")
            for word in words
        )

    def _local_functions(self) -> dict[str, Function]:
        if self._functions is None:
            self._functions = {
                s.name: s
                for s in self.ctx.tree.body
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        return self._functions

    # -- finding ------------------------------------------------------------------
    def _finding(
        self,
        call: ast.Call,
        model: ast.expr,
        name: str,
        block: ast.AST,
        function: Function | None,
        layers: list[ast.AST],
    ) -> Finding:
        layers = list({id(layer): layer for layer in layers}.values())  # one per caller path
        kinds = sorted({_layer_kind(layer) for layer in layers})
        what = "/".join(kinds)
        message = (
            f"`{name}` is run in training mode under `no_grad`: "
            f"its {what} layers act as in training"
        )
        where = next((w for layer in layers if (w := self._elsewhere(layer))), None)
        if where is not None:  # "... its Dropout layers (models.py:9) act as in training"
            longer = message.replace(" layers act", f" layers ({where}) act")
            message = longer if len(longer) <= MESSAGE_LIMIT else message
        related = [
            self.ctx.related(
                layer,
                f"{_layer_kind(layer)} here"
                + (f" ({w})" if (w := self._elsewhere(layer)) else "")
                + ": in training mode it "
                + (
                    "drops activations"
                    if _layer_kind(layer) == "Dropout"
                    else "uses batch statistics and updates its running statistics"
                ),
            )
            for layer in layers[:3]
        ]
        fixes = self._fixes(model, name, block, function)
        some = next(
            (getattr(layer, _SOME_ONLY) for layer in layers if hasattr(layer, _SOME_ONLY)), None
        )
        if some is not None:
            # A factory's pick: the models of these classes act as in training.
            first = some[0].rsplit(".", 1)[-1]
            others = f" and {len(some) - 1} more" if len(some) > 1 else ""
            message = (
                f"`{name}` is run in training mode under `no_grad`: when it is a {first}"
                f"{others}, its {what} layers act as in training"
            )
            return self.finding(call, message, severity=Severity.INFO, fixes=fixes, related=related)
        return self.finding(call, message, fixes=fixes, related=related)

    def _elsewhere(self, layer: ast.AST) -> str | None:
        """``models.py:9`` for a layer in another file."""
        if not hasattr(layer, REMOTE_ATTR):
            return None
        return remote_where(layer, self.ctx.path)

    def _fixes(
        self, model: ast.expr, name: str, block: ast.AST, function: Function | None
    ) -> list[Fix]:
        source = self.ctx.source
        if isinstance(block, (ast.With, ast.AsyncWith)):
            if (
                isinstance(model, ast.Name)
                and enclosing_function(block) is not None
                and not self.ctx.values.bound_before(model, block)
            ):
                return []
            anchor: ast.stmt = block
        elif isinstance(block, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not any(is_grad_off(d, self.imports) for d in block.decorator_list):
                return []  # grad is off in the callers: where the mode belongs is theirs
            if not (isinstance(model, ast.Name) and _is_parameter_of(block, model.id)) and not (
                name.startswith("self.") and _is_parameter_of(block, "self")
            ):
                return []
            anchor = _first_statement(block)
        else:
            return []
        eval_line = f"{name}.eval()"
        fixes = [
            Fix(
                f"Call `{eval_line}` before it (unsafe: code after it may rely on training mode)",
                Applicability.UNSAFE,
                build=lambda: [edits.insert_before_statement(source, anchor, eval_line)],
            )
        ]
        if isinstance(block, (ast.With, ast.AsyncWith)) and not _leaves_early(block):
            flag = _fresh_name("was_training", function or self.ctx.tree)

            def bracket() -> list[Edit]:
                return [
                    edits.insert_before_statement(
                        source, block, f"{flag} = {name}.training\n{eval_line}"
                    ),
                    edits.insert_after_statement(source, block, f"{name}.train({flag})"),
                ]

            fixes.append(
                Fix(
                    f"Switch `{name}` to eval mode for the block and restore its mode after "
                    "(unsafe: changes the mode inside the block)",
                    Applicability.UNSAFE,
                    build=bracket,
                )
            )
        return fixes

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn

            class Small(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    return self.fc(x)

            class Wide(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 8)

                def forward(self, x):
                    return self.fc(x)

            def get_model(name):
                model = Small() if name == "small" else Wide()
                return model, torch.optim.SGD(model.parameters(), lr=0.1)

            def val(net, loader):
                with torch.no_grad():
                    return [net(x) for x, _ in loader]

            def train(net, optimizer, loader, epochs):
                for epoch in range(epochs):
                    net.train()
                    for x, y in loader:
                        optimizer.zero_grad()
                        net(x).sum().backward()
                        optimizer.step()
                    val(net, loader)

            model, optimizer = get_model("wide")
            train(model, optimizer, [], 3)
            """,
            note="trained by the epoch loop; no model the factory picks has Dropout/BatchNorm",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Deep(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.drop(self.fc(x))

            def val(net, loader):
                with torch.no_grad():
                    return [net(x) for x, _ in loader]

            def train(net, optimizer, loader, epochs):
                for epoch in range(epochs):
                    net.train()
                    for x, y in loader:
                        optimizer.zero_grad()
                        net(x).sum().backward()
                        optimizer.step()
                    net.eval()
                    val(net, loader)

            model = Deep()
            train(model, torch.optim.SGD(model.parameters(), lr=0.1), [], 3)
            """,
            note="the epoch loop switches to eval mode before it validates",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def evaluate(x):
                model = Net()
                model.eval()
                with torch.no_grad():
                    return model(x)
            """,
            note="`.eval()` before the block",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def evaluate(model, x):
                with torch.no_grad():
                    return model(x)

            def main(x):
                model = Net()
                model.eval()
                return evaluate(model, x)
            """,
            note="the caller switches the model to eval mode",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.act = nn.ReLU()

                def forward(self, x):
                    return self.act(self.fc(x))

            def evaluate(x):
                model = Net()
                with torch.no_grad():
                    return model(x)
            """,
            note="neither Dropout nor BatchNorm: training mode changes nothing",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(p=0.0)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def evaluate(x):
                model = Net()
                with torch.no_grad():
                    return model(x)
            """,
            note="`Dropout(p=0.0)` acts the same in both modes",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def train_step(student, x, y, optimizer):
                teacher = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
                with torch.no_grad():
                    target = teacher(x)
                loss = ((student(x) - target) ** 2).mean()
                loss.backward()
                optimizer.step()
            """,
            note="a target computed inside a training step",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def feature_size():
                backbone = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
                with torch.no_grad():
                    out = backbone(torch.zeros(1, 3, 32, 32))
                return out.shape[1]
            """,
            note="a shape probe on a dummy tensor",
        ),
        Valid(
            """
            import torch

            def ema_update(ema, model, decay):
                with torch.no_grad():
                    for e, p in zip(ema.parameters(), model.parameters()):
                        e.mul_(decay).add_(p, alpha=1 - decay)
            """,
            note="an EMA update: no model is called",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            def build():
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                with torch.no_grad():
                    model[0].weight.fill_(0.01)
                    model.apply(lambda m: None)
                return model
            """,
            note="weight initialisation: the model is not run",
        ),
        Valid(
            """
            import torch
            from mylib import build_model

            def evaluate(x):
                model = build_model()
                with torch.no_grad():
                    return model(x)
            """,
            note="the model's class is unknown",
        ),
        Valid(
            """
            import torch

            def evaluate(model, x):
                with torch.no_grad():
                    return model(x)
            """,
            note="a parameter with no caller in this file: unknown",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.bn = nn.BatchNorm1d(4)

                def forward(self, x):
                    return self.bn(x)

            def evaluate(x):
                model = Net().eval()
                with torch.no_grad():
                    return model(x)
            """,
            note="switched to eval mode where it is built",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            from detectron2.evaluation import inference_context

            def evaluate(x):
                model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
                with inference_context(model), torch.no_grad():
                    return model(x)
            """,
            note="a helper that sets the mode (detectron2's `inference_context`)",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            import lightning as L

            class Model(L.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))

                @torch.no_grad()
                def validation_step(self, batch, batch_idx):
                    return self.net(batch)
            """,
            note="Lightning switches modes around its validation hooks",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            from fairseq.models import BaseFairseqModel

            class Wav2Vec(BaseFairseqModel):
                def __init__(self):
                    super().__init__()
                    self.feature_extractor = nn.Sequential(nn.Conv1d(1, 8, 3), nn.Dropout(0.1))

                def forward(self, source):
                    with torch.no_grad():
                        features = self.feature_extractor(source)
                    return features
            """,
            note="a frozen submodule inside a module's forward follows the parent's mode "
            "(fairseq wav2vec2)",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn
            from lightning.pytorch import LightningModule

            class SyncBNModule(LightningModule):
                def __init__(self):
                    super().__init__()
                    self.bn_layer = nn.BatchNorm1d(1)

                def training_step(self, batch, batch_idx):
                    with torch.no_grad():
                        out_bn = self.bn_layer(batch)
                    return out_bn.sum()
            """,
            note="inside a training step (Lightning's parity test)",
        ),
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def validate(net, x):
                with torch.no_grad():
                    return net(x)

            def fit(x, y, epochs, mode):
                net = Net()
                optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
                for _ in range(epochs):
                    net.train()
                    loss = (net(x) - y).pow(2).mean()
                    loss.backward()
                    optimizer.step()
                    net.train(mode)
                    validate(net, x)
            """,
            note="`train(mode)` may be `train(False)`: the caller manages the mode",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Small(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)

                def forward(self, x):
                    return self.fc(x)

            class Deep(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.drop(self.fc(x))

            def get_model(name):
                if name == "small":
                    model = Small()
                else:
                    model = Deep()
                return model, torch.optim.SGD(model.parameters(), lr=0.1)

            def val(net, loader):
                correct = 0
                for x, y in loader:
                    with torch.no_grad():
                        correct += (net(x).argmax(1) == y).sum().item()
                return correct

            def train(net, optimizer, loader, epochs):
                for epoch in range(epochs):
                    net.train()
                    for x, y in loader:
                        optimizer.zero_grad()
                        net(x).sum().backward()
                        optimizer.step()
                    val(net, loader)

            model, optimizer = get_model("deep")
            train(model, optimizer, [], 3)
            """,
            line=33,
            severity=Severity.INFO,
            message_contains="when it is a Deep",
            note="trained by the epoch loop; a factory's pick (Hyperspectral-Classification)",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def validate(net, x):
                with torch.no_grad():
                    return net(x)

            def fit(x, y, epochs):
                net = Net()
                optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
                for _ in range(epochs):
                    net.train()
                    loss = (net(x) - y).pow(2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    validate(net, x)
            """,
            line=16,
            note="the caller's `train()` and optimizer steps leave the model in training mode",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def evaluate(x):
                model = Net()
                with torch.no_grad():
                    return model(x)
            """,
            line=17,
            message_contains="`model` is run in training mode under `no_grad`",
            fixed="""
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.fc(self.drop(x))

            def evaluate(x):
                model = Net()
                model.eval()
                with torch.no_grad():
                    return model(x)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
            x = torch.randn(16, 4)
            with torch.no_grad():
                y = model(x)
            print(y.mean())
            """,
            line=8,
            message_contains="BatchNorm",
            fix_title="restore its mode",
            fixed="""
            import torch
            import torch.nn as nn

            model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
            x = torch.randn(16, 4)
            was_training = model.training
            model.eval()
            with torch.no_grad():
                y = model(x)
            model.train(was_training)
            print(y.mean())
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.drop(x)

            @torch.no_grad()
            def evaluate(model, x):
                return model(x)

            def main(x):
                model = Net().to("cpu")
                return evaluate(model, x)
            """,
            line=15,
            note="the model comes from a caller in the same file",
            fixed="""
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.drop = nn.Dropout(0.5)

                def forward(self, x):
                    return self.drop(x)

            @torch.no_grad()
            def evaluate(model, x):
                model.eval()
                return model(x)

            def main(x):
                model = Net().to("cpu")
                return evaluate(model, x)
            """,
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Trainer:
                def __init__(self):
                    self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2))

                def fit(self, x):
                    return self.validate(x)

                def validate(self, x):
                    with torch.inference_mode():
                        return self.model(x)
            """,
            line=14,
            message_contains="`self.model`",
        ),
    )


def _calls_in(block: ast.AST) -> Iterator[ast.Call]:
    blocks = (ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef)
    body = block.body if isinstance(block, blocks) else []
    for stmt in body:
        for node in (stmt, *walk_scope(stmt)):
            if isinstance(node, ast.Call):
                yield node


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _dotted_prefix(expr: ast.AST) -> str:
    """``self.model.module`` of ``self.model.module[0].eval``."""
    while isinstance(expr, (ast.Subscript, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return dotted_name(expr) or ""


def _trained_before(function: Function, name: str, call: ast.Call) -> bool:
    """``function`` calls ``name.train()`` (or ``.train(True)``) in a block
    that holds ``call`` further down (``net.train()`` at the top of the epoch
    loop, then ``val(net)``): the model is in training mode at ``call``."""
    chain = [call, *ancestors(call)]
    for node in walk_scope(function):
        if not (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "train"
            and not _sets_eval(node.value)
            and dotted_name(node.value.func.value) == name
        ):
            continue
        owner = parent(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(owner, field, None)
            if not isinstance(block, list) or node not in block:
                continue
            start = block.index(node)
            if any(a in block[start + 1 :] for a in chain if parent(a) is owner):
                return True
    return False


def _sets_eval(call: ast.Call) -> bool:
    """``m.eval()``, ``m.train(False)``, or ``m.train(mode)`` (maybe False).
    ``m.train()`` / ``m.train(True)`` put the model in training mode: a
    ``no_grad`` evaluation after it runs Dropout and BatchNorm as in training."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr == "eval":
        return True
    given = call.args[0] if call.args else next((k.value for k in call.keywords), None)
    if given is None:
        return False
    return not (isinstance(given, ast.Constant) and given.value is True)


def _same_model(receiver: str, name: str) -> bool:
    """Does switching ``receiver`` switch the model ``name``? A local model
    matches on its root name; ``self.x`` on ``self``, itself or a part."""
    if not receiver:
        return False
    if not name.startswith("self."):
        return receiver.split(".", 1)[0] == name.split(".", 1)[0]
    return (
        receiver == "self"
        or receiver == name
        or receiver.startswith(name + ".")
        or name.startswith(receiver + ".")
    )


def _is_shape_probe(call: ast.Call, imports: ImportTable) -> bool:
    for arg in call.args:
        if isinstance(arg, ast.Call):
            qualname = imports.qualname(arg.func) or ""
            head, _, last = qualname.rpartition(".")
            if head == "torch" and last in _DUMMY_FACTORIES and last in TORCH_TENSOR_FUNCTIONS:
                return True
    return False


def _is_parameter_of(function: Function, name: str) -> bool:
    args = function.args
    return name in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def _local_names(function: Function) -> set[str]:
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    for node in walk_scope(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _first_statement(function: Function) -> ast.stmt:
    body = function.body
    first = body[0]
    if (
        len(body) > 1
        and isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return body[1]
    return first


def _leaves_early(block: ast.AST) -> bool:
    jumps = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)
    return any(isinstance(n, jumps) for n in walk_scope(block))


def _fresh_name(base: str, scope: ast.AST) -> str:
    used = {n.id for n in walk(scope) if isinstance(n, ast.Name)}
    name, i = base, 1
    while name in used:
        i += 1
        name = f"{base}_{i}"
    return name


def _layer_kind(layer: ast.AST) -> str:
    text = ast.unparse(layer.func) if isinstance(layer, ast.Call) else ""
    if "BatchNorm" in text:
        return "BatchNorm"
    if "ropout" in text:
        return "Dropout"
    return "Dropout/BatchNorm"
