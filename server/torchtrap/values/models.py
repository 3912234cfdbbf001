"""Which constructor built a model value, and who calls a function.

The model part of the value layer (``ctx.values.models``): two questions
are single functions on purpose, so that the project index can answer them
across files: :meth:`ModelFacts.model_constructor` (which constructor built
this model value) and :meth:`ModelFacts.callers_of` (which calls reach this
function). Both answer within the one module now.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.datasets import self_attribute
from torchtrap.facts.index import enclosing_function, walk
from torchtrap.facts.modules import (
    FUNCTIONAL_DROPOUT,
    MODE_METHODS,
    MODULE_WRAPPERS,
    TORCHVISION_TRAIN_MODE_PREFIXES,
    TRAIN_MODE_LAYERS,
    call_argument,
    inert_layer,
    is_eval_call,
    parent_class,
    parent_class_of,
)
from torchtrap.facts.tensors import MODULE_SELF_METHODS, TensorFacts

_MAX_DEPTH = 4


@dataclass(frozen=True)
class ModelOrigin:
    """Where a model value comes from: the constructor call, and whether the
    chain that built it already switched it to eval mode (``Net().eval()``)."""

    call: ast.Call
    eval_mode: bool = False


@dataclass(frozen=True)
class CallSite:
    """A call of a function: ``call`` runs inside ``caller`` (None at module level)."""

    call: ast.Call
    caller: ast.FunctionDef | ast.AsyncFunctionDef | None


class ModelFacts:
    """Per-module cache; rules create one in ``check()``."""

    def __init__(self, tensors: TensorFacts) -> None:
        self.tensors = tensors
        self.facts = tensors.facts
        self.imports = tensors.imports
        self.classes = tensors.classes
        self._layers: dict[str, list[ast.AST]] = {}
        self._relative: set[str] | None = None

    @property
    def relative_imports(self) -> set[str]:
        """Names bound by ``from .x import y`` (the import table keeps only
        absolute imports); the project index resolves them."""
        if self._relative is None:
            self._relative = {
                alias.asname or alias.name
                for node in self.facts.index.of(ast.ImportFrom)
                if node.level
                for alias in node.names
                if alias.name != "*"
            }
        return self._relative

    # -- train-mode layers ------------------------------------------------------
    def train_mode_layers(self, info: ClassInfo) -> list[ast.AST]:
        """The Dropout/BatchNorm layers (or ``F.dropout(..., training=self.training)``
        calls) a local module class holds, also through local submodule
        classes and local bases; empty when none is evident."""
        if info.name in self._layers:
            return self._layers[info.name]
        self._layers[info.name] = []  # cycle guard
        found: list[ast.AST] = []
        for node in walk(info.node):
            if isinstance(node, ast.Call) and node is not info.node:
                found.extend(self._layers_of_call(node))
            if found:
                break
        if not found:
            for base in info.bases:
                local = self.classes.get(base.id) if isinstance(base, ast.Name) else None
                if local is not None and local is not info:
                    found.extend(self.train_mode_layers(local))
        self._layers[info.name] = found
        return found

    def layers_of_constructor(self, call: ast.Call) -> list[ast.AST]:
        """Train-mode layers of the model a constructor call builds."""
        qualname = self.imports.qualname(call.func)
        if qualname is not None:
            if qualname == "torch.nn.Sequential":
                return [n for arg in call.args for n in self._layers_in(arg)]
            return self._layers_of_call(call)
        local = self.classes.class_of_call(call)
        if local is not None and self.classes.is_module(local):
            return self.train_mode_layers(local)
        return []

    def _layers_in(self, expr: ast.expr) -> list[ast.AST]:
        return self.layers_of_constructor(expr) if isinstance(expr, ast.Call) else []

    def _layers_of_call(self, call: ast.Call) -> list[ast.AST]:
        qualname = self.imports.qualname(call.func)
        if qualname is None:
            local = self.classes.class_of_call(call)
            if local is not None and self.classes.is_module(local):
                return self.train_mode_layers(local)
            return []
        head, _, last = qualname.rpartition(".")
        if head == "torch.nn" and last in TRAIN_MODE_LAYERS:
            return [] if inert_layer(last, call) else [call]
        if qualname in FUNCTIONAL_DROPOUT:
            # Only `training=self.training` follows the mode; the default
            # (training=True) drops in both modes.
            training = call_argument(call, "training", 2)
            if isinstance(training, ast.Attribute) and training.attr == "training":
                return [call]
            return []
        if head.startswith("torchvision.models") and last.startswith(
            TORCHVISION_TRAIN_MODE_PREFIXES
        ):
            return [call]
        return []

    # -- model values -----------------------------------------------------------
    def model_constructor(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> ModelOrigin | None:
        """The constructor call that built the model ``expr`` at ``at``: a
        local name or ``self.attr`` bound to ``Net(...)`` (through
        ``.to()``/``.cuda()``/... chains), in this module. None when unknown.

        A class imported from another file (also relatively) gives its
        constructor call: the project index knows its layers (TT207 asks).
        Not followed: a factory function, a model passed in from another file.
        """
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            return self._origin_of_value(expr, depth)
        values = self.tensors.values_of(expr, at)
        if values is not None and len(values) > 1:
            # `self.net = None` in `__init__`, the model in `build_model()`:
            # calling it where it is None would raise, so it holds the model.
            values = [v for v in values if not _is_none(v[0])]
        if values is None or len(values) != 1:
            return None
        value, _ = values[0]
        return self._origin_of_value(value, depth)

    def model_constructors(self, expr: ast.expr, at: ast.AST) -> list[ModelOrigin] | None:
        """Every constructor call the model ``expr`` may come from: one
        (:meth:`model_constructor`), or one per branch (``if arch == "unet":
        self.net = UNet() else: self.net = MSUNet()``); None when some value
        is not a known constructor."""
        single = self.model_constructor(expr, at)
        if single is not None or isinstance(expr, ast.Call):
            return [single] if single is not None else None
        values = self.tensors.values_of(expr, at)
        values = [v for v in values or () if not _is_none(v[0])]
        if len(values) < 2:
            return None
        found: list[ModelOrigin] = []
        for value, _ in values:
            origin = self._origin_of_value(value, 0)
            if origin is None:
                return None
            found.append(origin)
        return found

    def _origin_of_value(self, value: ast.expr, depth: int) -> ModelOrigin | None:
        eval_mode = False
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in MODULE_SELF_METHODS
        ):
            if value.func.attr in MODE_METHODS:
                eval_mode = eval_mode or is_eval_call(value)
            value = value.func.value
        if not isinstance(value, ast.Call):
            return None
        if self.imports.qualname(value.func) in MODULE_WRAPPERS and value.args:
            # `nn.DataParallel(Net())`: the wrapped module's layers and mode.
            inner = value.args[0]
            if isinstance(inner, ast.Call):
                return self._origin_of_value(inner, depth + 1)
            return self.model_constructor(inner, value, depth + 1)
        if (
            isinstance(value.func, ast.Name)
            and self.classes.get(value.func.id) is None
            and self.imports.qualname(value.func) is None
            and value.func.id not in self.relative_imports
        ):
            return None  # a local factory function: not followed (yet)
        return ModelOrigin(value, eval_mode)

    # -- calls ------------------------------------------------------------------
    def callers_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[CallSite]:
        """Calls of a module-level function by its name in this module, or of
        a method through ``self.name(...)`` in its own class.

        Extension point for a project index: calls from other files.
        """
        by_name = self.facts.calls_by_name
        owner = enclosing_function(function)
        scope_parent = parent_class(function)
        if scope_parent is not None:
            calls = [
                c
                for c in by_name.get(function.name, ())
                if self_attribute(c.func, "self") and parent_class_of(c) is scope_parent
            ]
        elif owner is None:
            calls = [c for c in by_name.get(function.name, ()) if isinstance(c.func, ast.Name)]
        else:
            calls = [
                c
                for c in by_name.get(function.name, ())
                if isinstance(c.func, ast.Name) and enclosing_function(c) is owner
            ]
        return [CallSite(c, enclosing_function(c)) for c in calls if c is not function]


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None
