"""The transport matrix: every producer crossed with every transport.

A *producer* is a value a rule cares about (a project class instance, a CUDA
tensor, a DataLoader with workers, a worker count); a *transport* is a way
that value travels in real code before the rule looks at it (a helper's
return, a field set in ``__init__`` and read in another method, an import, a
factory, ...). Each case is a small generated project with two ``reveal``
calls: the first must hold the producer (recall), the second is its near-miss
twin (the other branch's object, the other call's result, an overwritten
local) and must not (a false positive otherwise).

Used by ``test_transport_matrix.py`` and ``bench/transport_matrix.py``.
"""

from __future__ import annotations

import ast
import builtins
import runpy
import sys
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.interproc.helpers import analyse_project, reveal_objects, write_project
from torchtrap.core import Analysis
from torchtrap.core.objects import ConstObj, ExtAttrObj, ExtCallObj, InstObj, Obj

MARK = "_torchtrap_cuda"  # set on the tensors a patched ``Tensor.cuda`` returns (no GPU here)
LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
SOFTMAX = frozenset({"torch.softmax", "torch.nn.functional.softmax"})


@dataclass(frozen=True)
class Producer:
    name: str
    header: str  # what a file that makes the value needs (imports, classes)
    make: str  # an expression that makes it
    decoy: str  # an expression of the near-miss: same shape, not the producer
    ctor: str  # a callable whose call makes it (for factories)
    decoy_ctor: str
    match: Callable[[Analysis, Obj], bool]  # the core's object is the producer
    is_value: Callable[[object], bool]  # a run-time value is the producer


def _is_thing(analysis: Analysis, obj: Obj) -> bool:
    return isinstance(obj, InstObj) and obj.cls.qname.rsplit(".", 1)[-1] == "Thing"


def _is_cuda_tensor(analysis: Analysis, obj: Obj) -> bool:
    return (
        isinstance(obj, ExtCallObj)
        and isinstance(obj.callee, ExtAttrObj)
        and obj.callee.attr == "cuda"
    )


def _is_loader_with_workers(analysis: Analysis, obj: Obj) -> bool:
    if not isinstance(obj, ExtCallObj) or obj.type_name not in LOADERS:
        return False
    node = obj.kwargs.get("num_workers")
    if node is None:
        return False
    return any(isinstance(o, ConstObj) and o.value == 4 for o in analysis.solver.pts[node])


def _is_four(analysis: Analysis, obj: Obj) -> bool:
    return isinstance(obj, ConstObj) and type(obj.value) is int and obj.value == 4


def _is_generator(analysis: Analysis, obj: Obj) -> bool:
    return isinstance(obj, ExtCallObj) and obj.type_name == "torch.Generator"


def _is_softmax(analysis: Analysis, obj: Obj) -> bool:
    return isinstance(obj, ExtCallObj) and obj.type_name in SOFTMAX


# Run-time twins of the matchers, for checking that each generated case is
# what it claims when it runs (``execute``).
def _thing_value(value: object) -> bool:
    return type(value).__name__ == "Thing"


def _cuda_value(value: object) -> bool:
    return bool(getattr(value, MARK, False))


def _loader_value(value: object) -> bool:
    return type(value).__name__ == "DataLoader" and getattr(value, "num_workers", None) == 4


def _four_value(value: object) -> bool:
    return type(value) is int and value == 4


def _generator_value(value: object) -> bool:
    import torch

    return isinstance(value, torch.Generator)


def _softmax_value(value: object) -> bool:
    import torch

    # a softmax of 3 values: positive, summing to 1 (randn(3) never does)
    return (
        isinstance(value, torch.Tensor)
        and bool((value > 0).all())
        and abs(float(value.sum()) - 1.0) < 1e-5
    )


_BUILDERS = """
def build_it():
    return {make}


def build_decoy():
    return {decoy}
"""

PRODUCERS: list[Producer] = [
    Producer(
        "Thing()",
        "class Thing:\n    pass\n\n\nclass Other:\n    pass\n",
        "Thing()",
        "Other()",
        "Thing",
        "Other",
        _is_thing,
        _thing_value,
    ),
    Producer(
        "cuda tensor",
        "import torch\n" + _BUILDERS.format(make="torch.randn(3).cuda()", decoy="torch.zeros(3)"),
        "torch.randn(3).cuda()",
        "torch.zeros(3)",
        "build_it",
        "build_decoy",
        _is_cuda_tensor,
        _cuda_value,
    ),
    Producer(
        "DataLoader(workers=4)",
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
        "ds = TensorDataset(torch.zeros(8, 3))\n"
        + _BUILDERS.format(
            make="DataLoader(ds, num_workers=4)", decoy="DataLoader(ds, num_workers=0)"
        ),
        "DataLoader(ds, num_workers=4)",
        "DataLoader(ds, num_workers=0)",
        "build_it",
        "build_decoy",
        _is_loader_with_workers,
        _loader_value,
    ),
    Producer(
        "worker count 4",
        _BUILDERS.format(make="4", decoy="0"),
        "4",
        "0",
        "build_it",
        "build_decoy",
        _is_four,
        _four_value,
    ),
    Producer(
        "torch.Generator",
        "import torch\n" + _BUILDERS.format(make="torch.Generator()", decoy='torch.device("cpu")'),
        "torch.Generator()",
        'torch.device("cpu")',
        "build_it",
        "build_decoy",
        _is_generator,
        _generator_value,
    ),
    Producer(
        "softmax output",
        "import torch\n"
        + _BUILDERS.format(make="torch.softmax(torch.randn(3), 0)", decoy="torch.randn(3)"),
        "torch.softmax(torch.randn(3), 0)",
        "torch.randn(3)",
        "build_it",
        "build_decoy",
        _is_softmax,
        _softmax_value,
    ),
]


@dataclass(frozen=True)
class Transport:
    name: str  # unique: "group (variant)"
    group: str  # what the per-transport recall is reported by
    files: dict[str, str]  # templates: <HEADER> line, <MAKE>, <DECOY>, <CTOR>, <DCTOR>


def _t(group: str, variant: str, files: dict[str, str] | str) -> Transport:
    if isinstance(files, str):
        files = {"main.py": files}
    name = f"{group} ({variant})" if variant else group
    return Transport(name, group, files)


TRANSPORTS: list[Transport] = [
    # -- local -------------------------------------------------------------------------
    _t(
        "local",
        "function",
        """
        <HEADER>

        def main():
            x = <MAKE>
            reveal(x)
            y = <MAKE>
            y = <DECOY>
            reveal(y)

        main()
        """,
    ),
    _t(
        "local",
        "module level",
        """
        <HEADER>
        x = <MAKE>
        reveal(x)
        y = <MAKE>
        y = <DECOY>
        reveal(y)
        """,
    ),
    _t(
        "local",
        "branch",
        """
        <HEADER>

        def main(flag):
            if flag:
                x = <MAKE>
                y = <DECOY>
            else:
                x = <DECOY>
                y = <DECOY>
            reveal(x)
            reveal(y)

        main(True)
        main(False)
        """,
    ),
    # -- helper return -----------------------------------------------------------------
    _t(
        "helper return",
        "",
        """
        <HEADER>

        def helper():
            return <MAKE>


        def spare():
            return <DECOY>


        def main():
            reveal(helper())
            reveal(spare())

        main()
        """,
    ),
    _t(
        "helper return",
        "two levels",
        """
        <HEADER>

        def helper():
            made = <MAKE>
            return made


        def outer():
            got = helper()
            return got


        def spare():
            return <DECOY>


        def main():
            reveal(outer())
            reveal(spare())

        main()
        """,
    ),
    _t(
        "helper return",
        "large helper",
        """
        <HEADER>

        def helper(n):
"""
        + "".join(f"            n{i} = n + {i}\n" for i in range(40))
        + """
            return <MAKE>


        def spare():
            return <DECOY>


        def main():
            reveal(helper(1))
            reveal(spare())

        main()
        """,
    ),
    _t(
        "helper return",
        "decorated with torch.no_grad()",
        """
        import torch
        <HEADER>

        @torch.no_grad()
        def helper():
            return <MAKE>


        @torch.no_grad()
        def spare():
            return <DECOY>


        reveal(helper())
        reveal(spare())
        """,
    ),
    _t(
        "helper return",
        "closure",
        """
        <HEADER>

        def outer():
            made = <MAKE>

            def inner():
                return made

            return inner


        def other():
            made = <DECOY>

            def inner():
                return made

            return inner


        reveal(outer()())
        reveal(other()())
        """,
    ),
    _t(
        "helper return",
        "global set by a function",
        """
        <HEADER>
        STATE = None
        SPARE = None


        def setup():
            global STATE, SPARE
            STATE = <MAKE>
            SPARE = <DECOY>


        def use():
            reveal(STATE)
            reveal(SPARE)


        setup()
        use()
        """,
    ),
    _t(
        "helper return",
        "wrapped by a project decorator",
        """
        import functools
        <HEADER>

        def logged(fn):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                return fn(*args, **kwargs)

            return inner


        @logged
        def helper():
            return <MAKE>


        @logged
        def spare():
            return <DECOY>


        reveal(helper())
        reveal(spare())
        """,
    ),
    _t(
        "helper return",
        "async def, awaited",
        """
        import asyncio
        <HEADER>

        async def helper():
            return <MAKE>


        async def spare():
            return <DECOY>


        async def main():
            reveal(await helper())
            reveal(await spare())


        asyncio.run(main())
        """,
    ),
    # -- method return -----------------------------------------------------------------
    _t(
        "method return",
        "",
        """
        <HEADER>

        class Builder:
            def build(self):
                return <MAKE>

            def spare(self):
                return <DECOY>


        def main():
            b = Builder()
            reveal(b.build())
            reveal(b.spare())

        main()
        """,
    ),
    _t(
        "method return",
        "another class's method",
        """
        <HEADER>

        class Builder:
            def build(self):
                return <MAKE>

            def spare(self):
                return <DECOY>


        class Trainer:
            def __init__(self, builder):
                self.builder = builder

            def run(self):
                reveal(self.builder.build())
                reveal(self.builder.spare())


        Trainer(Builder()).run()
        """,
    ),
    _t(
        "method return",
        "classmethod and staticmethod",
        """
        <HEADER>

        class Maker:
            @classmethod
            def create(cls):
                return <MAKE>

            @staticmethod
            def spare():
                return <DECOY>


        reveal(Maker.create())
        reveal(Maker.spare())
        """,
    ),
    _t(
        "method return",
        "property",
        """
        <HEADER>

        class Holder:
            @property
            def value(self):
                return <MAKE>

            @property
            def spare(self):
                return <DECOY>


        h = Holder()
        reveal(h.value)
        reveal(h.spare)
        """,
    ),
    _t(
        "method return",
        "__enter__ of a with statement",
        """
        <HEADER>

        class Opened:
            def __enter__(self):
                return <MAKE>

            def __exit__(self, *exc):
                return False


        class Closed:
            def __enter__(self):
                return <DECOY>

            def __exit__(self, *exc):
                return False


        with Opened() as got:
            reveal(got)
        with Closed() as other:
            reveal(other)
        """,
    ),
    _t(
        "method return",
        "bound method kept by another object",
        """
        <HEADER>

        class Detector:
            def __init__(self):
                self.model = <MAKE>

            def pre_process(self):
                return self.model


        class Plain:
            def __init__(self):
                self.model = <DECOY>

            def pre_process(self):
                return self.model


        class Prefetch:
            def __init__(self, fn):
                self.fn = fn

            def next(self):
                return self.fn()


        a = Prefetch(Detector().pre_process)
        b = Prefetch(Plain().pre_process)
        reveal(a.next())
        reveal(b.next())
        """,
    ),
    # -- attribute across methods ------------------------------------------------------
    _t(
        "attribute",
        "set in __init__",
        """
        <HEADER>

        class Holder:
            def __init__(self):
                self.x = <MAKE>
                self.y = <DECOY>

            def use(self):
                reveal(self.x)
                reveal(self.y)


        Holder().use()
        """,
    ),
    _t(
        "attribute",
        "set in another method",
        """
        <HEADER>

        class Holder:
            def setup(self):
                self.x = <MAKE>
                self.y = <DECOY>

            def use(self):
                reveal(self.x)
                reveal(self.y)


        h = Holder()
        h.setup()
        h.use()
        """,
    ),
    _t(
        "attribute",
        "set from outside",
        """
        <HEADER>

        class Holder:
            pass


        a = Holder()
        a.x = <MAKE>
        b = Holder()
        b.x = <DECOY>
        reveal(a.x)
        reveal(b.x)
        """,
    ),
    _t(
        "attribute",
        "setattr with a literal name",
        """
        <HEADER>

        class Holder:
            def __init__(self):
                setattr(self, "x", <MAKE>)
                setattr(self, "y", <DECOY>)


        h = Holder()
        reveal(h.x)
        reveal(h.y)
        """,
    ),
    _t(
        "attribute",
        "getattr with a literal name",
        """
        <HEADER>

        class Holder:
            def __init__(self):
                self.x = <MAKE>
                self.y = <DECOY>


        h = Holder()
        reveal(getattr(h, "x"))
        reveal(getattr(h, "y", None))
        """,
    ),
    _t(
        "attribute",
        "class attribute",
        """
        <HEADER>

        class Config:
            VALUE = <MAKE>
            SPARE = <DECOY>


        reveal(Config.VALUE)
        reveal(Config().SPARE)
        """,
    ),
    _t(
        "attribute",
        "dataclass default",
        """
        from dataclasses import dataclass
        <HEADER>

        @dataclass
        class Config:
            value: object = <MAKE>
            spare: object = <DECOY>


        cfg = Config()
        reveal(cfg.value)
        reveal(cfg.spare)
        """,
    ),
    _t(
        "attribute",
        "dataclass constructor argument",
        """
        from dataclasses import dataclass
        <HEADER>

        @dataclass
        class Config:
            value: object = None


        a = Config(value=<MAKE>)
        b = Config(value=<DECOY>)
        reveal(a.value)
        reveal(b.value)
        """,
    ),
    _t(
        "attribute",
        "types.SimpleNamespace config",
        """
        from types import SimpleNamespace
        <HEADER>
        cfg = SimpleNamespace(value=<MAKE>, spare=<DECOY>)
        reveal(cfg.value)
        reveal(cfg.spare)
        """,
    ),
    # -- parameter from the call site --------------------------------------------------
    _t(
        "parameter",
        "function",
        """
        <HEADER>

        def consume(v):
            reveal(v)


        def other(v):
            reveal(v)


        consume(<MAKE>)
        other(<DECOY>)
        """,
    ),
    _t(
        "parameter",
        "method",
        """
        <HEADER>

        class Sink:
            def take(self, v):
                reveal(v)

            def skip(self, v):
                reveal(v)


        def main():
            s = Sink()
            s.take(<MAKE>)
            s.skip(<DECOY>)

        main()
        """,
    ),
    _t(
        "parameter",
        "keyword",
        """
        <HEADER>

        def consume(a=None, v=None):
            reveal(v)
            reveal(a)


        consume(v=<MAKE>, a=<DECOY>)
        """,
    ),
    _t(
        "parameter",
        "large function",
        """
        <HEADER>

        def consume(v, w):
"""
        + "".join(f"            n{i} = {i}\n" for i in range(40))
        + """
            reveal(v)
            reveal(w)


        consume(<MAKE>, <DECOY>)
        """,
    ),
    _t(
        "parameter",
        "forwarded through *args",
        """
        <HEADER>

        def build(v=None):
            return v


        def wrapper(*args, **kwargs):
            return build(*args, **kwargs)


        reveal(wrapper(<MAKE>))
        reveal(wrapper(<DECOY>))
        """,
    ),
    _t(
        "parameter",
        "forwarded through **kwargs",
        """
        <HEADER>

        def build(v=None):
            return v


        def wrapper(*args, **kwargs):
            return build(*args, **kwargs)


        reveal(wrapper(v=<MAKE>))
        reveal(wrapper(v=<DECOY>))
        """,
    ),
    _t(
        "parameter",
        "from a ** dict display",
        """
        <HEADER>

        def build(v=None):
            return v


        reveal(build(**{"v": <MAKE>}))
        reveal(build(**{"v": <DECOY>}))
        """,
    ),
    # -- import from another file ------------------------------------------------------
    _t(
        "import",
        "from module import name",
        {
            "producers.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "main.py": "from producers import thing, spare\n\nreveal(thing)\nreveal(spare)\n",
        },
    ),
    _t(
        "import",
        "import pkg.mod as m",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "main.py": "import pkg.mod as m\n\nreveal(m.thing)\nreveal(m.spare)\n",
        },
    ),
    _t(
        "import",
        "import pkg.mod",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "main.py": "import pkg.mod\n\n\ndef main():\n"
            "    reveal(pkg.mod.thing)\n    reveal(pkg.mod.spare)\n\n\nmain()\n",
        },
    ),
    _t(
        "import",
        "relative from-import",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "pkg/user.py": "from .mod import thing, spare\n\nreveal(thing)\nreveal(spare)\n",
        },
    ),
    _t(
        "import",
        "from . import mod",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "pkg/user.py": "from . import mod\n\nreveal(mod.thing)\nreveal(mod.spare)\n",
        },
    ),
    _t(
        "import",
        "__init__ re-export",
        {
            "pkg/__init__.py": "from .mod import thing, spare\n",
            "pkg/mod.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "main.py": "from pkg import thing, spare\n\nreveal(thing)\nreveal(spare)\n",
        },
    ),
    _t(
        "import",
        "__init__ star re-export",
        {
            "pkg/__init__.py": "from .mod import *\n",
            "pkg/mod.py": "<HEADER>\nthing = <MAKE>\nspare = <DECOY>\n",
            "main.py": "import pkg\n\nreveal(pkg.thing)\nreveal(pkg.spare)\n",
        },
    ),
    _t(
        "import",
        "helper function from another file",
        {
            "helpers.py": "<HEADER>\n\ndef helper():\n    return <MAKE>\n\n\n"
            "def spare():\n    return <DECOY>\n",
            "main.py": "from helpers import helper, spare\n\nreveal(helper())\nreveal(spare())\n",
        },
    ),
    _t(
        "import",
        "module global set from another file",
        {
            "config.py": "VALUE = None\nSPARE = None\n",
            "setup.py": "<HEADER>\nimport config\n\nconfig.VALUE = <MAKE>\n"
            "config.SPARE = <DECOY>\n",
            "train.py": "import setup  # noqa: F401\nimport config\n\n"
            "reveal(config.VALUE)\nreveal(config.SPARE)\n",
        },
    ),
    # -- factory -----------------------------------------------------------------------
    _t(
        "factory",
        "dict of constructors, constant key",
        """
        <HEADER>
        REGISTRY = {"a": <CTOR>, "b": <DCTOR>}


        def main():
            reveal(REGISTRY["a"]())
            reveal(REGISTRY["b"]())

        main()
        """,
    ),
    _t(
        "factory",
        "build(name) indexes the dict",
        """
        <HEADER>
        REGISTRY = {"a": <CTOR>, "b": <DCTOR>}


        def build(name):
            return REGISTRY[name]()


        def main():
            reveal(build("a"))
            reveal(build("b"))

        main()
        """,
    ),
    _t(
        "factory",
        "get(name) in another file returns the constructor",
        {
            "models.py": '<HEADER>\nREGISTRY = {"a": <CTOR>, "b": <DCTOR>}\n\n\n'
            "def get(name):\n    return REGISTRY[name]\n",
            "main.py": 'from models import get\n\nreveal(get("a")())\nreveal(get("b")())\n',
        },
    ),
    _t(
        "factory",
        "registry filled by assignment",
        """
        <HEADER>
        REGISTRY = {}
        REGISTRY["a"] = <CTOR>
        OTHERS = {}
        OTHERS["b"] = <DCTOR>


        def main():
            reveal(REGISTRY["a"]())
            reveal(OTHERS["b"]())

        main()
        """,
    ),
    _t(
        "factory",
        "registry filled by a decorator",
        """
        <HEADER>
        REGISTRY = {}


        def register(name):
            def deco(fn):
                REGISTRY[name] = fn
                return fn

            return deco


        @register("a")
        def make_a():
            return <CTOR>()


        @register("b")
        def make_b():
            return <DCTOR>()


        reveal(REGISTRY["a"]())
        reveal(REGISTRY["b"]())
        """,
    ),
    # -- owned object ------------------------------------------------------------------
    _t(
        "owned object",
        "read in the owner's method",
        """
        <HEADER>

        class Jitter:
            def __init__(self):
                self.value = <MAKE>


        class Plain:
            def __init__(self):
                self.value = <DECOY>


        class Dataset:
            def __init__(self):
                self.aug = Jitter()
                self.plain = Plain()

            def __getitem__(self, i):
                reveal(self.aug.value)
                reveal(self.plain.value)


        ds = Dataset()
        ds[0]
        """,
    ),
    _t(
        "owned object",
        "read from outside",
        """
        <HEADER>

        class Jitter:
            def __init__(self):
                self.value = <MAKE>


        class Plain:
            def __init__(self):
                self.value = <DECOY>


        class Dataset:
            def __init__(self):
                self.aug = Jitter()
                self.plain = Plain()


        ds = Dataset()
        reveal(ds.aug.value)
        reveal(ds.plain.value)
        """,
    ),
    _t(
        "owned object",
        "passed to the owner",
        """
        <HEADER>

        class Jitter:
            def __init__(self):
                self.value = <MAKE>


        class Plain:
            def __init__(self):
                self.value = <DECOY>


        class Dataset:
            def __init__(self, aug):
                self.aug = aug


        a = Dataset(Jitter())
        b = Dataset(Plain())
        reveal(a.aug.value)
        reveal(b.aug.value)
        """,
    ),
    _t(
        "owned object",
        "in a list the owner keeps",
        """
        <HEADER>

        class Jitter:
            def __init__(self):
                self.value = <MAKE>


        class Plain:
            def __init__(self):
                self.value = <DECOY>


        class Compose:
            def __init__(self, steps):
                self.steps = steps


        a = Compose([Jitter()])
        b = Compose([Plain()])
        for step in a.steps:
            reveal(step.value)
        for step in b.steps:
            reveal(step.value)
        """,
    ),
    # -- base class in another file ----------------------------------------------------
    _t(
        "base class",
        "super().__init__",
        {
            "base.py": "<HEADER>\n\nclass Base:\n    def __init__(self):\n"
            "        self.value = <MAKE>\n\n\nclass OtherBase:\n    def __init__(self):\n"
            "        self.value = <DECOY>\n",
            "main.py": textwrap.dedent(
                """
                from base import Base, OtherBase


                class Child(Base):
                    def __init__(self):
                        super().__init__()

                    def use(self):
                        reveal(self.value)


                class Sibling(OtherBase):
                    def __init__(self):
                        super().__init__()

                    def use(self):
                        reveal(self.value)


                Child().use()
                Sibling().use()
                """
            ),
        },
    ),
    _t(
        "base class",
        "inherited __init__",
        {
            "base.py": "<HEADER>\n\nclass Base:\n    def __init__(self):\n"
            "        self.value = <MAKE>\n\n\nclass OtherBase:\n    def __init__(self):\n"
            "        self.value = <DECOY>\n",
            "main.py": textwrap.dedent(
                """
                import base


                class Child(base.Base):
                    pass


                class Sibling(base.OtherBase):
                    pass


                reveal(Child().value)
                reveal(Sibling().value)
                """
            ),
        },
    ),
    _t(
        "base class",
        "method of the base",
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "<HEADER>\n\nclass Base:\n    def make(self):\n"
            "        return <MAKE>\n\n    def spare(self):\n        return <DECOY>\n",
            "pkg/child.py": textwrap.dedent(
                """
                from .base import Base


                class Child(Base):
                    def use(self):
                        reveal(self.make())
                        reveal(self.spare())


                Child().use()
                """
            ),
        },
    ),
    _t(
        "base class",
        "template method overridden by the child",
        {
            "base.py": "class Base:\n    def run(self):\n        return self.build()\n",
            "main.py": textwrap.dedent(
                """
                from base import Base
                <HEADER>

                class A(Base):
                    def build(self):
                        return <MAKE>


                class B(Base):
                    def build(self):
                        return <DECOY>


                reveal(A().run())
                reveal(B().run())
                """
            ),
        },
    ),
    # -- functools.partial -------------------------------------------------------------
    _t(
        "partial",
        "of a producing function",
        """
        import functools
        <HEADER>

        def make():
            return <MAKE>


        def spare():
            return <DECOY>


        p = functools.partial(make)
        q = functools.partial(spare)
        reveal(p())
        reveal(q())
        """,
    ),
    _t(
        "partial",
        "bound positional argument",
        """
        import functools
        <HEADER>

        def pick(a, b=None):
            return a


        p = functools.partial(pick, <MAKE>)
        q = functools.partial(pick, <DECOY>)
        reveal(p())
        reveal(q())
        """,
    ),
    _t(
        "partial",
        "bound keyword argument",
        """
        from functools import partial
        <HEADER>

        def pick(a=None, b=None):
            return a


        p = partial(pick, a=<MAKE>)
        q = partial(pick, a=<DECOY>)
        reveal(p())
        reveal(q())
        """,
    ),
    # -- lambda ------------------------------------------------------------------------
    _t(
        "lambda",
        "returns the value",
        """
        <HEADER>
        f = lambda: <MAKE>
        g = lambda: <DECOY>
        reveal(f())
        reveal(g())
        """,
    ),
    _t(
        "lambda",
        "identity called twice",
        """
        <HEADER>
        ident = lambda v: v
        reveal(ident(<MAKE>))
        reveal(ident(<DECOY>))
        """,
    ),
    _t(
        "lambda",
        "in a dict",
        """
        <HEADER>
        OPS = {"a": lambda: <MAKE>, "b": lambda: <DECOY>}
        reveal(OPS["a"]())
        reveal(OPS["b"]())
        """,
    ),
    # -- containers --------------------------------------------------------------------
    _t(
        "container",
        "list index",
        """
        <HEADER>
        items = [<MAKE>, <DECOY>]
        reveal(items[0])
        reveal(items[1])
        """,
    ),
    _t(
        "container",
        "dict key",
        """
        <HEADER>
        table = {"a": <MAKE>, "b": <DECOY>}
        reveal(table["a"])
        reveal(table["b"])
        """,
    ),
    _t(
        "container",
        "dict item assignment",
        """
        <HEADER>

        def main():
            table = {}
            table["a"] = <MAKE>
            table["b"] = <DECOY>
            reveal(table["a"])
            reveal(table["b"])

        main()
        """,
    ),
    _t(
        "container",
        "tuple unpack of a return",
        """
        <HEADER>

        def pair():
            return <MAKE>, <DECOY>


        def main():
            a, b = pair()
            reveal(a)
            reveal(b)

        main()
        """,
    ),
    _t(
        "container",
        "append then iterate",
        """
        <HEADER>

        def main():
            xs = []
            xs.append(<MAKE>)
            ys = []
            ys.append(<DECOY>)
            for v in xs:
                reveal(v)
            for w in ys:
                reveal(w)

        main()
        """,
    ),
    _t(
        "container",
        "comprehension",
        """
        <HEADER>

        def main():
            src = [<MAKE>]
            other = [<DECOY>]
            out = [v for v in src]
            rest = [v for v in other]
            reveal(out[0])
            reveal(rest[0])

        main()
        """,
    ),
    _t(
        "container",
        "nested in a config dict",
        """
        <HEADER>
        CFG = {"train": {"items": [<MAKE>]}, "eval": {"items": [<DECOY>]}}
        reveal(CFG["train"]["items"][0])
        reveal(CFG["eval"]["items"][0])
        """,
    ),
    _t(
        "container",
        "generator yield",
        """
        <HEADER>

        def items():
            yield <MAKE>


        def others():
            yield <DECOY>


        for v in items():
            reveal(v)
        for w in others():
            reveal(w)
        """,
    ),
    _t(
        "container",
        "dict items loop",
        """
        <HEADER>
        GOOD = {"a": <MAKE>}
        BAD = {"b": <DECOY>}
        for key, v in GOOD.items():
            reveal(v)
        for key, w in BAD.items():
            reveal(w)
        """,
    ),
    _t(
        "container",
        "enumerate",
        """
        <HEADER>
        GOOD = [<MAKE>]
        BAD = [<DECOY>]
        for i, v in enumerate(GOOD):
            reveal(v)
        for i, w in enumerate(BAD):
            reveal(w)
        """,
    ),
    _t(
        "container",
        "dict.get",
        """
        <HEADER>
        TABLE = {"a": <MAKE>, "b": <DECOY>}
        reveal(TABLE.get("a"))
        reveal(TABLE.get("b"))
        """,
    ),
    _t(
        "container",
        "dict(...) keywords",
        """
        <HEADER>
        cfg = dict(value=<MAKE>, spare=<DECOY>)
        reveal(cfg["value"])
        reveal(cfg["spare"])
        """,
    ),
    # -- forward of a module -----------------------------------------------------------
    _t(
        "forward",
        "model(x)",
        """
        import torch.nn as nn
        <HEADER>

        class NetA(nn.Module):
            def forward(self, x):
                return <MAKE>


        class NetB(nn.Module):
            def forward(self, x):
                return <DECOY>


        def main():
            a = NetA()
            b = NetB()
            reveal(a(1))
            reveal(b(1))

        main()
        """,
    ),
    _t(
        "forward",
        "submodule called in the parent's forward",
        """
        import torch.nn as nn
        <HEADER>

        class Head(nn.Module):
            def forward(self, x):
                return <MAKE>


        class Tail(nn.Module):
            def forward(self, x):
                return <DECOY>


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()
                self.tail = Tail()

            def forward(self, x):
                return self.head(x), self.tail(x)


        out, rest = Net()(1)
        reveal(out)
        reveal(rest)
        """,
    ),
    _t(
        "forward",
        "model from a factory",
        """
        import torch.nn as nn
        <HEADER>

        class NetA(nn.Module):
            def forward(self, x):
                return <MAKE>


        class NetB(nn.Module):
            def forward(self, x):
                return <DECOY>


        MODELS = {"a": NetA, "b": NetB}


        def get_model(name):
            return MODELS[name]()


        reveal(get_model("a")(1))
        reveal(get_model("b")(1))
        """,
    ),
    _t(
        "forward",
        "inside nn.Sequential",
        """
        import torch.nn as nn
        <HEADER>

        class NetA(nn.Module):
            def forward(self, x):
                return <MAKE>


        class NetB(nn.Module):
            def forward(self, x):
                return <DECOY>


        reveal(nn.Sequential(NetA())(1))
        reveal(nn.Sequential(NetB())(1))
        """,
    ),
    # -- argparse default --------------------------------------------------------------
    _t(
        "argparse default",
        "",
        """
        import argparse
        <HEADER>

        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--workers", default=<MAKE>)
            parser.add_argument("--other", default=<DECOY>)
            args = parser.parse_args()
            reveal(args.workers)
            reveal(args.other)

        main()
        """,
    ),
    # -- context sensitivity -----------------------------------------------------------
    _t(
        "context",
        "one factory called twice",
        """
        <HEADER>

        def make(v):
            return v


        a = make(<MAKE>)
        b = make(<DECOY>)
        reveal(a)
        reveal(b)
        """,
    ),
    _t(
        "context",
        "constructor argument kept in a field",
        """
        <HEADER>

        class Box:
            def __init__(self, v):
                self.v = v


        a = Box(<MAKE>)
        b = Box(<DECOY>)
        reveal(a.v)
        reveal(b.v)
        """,
    ),
    _t(
        "context",
        "two calls deep",
        """
        <HEADER>

        def inner(v):
            return v


        def outer(v):
            return inner(v)


        a = outer(<MAKE>)
        b = outer(<DECOY>)
        reveal(a)
        reveal(b)
        """,
    ),
    _t(
        "context",
        "factory returns a new list",
        """
        <HEADER>

        def pack(v):
            return [v]


        a = pack(<MAKE>)
        b = pack(<DECOY>)
        reveal(a[0])
        reveal(b[0])
        """,
    ),
]


@dataclass(frozen=True)
class Case:
    transport: Transport
    producer: Producer

    @property
    def id(self) -> str:
        return f"{self.transport.name} x {self.producer.name}"

    def files(self) -> dict[str, str]:
        """The project's sources with the producer filled in."""
        out: dict[str, str] = {}
        p = self.producer
        for rel, template in self.transport.files.items():
            text = textwrap.dedent(template).lstrip("\n")
            text = text.replace("<HEADER>\n", p.header + "\n")
            for mark, value in (
                ("<MAKE>", p.make),
                ("<DECOY>", p.decoy),
                ("<CTOR>", p.ctor),
                ("<DCTOR>", p.decoy_ctor),
            ):
                text = text.replace(mark, value)
            out[rel] = text
        return out


@dataclass(frozen=True)
class Outcome:
    found: bool  # the first reveal holds the producer
    false_positive: bool  # the near-miss reveal holds it
    positive: frozenset[Obj] | None
    negative: frozenset[Obj] | None


def cases() -> list[Case]:
    return [Case(t, p) for t in TRANSPORTS for p in PRODUCERS]


def run_case(case: Case, folder: Path) -> Outcome:
    """Write the case under ``folder`` (empty), analyse it, and judge both reveals."""
    analysis = analyse_project(folder, case.files())
    revealed = reveal_objects(analysis)
    assert len(revealed) == 2, f"{case.id}: expected 2 reveal calls, found {len(revealed)}"
    positive, negative = revealed

    def holds(objs: frozenset[Obj] | None) -> bool:
        return objs is not None and any(case.producer.match(analysis, o) for o in objs)

    return Outcome(holds(positive), holds(negative), positive, negative)


def reveal_positions(files: dict[str, str]) -> list[tuple[str, int]]:
    """(relative path, line) of every ``reveal`` call, in the order
    ``helpers.reveal`` reports them."""
    found: list[tuple[str, int, int]] = []
    for rel, text in files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "reveal":
                found.append((rel, node.lineno, node.col_offset))
    found.sort()
    return [(rel, line) for rel, line, _ in found]


def _module_of(rel: str) -> str:
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def execute(case: Case, folder: Path) -> list[list[object]]:
    """Run the case's project for real (in this process) and return what
    each ``reveal`` call saw, in the static order. ``Tensor.cuda`` is
    patched to mark a CPU copy, so the CUDA producer runs without a GPU."""
    files = case.files()
    write_project(folder, files)
    positions = reveal_positions(files)
    index = {(str(folder / rel), line): i for i, (rel, line) in enumerate(positions)}
    seen: list[list[object]] = [[] for _ in positions]

    def record(value: object) -> object:
        caller = sys._getframe(1)
        seen[index[(caller.f_code.co_filename, caller.f_lineno)]].append(value)
        return value

    import torch  # imported once, before the snapshot of sys.modules

    def fake_cuda(self: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        copy = self.clone()
        setattr(copy, MARK, True)
        return copy

    # The project's module names (main, config, base...) may be taken in this
    # process: set those aside so that the project's own files are imported.
    tops = {_module_of(rel).split(".")[0] for rel in files}
    shadowed = {n: sys.modules.pop(n) for n in list(sys.modules) if n.split(".")[0] in tops}
    before = set(sys.modules)
    saved = (sys.path[:], sys.argv[:], torch.Tensor.cuda)
    builtins.reveal = record  # type: ignore[attr-defined]
    sys.path.insert(0, str(folder))
    sys.argv = ["prog"]
    torch.Tensor.cuda = fake_cuda  # type: ignore[method-assign,assignment]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DataLoader: "4 worker processes, 2 CPUs"
            for module in sorted({_module_of(rel) for rel, _ in positions}):
                runpy.run_module(module, run_name="__main__")
    finally:
        sys.path[:], sys.argv[:] = saved[0], saved[1]
        torch.Tensor.cuda = saved[2]  # type: ignore[method-assign]
        del builtins.reveal  # type: ignore[attr-defined]
        for name in set(sys.modules) - before:
            del sys.modules[name]
        sys.modules.update(shadowed)
    return seen
