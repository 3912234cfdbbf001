"""The abstract objects of the points-to model.

An object stands for every run-time value made at one place (its
allocation site): one ``InstObj`` per ``Cls(...)`` call site, one
``ContainerObj`` per list display, one ``ExtCallObj`` per call into a
library. Objects compare by identity; the solver memoises them so that one
site gives one object.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Site:
    """Where an object is made: a module and a position in it."""

    module: str
    line: int
    col: int
    ctx: tuple[Site, ...] = ()  # the calls that led here, for objects made in a copy of a function

    def __str__(self) -> str:
        return f"{self.module}:{self.line}"


class Obj:
    """Base of every abstract object (identity semantics)."""

    __slots__ = ()
    opaque = False  # a library value or constant (capped apart from the project's objects)

    def describe(self) -> str:
        return type(self).__name__


class ModuleObj(Obj):
    __slots__ = ("name", "path", "is_package")

    def __init__(self, name: str, path: str, is_package: bool) -> None:
        self.name = name
        self.path = path
        self.is_package = is_package

    def describe(self) -> str:
        return f"module {self.name}"


class FuncObj(Obj):
    """A function, method or lambda, by its definition."""

    __slots__ = ("qname", "node", "module", "cls", "kind", "is_generator", "copy_of", "depth")

    def __init__(
        self,
        qname: str,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        module: ModuleObj,
        cls: ClassObj | None,
        kind: str,
        is_generator: bool,
    ) -> None:
        self.qname = qname
        self.node = node
        self.module = module
        self.cls = cls
        self.kind = kind  # function, staticmethod, classmethod, property
        self.is_generator = is_generator
        self.copy_of: FuncObj | None = None  # the definition a copy analyses for one call site
        self.depth = 0  # how many calls deep that copy is

    @property
    def origin(self) -> FuncObj:
        """The definition (itself, unless a call site's copy)."""
        return self.copy_of or self

    def describe(self) -> str:
        return f"function {self.qname}"


class ClassObj(Obj):
    __slots__ = ("qname", "node", "module", "defines", "instance_attrs", "fields")

    def __init__(self, qname: str, node: ast.ClassDef, module: ModuleObj) -> None:
        self.qname = qname
        self.node = node
        self.module = module
        self.defines: set[str] = set()  # names bound in the class body
        self.instance_attrs: set[str] = set()  # ``self.x = ...`` in its methods
        self.fields: list[str] | None = None  # a dataclass's fields, in order

    def describe(self) -> str:
        return f"class {self.qname}"


class InstObj(Obj):
    """An instance of a project class made at ``site`` (None: any instance)."""

    __slots__ = ("cls", "site")

    def __init__(self, cls: ClassObj, site: Site | None) -> None:
        self.cls = cls
        self.site = site

    def describe(self) -> str:
        where = f" made at {self.site}" if self.site else ""
        return f"{self.cls.qname.rsplit('.', 1)[-1]} instance{where}"


class BoundObj(Obj):
    __slots__ = ("func", "self_obj")

    def __init__(self, func: FuncObj, self_obj: Obj) -> None:
        self.func = func
        self.self_obj = self_obj

    def describe(self) -> str:
        return f"bound method {self.func.qname}"


class SuperObj(Obj):
    __slots__ = ("cls", "self_obj")

    def __init__(self, cls: ClassObj, self_obj: Obj) -> None:
        self.cls = cls
        self.self_obj = self_obj


class ContainerObj(Obj):
    """A list, tuple, dict or set made at ``site``."""

    __slots__ = ("kind", "site")

    def __init__(self, kind: str, site: Site | None) -> None:
        self.kind = kind
        self.site = site

    def describe(self) -> str:
        where = f" made at {self.site}" if self.site else ""
        return f"{self.kind}{where}"


class MethodObj(Obj):
    """A built-in method of a container (``lst.append``)."""

    __slots__ = ("recv", "name")
    opaque = True

    def __init__(self, recv: Obj, name: str) -> None:
        self.recv = recv
        self.name = name


@dataclass(eq=False)
class PartialObj(Obj):
    """``functools.partial(func, *args, **kwargs)``: argument nodes kept."""

    func: int
    args: list[int] = field(default_factory=list)
    kwargs: dict[str, int] = field(default_factory=dict)
    site: Site | None = None

    __hash__ = object.__hash__

    def describe(self) -> str:
        return f"functools.partial made at {self.site}"


class GenObj(Obj):
    """The generator a generator function returns."""

    __slots__ = ("func",)

    def __init__(self, func: FuncObj) -> None:
        self.func = func


class ExternalObj(Obj):
    """A name from outside the project: ``torch.nn.Module``, ``<builtin>.len``."""

    __slots__ = ("name",)
    opaque = True

    def __init__(self, name: str) -> None:
        self.name = name

    def describe(self) -> str:
        return self.name


class ExtCallObj(Obj):
    """What a call into a library returns, at one call site.

    ``args``/``kwargs`` keep the argument nodes so that questions such as
    "which dataset does this DataLoader get" can be asked later.
    """

    __slots__ = ("callee", "site", "args", "kwargs")
    opaque = True

    def __init__(self, callee: Obj, site: Site, args: list[int], kwargs: dict[str, int]) -> None:
        self.callee = callee
        self.site = site
        self.args = args
        self.kwargs = kwargs

    @property
    def type_name(self) -> str | None:
        callee = self.callee
        return callee.name if isinstance(callee, ExternalObj) else None

    def describe(self) -> str:
        name = self.type_name or "a library call"
        return f"{name}(...) at {self.site}"


class ExtAttrObj(Obj):
    """An attribute of a library object (``tensor.cuda``, ``self.parameters``)."""

    __slots__ = ("base", "attr", "qname")
    opaque = True

    def __init__(self, base: Obj, attr: str, qname: str | None) -> None:
        self.base = base
        self.attr = attr
        self.qname = qname

    def describe(self) -> str:
        return self.qname or f".{self.attr}"


class ConstObj(Obj):
    __slots__ = ("value",)
    opaque = True

    def __init__(self, value: object) -> None:
        self.value = value

    def describe(self) -> str:
        return repr(self.value)


class OriginConst(ConstObj):
    """A constant whose origin a message names: an argparse default
    ("default at train.py:40"), a config file's entry ("cfg.yaml:3")."""

    __slots__ = ("origin",)

    def __init__(self, value: object, origin: str) -> None:
        super().__init__(value)
        self.origin = origin

    def describe(self) -> str:
        return f"{self.value!r} ({self.origin})"
