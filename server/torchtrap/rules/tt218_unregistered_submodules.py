"""TT218: an nn.Module keeps submodules or Parameters in a plain list, tuple or dict."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from torchtrap.facts.autograd import PARAMETER_CLASSES
from torchtrap.facts.classes import ClassInfo
from torchtrap.facts.index import ancestors, enclosing_function, parent, walk, walk_scope
from torchtrap.facts.intent import says
from torchtrap.facts.modules import STATELESS_LAYERS, enclosing_method, parent_class_of
from torchtrap.facts.tensors import MODULE_SELF_METHODS
from torchtrap.findings import Applicability, Edit, Finding, Fix, unsafe_title
from torchtrap.fixes.names import ModuleNames
from torchtrap.rules.base import Invalid, Rule, Valid
from torchtrap.values import Kind
from torchtrap.values.classes import is_module_class
from torchtrap.values.program import module_model
from torchtrap.values.program_values import program_holds_stateful_modules

# Containers that register what they hold.
REGISTERING = frozenset(
    f"torch.nn.{name}"
    for name in ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")
)
_REGISTER_CALLS = frozenset(
    {"add_module", "register_module", "register_parameter", "register_buffer", "setattr"}
)
# A class that overrides these collects its members itself.
_HANDLES_ITS_MEMBERS = frozenset(
    {"parameters", "named_parameters", "state_dict", "_apply", "children", "named_children"}
    | {"modules", "named_modules", "_save_to_state_dict"}
)
# These only move them: `parameters()` and `state_dict` still skip them.
_MOVES_ITS_MEMBERS = frozenset({"to", "cuda"})
_BUILTINS = frozenset(dir(builtins))
_SHAPES = (ast.List, ast.ListComp, ast.Tuple, ast.Dict, ast.DictComp, ast.Call)
_ADDS = frozenset({"append", "extend", "insert"})
# What nn.ModuleList / nn.ModuleDict support of a list's / dict's methods.
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "index"})
_DICT_METHODS = frozenset({"keys", "values", "items", "pop", "update", "clear"})
# Kept out of the module on purpose, as a comment says.
ON_PURPOSE = re.compile(
    r"(?i)(regist|state[_ ]?dict|parameters\(\)|submodule|on purpose|deliberate|intention"
    r"|\bhid(e|den)\b|\bavoid|not (be )?(saved|trained|tracked|moved|part)|exclude|keep out)"
)
_EMPTY_LIST = "list"
_EMPTY_DICT = "dict"
_PLAIN = {_EMPTY_LIST: "list", _EMPTY_DICT: "dict", "tuple": "tuple"}
_CONTAINER = {
    ("module", "list"): "ModuleList",
    ("module", "tuple"): "ModuleList",
    ("module", "dict"): "ModuleDict",
    ("parameter", "list"): "ParameterList",
    ("parameter", "tuple"): "ParameterList",
    ("parameter", "dict"): "ParameterDict",
}


@dataclass
class _Attribute:
    """One ``self.name`` of a class: where a plain container is made, and
    what the class puts into it."""

    name: str
    made: list[tuple[ast.Assign | ast.AnnAssign, ast.Attribute, ast.expr, str]] = field(
        default_factory=list
    )
    kinds: list[str | None] = field(default_factory=list)  # one per member put in
    keys_ok: bool = True  # every key is a string (ModuleDict needs them)
    methods: set[str] = field(default_factory=set)
    annotated: str | None = None  # "module"/"parameter" from a `List[nn.Module]` annotation
    references: bool = False  # a member is `self.other`: registered there


class UnregisteredSubmodules(Rule):
    """Flags submodules or Parameters kept in a plain list, tuple or dict on an `nn.Module`.

    ## What it does
    Flags `self.name = [...]` (also a tuple, a dict, a comprehension, or an
    empty `[]`/`{}` filled later with `append`/`extend`/`insert`/`[key] =`)
    in an `nn.Module` subclass when what goes in is evidently submodules
    (an `nn.Linear(...)`, a local or project Module class, a torchvision
    model; the value layer tells) or `nn.Parameter`s, or when an annotation
    says so (`self.layers: List[nn.Module] = []`).

    Silent for `nn.ModuleList`/`ModuleDict`/`ParameterList`/`ParameterDict`,
    a list later wrapped (`nn.Sequential(*self.layers)`, `nn.ModuleList(self.layers)`),
    members registered one by one (`add_module`, `register_module`,
    `register_parameter`, `setattr`, also through a helper method of the
    class), members that are references to registered ones (`[self.fc1, self.fc2]`)
    or modules passed in (`[teacher]`: a helper kept out on purpose), a
    factory table whose only use is picking one member into an attribute
    (`self.rnn = self.cells[cell]`: the one used is registered), a
    comment at the assignment that says it is kept out on purpose,
    stateless layers (`nn.ReLU`, pooling, `nn.Dropout`, a loss without
    weights), and classes that override `parameters`/`state_dict`/`_apply`
    (a class that only overrides `cuda`/`to` moves its members by hand, but
    `parameters()` and `state_dict` still skip them: reported).

    ## Why is this bad?
    `nn.Module` registers a submodule or Parameter only when it is assigned
    as an attribute directly (or held by one of the registering containers);
    a plain list hides it. Measured with torch 2.13: for `self.blocks =
    [nn.Linear(8, 8) for _ in range(3)]` next to `self.head = nn.Linear(8, 2)`,
    `model.parameters()` yields 2 tensors instead of 8 (an optimizer built
    from it never trains the blocks, which stay at their random
    initialisation), `state_dict()` has 2 keys instead of 8 (a checkpoint does
    not save them), and after `model.double()` the blocks are still float32
    (`.to(device)`/`.cuda()` do not move them either, so the first forward
    on the GPU fails). `model.eval()` does not reach them either.

    Fix: wrap the container in `nn.ModuleList` / `nn.ModuleDict` (or
    `nn.ParameterList` / `nn.ParameterDict`) (unsafe: new `state_dict` keys,
    so loading an old checkpoint with `strict=True` fails on the unexpected
    keys). Offered when every member is of one kind, a dict's keys are
    strings, and the class uses only methods the container has.

    ## Example
    ```python
    class MLP(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.blocks = [nn.Linear(d, d) for _ in range(n)]
    ```

    ## Use instead
    ```python
    class MLP(nn.Module):
        def __init__(self, d, n):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
    ```

    ## References
    - https://pytorch.org/docs/stable/generated/torch.nn.ModuleList.html
    - https://github.com/pytorch/pytorch/issues/8017
    - https://discuss.pytorch.org/t/list-of-nn-module-in-a-nn-module/219
    """

    code = "TT218"
    name = "unregistered-submodules"
    summary = (
        "Submodules or Parameters in a plain list/dict: not trained, saved or moved by `.to()`"
    )
    fact = (
        "Measured with torch 2.13: 3 `nn.Linear` blocks in a plain list are missing from "
        "`parameters()` and `state_dict()` and stay float32 after `.double()`."
    )
    requires_text = ("nn",)
    _attribute: _Attribute | None = None  # the one being judged

    def check(self) -> Iterable[Finding]:
        classes = self.ctx.facts.classes
        candidates = self._plain_containers()
        if not candidates:
            return
        uses_by_class, annotations_by_class = self._uses(
            {name for attributes in candidates.values() for name in attributes}
        )
        for cls, attributes in candidates.items():
            info = classes.get(cls.name)
            if info is None or info.node is not cls:
                continue
            if classes.is_dataset(info) or any(m in info.methods for m in _HANDLES_ITS_MEMBERS):
                continue
            uses = uses_by_class.get(cls, {})
            annotations = annotations_by_class.get(cls, {})
            found = [
                a
                for a in attributes.values()
                if self._holds_members(info, a, uses.get(a.name, []), annotations.get(a.name))
            ]
            if not found:
                continue
            if not is_module_class(info, classes, self.ctx.project, self.ctx.path):
                continue
            for attribute in found:
                yield from self._findings(info, attribute)

    # -- what the class does with each attribute ------------------------------------
    def _plain_containers(self) -> dict[ast.ClassDef, dict[str, _Attribute]]:
        """``self.x = <list/tuple/dict display or comprehension>`` in a method,
        by class (from the shared index: no walk of its own)."""
        found: dict[ast.ClassDef, dict[str, _Attribute]] = {}
        index = self.ctx.facts.index
        for node in index.of_types(ast.Assign, ast.AnnAssign):
            value = node.value  # type: ignore[attr-defined]
            if not isinstance(value, _SHAPES):
                continue
            if isinstance(node, ast.Assign):
                if len(node.targets) != 1:
                    continue
                target = node.targets[0]
            else:
                target = node.target  # type: ignore[attr-defined]
            if not isinstance(target, ast.Attribute) or not _is_self_attribute(target):
                continue
            shape = _container_shape(value)
            if shape is None:
                continue
            method = enclosing_method(node)
            if method is None:
                continue
            attributes = found.setdefault(method[1], {})
            attribute = attributes.setdefault(target.attr, _Attribute(target.attr))
            attribute.made.append((node, target, value, shape))  # type: ignore[arg-type]
        return found

    def _uses(
        self, names: set[str]
    ) -> tuple[
        dict[ast.ClassDef, dict[str, list[ast.Attribute]]], dict[ast.ClassDef, dict[str, str]]
    ]:
        """The ``self.<name>`` nodes of ``names`` by class, and what
        ``List[nn.Module]``-like annotations say each holds (from the shared
        index: no walk of the classes)."""
        uses: dict[ast.ClassDef, dict[str, list[ast.Attribute]]] = {}
        annotations: dict[ast.ClassDef, dict[str, str]] = {}
        index = self.ctx.facts.index
        for node in index.of(ast.Attribute):
            if node.attr in names and _is_self_attribute(node):
                cls = parent_class_of(node)
                if cls is not None:
                    uses.setdefault(cls, {}).setdefault(node.attr, []).append(node)
        for ann in index.of(ast.AnnAssign):
            target = ann.target
            if isinstance(target, ast.Attribute) and _is_self_attribute(target):
                name, cls = target.attr, parent_class_of(ann)
            elif isinstance(target, ast.Name) and isinstance(parent(ann), ast.ClassDef):
                name, cls = target.id, parent(ann)  # type: ignore[assignment]
            else:
                continue
            if name not in names or cls is None:
                continue
            kind = _annotated_kind(ann.annotation)
            if kind is not None:
                annotations.setdefault(cls, {})[name] = kind
        return uses, annotations

    def _holds_members(
        self,
        info: ClassInfo,
        attribute: _Attribute,
        uses: list[ast.Attribute],
        annotated: str | None,
    ) -> bool:
        self._attribute = attribute
        attribute.annotated = annotated
        loads = [node for node in uses if not isinstance(node.ctx, ast.Store)]
        if loads and all(_chosen_into_attribute(node) for node in loads):
            return False  # a factory table: the member chosen is registered as `self.x`
        for node in uses:
            use = next(ancestors(node), None)
            if self._wrapped_or_registered(node, use, info):
                return False
            if isinstance(use, ast.Attribute) and use.value is node:
                attribute.methods.add(use.attr)
                call = next(ancestors(use), None)
                if isinstance(call, ast.Call) and call.func is use and use.attr in _ADDS:
                    self._members_added(use.attr, call, attribute)
            elif isinstance(use, ast.Subscript) and use.value is node:
                assign = next(ancestors(use), None)
                if isinstance(assign, ast.Assign) and use in assign.targets:
                    attribute.kinds.append(self._member_kind(assign.value))
                    attribute.keys_ok &= _string_key(use.slice)
            elif isinstance(use, ast.AugAssign) and use.target is node:
                for item in _items(use.value):
                    attribute.kinds.append(self._member_kind(item))
        for _stmt, _target, value, _shape in attribute.made:
            for item, key in _members(value):
                attribute.kinds.append(self._member_kind(item))
                if key is not None:
                    attribute.keys_ok &= _string_key(key)
        if attribute.annotated and not any(attribute.kinds) and not attribute.references:
            attribute.kinds.append(attribute.annotated)
        if not any(attribute.kinds):
            return False
        return not any(
            says(self.ctx.source, ON_PURPOSE, node=stmt, before=1)
            for stmt, _t, _v, _s in attribute.made
        )

    def _wrapped_or_registered(
        self, node: ast.Attribute, use: ast.AST | None, info: ClassInfo
    ) -> bool:
        """``nn.Sequential(*self.x)``, ``nn.ModuleList(self.x)``, ``add_module(...,
        self.x[i])``, or a loop over ``self.x`` that registers each member."""
        imports = self.ctx.facts.imports
        for up in ancestors(node):
            if isinstance(up, ast.Call):
                qualname = imports.qualname(up.func)
                if qualname in REGISTERING or _registers(up, info):
                    return True
            if isinstance(up, (ast.stmt)):
                break
        for up in ancestors(node):
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                break
            if isinstance(up, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Call) and _registers(n, info) for n in walk(up)
            ):
                return True
        return False

    def _members_added(self, method: str, call: ast.Call, attribute: _Attribute) -> None:
        if method == "extend":
            for arg in call.args[:1]:
                attribute.kinds.extend(self._member_kind(i) for i in _items(arg))
        elif call.args:
            attribute.kinds.append(self._member_kind(call.args[-1]))

    def _member_kind(self, expr: ast.expr) -> str | None:
        """ "module", "parameter", or None (unknown, a reference, stateless)."""
        if _is_self_attribute(expr) and self._attribute is not None:
            self._attribute.references = True
        node = expr
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MODULE_SELF_METHODS
        ):
            node = node.func.value
        if isinstance(node, ast.Name):
            if not self._fresh_local(node):
                if self._attribute is not None and _stored_elsewhere(node):
                    self._attribute.references = True  # an index of members kept elsewhere
                return None
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            # `Owner().part`, `build()[0]`: taken from an object made here,
            # not a reference to a member registered elsewhere.
            root: ast.expr = node
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            fresh = isinstance(root, ast.Call) and not _is_self_attribute(root)
            return "module" if fresh and self._program_module(expr) else None
        elif not isinstance(node, ast.Call):
            return None
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Name)
                and func.id in _BUILTINS
                and func.id not in self.ctx.facts.imports.names
                and not self.ctx.facts.classes.get(func.id)
            ):
                return None  # `int(...)`, `str(...)`: not a module
            qualname = self.ctx.facts.imports.qualname(node.func) or ""
            if qualname in PARAMETER_CLASSES:
                return "parameter"
            head, _, last = qualname.rpartition(".")
            if head == "torch.nn" and _stateless(last, node):
                return None
            if qualname in REGISTERING and not node.args and not node.keywords:
                return None  # an empty container: nothing lost yet
        value = self.ctx.values.of(expr)
        if value.kind is Kind.MODULE and value.definite:
            return "module"
        return "module" if self._program_module(expr) else None

    def _program_module(self, expr: ast.expr) -> bool:
        """The whole-program model says ``expr`` holds an ``nn.Module`` with
        parameters on every path (a helper's or factory's result, an owned
        object's field) when the file's values cannot say."""
        if not isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript, ast.Name)):
            return False
        ctx = self.ctx
        model = module_model(ctx.project, ctx.path, ctx.text, ctx.tree)
        return model is not None and program_holds_stateful_modules(model, expr)

    def _fresh_local(self, name: ast.Name) -> bool:
        """A local name bound to a constructor call in the same function and
        used only to be put in the container (or configured)."""
        function = enclosing_function(name)
        if function is None:
            return False
        bound = False
        for node in walk_scope(function):
            if not isinstance(node, ast.Name) or node.id != name.id or node is name:
                continue
            up = next(ancestors(node), None)
            if isinstance(node.ctx, ast.Store):
                if not (isinstance(up, ast.Assign) and isinstance(up.value, ast.Call)):
                    return False
                bound = True
            elif isinstance(up, ast.Attribute) and up.value is node:
                continue  # `layer.weight.data.normal_()`
            else:
                return False  # stored, passed, or registered elsewhere
        return bound

    # -- findings --------------------------------------------------------------------
    def _findings(self, info: ClassInfo, attribute: _Attribute) -> Iterator[Finding]:
        kinds = {k for k in attribute.kinds if k is not None}
        kind = "module" if "module" in kinds else "parameter"
        for _stmt, target, value, shape in attribute.made:
            plain = _PLAIN[shape]
            container = _CONTAINER[(kind, plain)]
            what = "modules" if kind == "module" else "Parameters"
            skipped = (
                "`parameters()`, `.to()`, `.eval()`, `state_dict`"
                if kind == "module"
                else "`parameters()`, `.to()`, `state_dict`"
            )
            if any(m in info.methods for m in _MOVES_ITS_MEMBERS):
                # A hand-written `cuda()`/`to()` moves them; nothing collects them.
                skipped = skipped.replace("`.to()`, ", "")
            message = (
                f"`self.{attribute.name}`: {what} in a plain {plain} are unregistered: "
                f"{skipped} skip them"
            )
            if len(message) > 120:
                message = (
                    f"`self.{attribute.name}`: {what} in a plain {plain} are unregistered "
                    "(not trained, saved or moved)"
                )
            fixes = []
            if self._fixable(attribute, kinds, plain):
                fixes = [self._wrap_fix(value, container, plain)]
            yield self.finding(target, message, fixes=fixes)

    def _fixable(self, attribute: _Attribute, kinds: set[str], plain: str) -> bool:
        if len(kinds) != 1 or None in attribute.kinds:
            return False
        shapes = {_PLAIN[s] for _st, _t, _v, s in attribute.made}
        if plain == "dict":
            return shapes == {"dict"} and attribute.keys_ok and attribute.methods <= _DICT_METHODS
        return "dict" not in shapes and attribute.methods <= _LIST_METHODS

    def _wrap_fix(self, value: ast.expr, container: str, plain: str) -> Fix:
        source, ctx = self.ctx.source, self.ctx

        def build() -> list[Edit]:
            names = ModuleNames(source, ctx.tree, ctx.facts.index)
            ref = names.reference(f"torch.nn.{container}") or f"torch.nn.{container}"
            empty = _container_shape(value) in (_EMPTY_LIST, _EMPTY_DICT) and not _members(value)
            inner = "" if empty else source.segment(source.node_range(value))
            if isinstance(value, ast.Tuple) and inner and not inner.startswith("("):
                inner = f"({inner})"
            return [Edit(source.node_range(value), f"{ref}({inner})"), *names.import_edits()]

        return Fix(
            unsafe_title(
                f"Wrap in `nn.{container}`",
                "new `state_dict` keys: strict loading of an old checkpoint fails",
            ),
            Applicability.UNSAFE,
            build=build,
        )

    valid = (
        Valid(
            """
            import torch
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self, d, n):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
                    self.heads = nn.ModuleDict({"a": nn.Linear(d, 1)})
                    self.scales = nn.ParameterList([nn.Parameter(torch.ones(d))])
                    self.bias = nn.ParameterDict({"b": nn.Parameter(torch.zeros(d))})
            """,
            note="the registering containers",
        ),
        Valid(
            """
            import torch.nn as nn

            class MLP(nn.Module):
                def __init__(self, dims):
                    super().__init__()
                    layers = []
                    for a, b in zip(dims, dims[1:]):
                        layers.append(nn.Linear(a, b))
                    self.mlp = nn.Sequential(*layers)

            class Tower(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.convs = [nn.Conv2d(d, d, 3) for _ in range(3)]
                    self.convs = nn.ModuleList(self.convs)
            """,
            note="a local list wrapped in Sequential; a list wrapped later",
        ),
        Valid(
            """
            import torch.nn as nn

            class FPN(nn.Module):
                def __init__(self, channels):
                    super().__init__()
                    self.lateral_convs = []
                    for i, c in enumerate(channels):
                        conv = nn.Conv2d(c, 256, 1)
                        self.add_module(f"fpn_lateral{i}", conv)
                        self.lateral_convs.append(conv)

            class Highway(nn.Module):
                def __init__(self, size, n):
                    super().__init__()
                    self.gate = [nn.Linear(size, size) for _ in range(n)]
                    for i, module in enumerate(self.gate):
                        self._add_to_parameters(module.parameters(), f"gate_{i}")

                def _add_to_parameters(self, parameters, name):
                    for i, parameter in enumerate(parameters):
                        self.register_parameter(name=f"{name}-{i}", param=parameter)
            """,
            note="registered one by one (detectron2's FPN), also through a helper method",
        ),
        Valid(
            """
            import torch.nn as nn

            class Distiller(nn.Module):
                def __init__(self, student, teacher):
                    super().__init__()
                    self.student = student
                    self.teacher = [teacher]
                    self.fc1 = nn.Linear(4, 4)
                    self.fc2 = nn.Linear(4, 4)
                    self.order = [self.fc1, self.fc2]
                    # a plain list on purpose: the EMA copy stays out of state_dict
                    self.ema = [nn.Linear(4, 4)]

            class Network(nn.Module):
                def __init__(self):
                    super().__init__()
                    self._layers = nn.ModuleList()
                    self._layers_by_name: Dict[str, nn.Module] = {}

                def append_layer(self, layer, name):
                    self._layers.append(layer)
                    self._layers_by_name[name] = layer

            class Attention(nn.Module):
                k_in_proj: Dict[str, nn.Linear]

                def __init__(self):
                    super().__init__()
                    self.k_proj = nn.Linear(4, 4)
                    self.k_in_proj = {"monotonic": self.k_proj}
            """,
            note="a module passed in, references to registered layers (also annotated: texar's "
            "network index, fairseq's monotonic attention), kept out on purpose",
        ),
        Valid(
            """
            import torch.nn as nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.acts = [nn.ReLU(), nn.Tanh(), nn.Identity()]
                    self.pools = {"max": nn.MaxPool2d(2), "avg": nn.AvgPool2d(2)}
                    self.losses = [nn.MSELoss(), nn.L1Loss()]
                    self.names = ["a", "b"]

            class Config:
                def __init__(self):
                    self.layers = [nn.Linear(2, 2)]
            """,
            note="stateless layers; plain values; a class that is not a Module",
        ),
        Valid(
            """
            import torch.nn as nn

            class Ensemble(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.members = [nn.Linear(4, 4) for _ in range(n)]

                def parameters(self, recurse=True):
                    for m in self.members:
                        yield from m.parameters(recurse)
            """,
            note="the class collects its members' parameters itself",
        ),
        Valid(
            """
            import torch.nn as nn

            class MetaOptimizer(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.lstms = []
                    for i in range(n):
                        self.lstms.append(nn.LSTMCell(4, 4))

                def cuda(self):
                    super().cuda()
                    for i in range(len(self.lstms)):
                        self.lstms[i].cuda()

                def parameters(self, recurse=True):
                    yield from super().parameters(recurse)
                    for cell in self.lstms:
                        yield from cell.parameters(recurse)
            """,
            note="a hand-written `cuda()` and a `parameters()` that collects them",
        ),
        Valid(
            """
            import torch.nn as nn

            class Encoder(nn.Module):
                def __init__(self, cell, hidden):
                    super().__init__()
                    self.cells = {"lstm": nn.LSTM(hidden, hidden), "gru": nn.GRU(hidden, hidden)}
                    self.rnn = self.cells[cell]

                def forward(self, x):
                    return self.rnn(x)[0]
            """,
            note="issue 34: a factory table, the chosen module assigned to an attribute",
        ),
    )
    invalid = (
        Invalid(
            """
            import torch.nn as nn

            class MLP(nn.Module):
                def __init__(self, d, n):
                    super().__init__()
                    self.blocks = [nn.Linear(d, d) for _ in range(n)]
                    self.head = nn.Linear(d, 2)

                def forward(self, x):
                    for block in self.blocks:
                        x = block(x)
                    return self.head(x)
            """,
            line=7,
            message_contains="`self.blocks`: modules in a plain list are unregistered",
            fixed="""
            import torch.nn as nn

            class MLP(nn.Module):
                def __init__(self, d, n):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
                    self.head = nn.Linear(d, 2)

                def forward(self, x):
                    for block in self.blocks:
                        x = block(x)
                    return self.head(x)
            """,
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self, n):
                    super(Model, self).__init__()
                    self.conv = []
                    for i in range(n):
                        self.conv.append(nn.Conv2d(1, 16, 3))
            """,
            line=8,
            fixed="""
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self, n):
                    super(Model, self).__init__()
                    self.conv = nn.ModuleList()
                    for i in range(n):
                        self.conv.append(nn.Conv2d(1, 16, 3))
            """,
            note="an empty list filled with append (pytorch issue 8017)",
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class Heads(nn.Module):
                def __init__(self, tasks, d):
                    super().__init__()
                    self.heads = {t: nn.Linear(d, 1) for t in ("age", "sex")}
                    self.scales = [nn.Parameter(torch.ones(d)), nn.Parameter(torch.ones(d))]
            """,
            line=8,
            message_contains="Parameters in a plain list",
            note="a dict of modules (string keys: ModuleDict), a list of Parameters",
        ),
        Invalid(
            """
            from typing import List, Optional
            import torch.nn as nn

            class MergeLayer(nn.Module):
                def __init__(self, layers=None):
                    super().__init__()
                    self._layers: Optional[List[nn.Module]] = None
                    if layers is not None:
                        self._layers = []
                        for layer in layers:
                            self._layers.append(layer)
            """,
            line=10,
            message_contains="`self._layers`: modules",
            note="the annotation says what it holds (texar's MergeLayer)",
        ),
        Invalid(
            """
            import torch.nn as nn

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    first = Block()
                    self.stages = (first, Block().cuda())
            """,
            line=12,
            message_contains="plain tuple",
            fixed="""
            import torch.nn as nn

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    first = Block()
                    self.stages = nn.ModuleList((first, Block().cuda()))
            """,
            note="a local module class, a fresh local name",
        ),
        Invalid(
            """
            import torch.nn as nn

            class Encoder(nn.Module):
                def __init__(self, hidden):
                    super().__init__()
                    self.cells = {"lstm": nn.LSTM(hidden, hidden), "gru": nn.GRU(hidden, hidden)}
                    self.rnn = self.cells["lstm"]

                def forward(self, x, cell):
                    return self.cells[cell](x)[0]
            """,
            line=7,
            note="near miss of the factory table: forward picks from the table on every call",
        ),
        Invalid(
            """
            import torch.nn as nn

            class MetaOptimizer(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.lstms = []
                    for i in range(n):
                        self.lstms.append(nn.LSTMCell(4, 4))

                def cuda(self):
                    super().cuda()
                    for i in range(len(self.lstms)):
                        self.lstms[i].cuda()
            """,
            line=7,
            message_contains="`parameters()`, `.eval()`, `state_dict` skip them",
            note="a hand-written `cuda()` moves them, but the optimizer never sees them",
        ),
    )


def _chosen_into_attribute(node: ast.Attribute) -> bool:
    """``self.act = self.acts[kind]``: one member of a table picked and
    assigned to an attribute, which registers it (the rest is never used)."""
    use = parent(node)
    if not (isinstance(use, ast.Subscript) and use.value is node and isinstance(use.ctx, ast.Load)):
        return False
    assign = parent(use)
    return (
        isinstance(assign, ast.Assign)
        and assign.value is use
        and all(isinstance(t, ast.Attribute) and _is_self_attribute(t) for t in assign.targets)
    )


def _is_self_attribute(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _stored_elsewhere(name: ast.Name) -> bool:
    """Is the member ``name`` also handed to another container of ``self`` or
    stored on another attribute in its function (``self._layers.append(layer_)`` next to
    ``self._layers_by_name[n] = layer_``)?"""
    function = enclosing_function(name)
    if function is None:
        return False
    here = next(ancestors(name), None)
    for node in walk_scope(function):
        if not isinstance(node, ast.Name) or node.id != name.id or node is name:
            continue
        up = next(ancestors(node), None)
        if up is here:
            continue
        if (
            isinstance(up, ast.Call)
            and node in up.args
            and isinstance(up.func, ast.Attribute)
            and (_is_self_attribute(up.func.value) or _is_self_attribute_or_self(up.func.value))
        ):
            return True  # `self._layers.append(layer_)`, `self.add_module(n, layer_)`
        if (
            isinstance(up, ast.Assign)
            and up.value is node
            and any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in up.targets)
        ):
            return True
    return False


def _container_shape(value: ast.expr) -> str | None:
    if isinstance(value, (ast.List, ast.ListComp)):
        return _EMPTY_LIST
    if isinstance(value, ast.Tuple):
        return "tuple"
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return _EMPTY_DICT
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("list", "dict")
        and not value.keywords
        and len(value.args) <= 1
    ):
        return _EMPTY_LIST if value.func.id == "list" else _EMPTY_DICT
    return None


def _members(value: ast.expr) -> list[tuple[ast.expr, ast.expr | None]]:
    """(member, key) pairs a display or comprehension holds."""
    if isinstance(value, (ast.List, ast.Tuple)):
        return [(e, None) for e in value.elts if not isinstance(e, ast.Starred)]
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return [(value.elt, None)]
    if isinstance(value, ast.Dict):
        return [(v, k) for k, v in zip(value.keys, value.values, strict=True) if k is not None]
    if isinstance(value, ast.DictComp):
        return [(value.value, value.key)]
    if isinstance(value, ast.Call) and value.args:
        return _members(value.args[0])
    return []


def _items(value: ast.expr) -> list[ast.expr]:
    return [m for m, _ in _members(value)]


def _string_key(key: ast.expr) -> bool:
    if isinstance(key, ast.Constant):
        return isinstance(key.value, str)
    if isinstance(key, ast.JoinedStr):
        return True
    return isinstance(key, ast.Name)  # a loop variable over names: unknown, but typical


def _stateless(name: str, call: ast.Call) -> bool:
    if name in STATELESS_LAYERS:
        return True
    return name.endswith("Loss") and not call.args and not call.keywords


def _annotated_kind(annotation: ast.expr) -> str | None:
    """``List[nn.Module]``, ``list[nn.Linear]``, ``Dict[str, nn.Parameter]``."""
    text = ast.unparse(annotation)
    if not re.search(r"(?i)\b(list|tuple|dict|sequence|mapping)\[", text):
        return None
    if re.search(r"\bParameter\]", text):
        return "parameter"
    if re.search(r"\b(nn\.)?Module\]|nn\.[A-Z]\w*\]", text):
        return "module"
    return None


def _registers(call: ast.Call, info: ClassInfo) -> bool:
    """A registering call: ``self.add_module(...)``, ``setattr(self, ...)``, or
    a method of the class that makes one."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr":
        return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"
    if not isinstance(func, ast.Attribute) or not _is_self_attribute_or_self(func.value):
        return False
    if func.attr in _REGISTER_CALLS:
        return True
    method = info.methods.get(func.attr)
    return method is not None and any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in _REGISTER_CALLS
        for n in walk(method)
    )


def _is_self_attribute_or_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
