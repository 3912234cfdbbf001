"""Random generators: the one table of what builds one, and how code uses one.

``np.random.default_rng(0)``, ``np.random.RandomState(0)``,
``np.random.Generator(bitgen)``, ``random.Random(0)``, ``torch.Generator()``
(also seeded in the same expression: ``torch.Generator().manual_seed(0)``).
The value layer (:mod:`torchtrap.values.evaluate`) gives such a call a
``Kind.RNG`` value; rules ask the layer, not this table.
"""

from __future__ import annotations

import ast

from torchtrap.facts.imports import ImportTable
from torchtrap.facts.index import parent

# qualname -> the generator family (what a rule names in its message).
CONSTRUCTORS: dict[str, str] = {
    "numpy.random.default_rng": "numpy.random.default_rng",
    "numpy.random.Generator": "numpy.random.default_rng",
    "numpy.random.RandomState": "numpy.random.RandomState",
    "random.Random": "random.Random",
    "torch.Generator": "torch.Generator",
}

TORCH_GENERATOR = "torch.Generator"

# A method of a torch.Generator that returns the generator itself.
SELF_RETURNING = frozenset({"manual_seed"})


def generator_family(qualname: str | None) -> str | None:
    """The family a call of ``qualname`` builds a generator of; None: not a constructor."""
    return CONSTRUCTORS.get(qualname or "")


# Methods that re-seed a generator in place (a fresh state: not a draw).
RESEED_METHODS = frozenset({"seed", "manual_seed", "set_state", "setstate", "__setstate__"})
# numpy.random names that do not draw from the global generator.
NOT_GLOBAL_DRAWS = frozenset(
    {
        "default_rng",
        "RandomState",
        "Generator",
        "SeedSequence",
        "BitGenerator",
        "MT19937",
        "PCG64",
        "PCG64DXSM",
        "Philox",
        "SFC64",
        "seed",
        "get_state",
        "set_state",
        "get_bit_generator",
        "set_bit_generator",
    }
)
# Methods and builtins that look at a generator without drawing from it.
INSPECT_METHODS = frozenset({"get_state", "getstate", "initial_seed", "__getstate__", "__repr__"})
INSPECT_BUILTINS = frozenset({"isinstance", "print", "id", "type", "repr", "str", "hasattr"})


def generator_use(node: ast.Attribute) -> str | None:
    """How code uses ``self.rng`` (``node``): "draw", "reseed", or None for
    looking at it (``self.rng is None``, ``print(self.rng)``)."""
    top: ast.expr = node
    up = parent(top)
    while isinstance(up, ast.Attribute) and up.value is top:
        top = up
        up = parent(top)
    if top is not node and isinstance(top, ast.Attribute) and isinstance(top.ctx, ast.Store):
        return "reseed"  # self.rng.bit_generator.state = ...
    if isinstance(up, ast.Call) and up.func is top:
        method = top.attr if top is not node and isinstance(top, ast.Attribute) else ""
        if method in RESEED_METHODS:
            return "reseed"
        if method in INSPECT_METHODS:
            return None
        return "draw"
    if isinstance(up, ast.Call):  # passed along: generator=self.g, augment(x, self.rng)
        if isinstance(up.func, ast.Name) and up.func.id in INSPECT_BUILTINS:
            return None
        return "draw"
    if isinstance(up, ast.keyword):
        call = parent(up)
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id in INSPECT_BUILTINS
        ):
            return None
        return "draw"
    if isinstance(up, (ast.Assign, ast.NamedExpr, ast.withitem, ast.Return, ast.Yield)):
        return "draw"  # an alias: `rng = self.rng` and then `rng.random()`
    return None


def setattr_name(call: ast.Call) -> str | None:
    """ "rng" for ``setattr(x, "rng", value)``."""
    if (
        isinstance(call.func, ast.Name)
        and call.func.id == "setattr"
        and len(call.args) >= 2
        and isinstance(call.args[1], ast.Constant)
        and isinstance(call.args[1].value, str)
    ):
        return call.args[1].value
    return None


# Calls that re-seed a process-global generator (numpy's legacy one,
# Python's `random`, torch's CPU and CUDA ones): qualname -> the spelling
# used in messages.
GLOBAL_SEEDERS: dict[str, str] = {
    "numpy.random.seed": "np.random.seed",
    "random.seed": "random.seed",
    "torch.manual_seed": "torch.manual_seed",
    "torch.random.manual_seed": "torch.manual_seed",
    "torch.cuda.manual_seed": "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all": "torch.cuda.manual_seed_all",
}


def global_seeder(call: ast.Call, imports: ImportTable) -> str | None:
    """How to spell the global generator ``call`` re-seeds (None: it does not)."""
    return GLOBAL_SEEDERS.get(imports.qualname(call.func) or "")


def seeded_family(spelled: str) -> str:
    """The global generator a seeder spelled so re-seeds: "numpy", "random", "torch"."""
    if spelled.startswith("np."):
        return "numpy"
    return "random" if spelled.startswith("random.") else "torch"


# Module members that are not draws from the module's global generator.
_NOT_DRAWS = frozenset(
    {
        "seed",
        "get_state",
        "set_state",
        "getstate",
        "setstate",
        "RandomState",
        "default_rng",
        "Generator",
        "SeedSequence",
        "PCG64",
        "MT19937",
        "BitGenerator",
        "Random",
        "SystemRandom",
    }
)
TORCH_DRAWS = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "randperm",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "rand_like",
        "randn_like",
        "randint_like",
    }
)
# In-place random fills: they draw from torch's global generator.
TORCH_FILL_METHODS = frozenset(
    {"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_", "cauchy_"}
)
# Augmentation libraries whose transforms draw from the global generators.
_AUGMENTATION_PACKAGES = ("torchvision.transforms", "albumentations", "imgaug")


def global_draws(call: ast.Call, imports: ImportTable) -> frozenset[str]:
    """The global generators ``call`` may draw from: "numpy" (``np.random.rand``),
    "random" (``random.choice``), "torch" (``torch.randn``, ``x.normal_()``),
    all three for an augmentation library's transform; empty otherwise."""
    qualname = imports.qualname(call.func) or ""
    head, _, last = qualname.rpartition(".")
    if head == "numpy.random" and last not in _NOT_DRAWS:
        return frozenset({"numpy"})
    if head == "random" and last not in _NOT_DRAWS:
        return frozenset({"random"})
    if head == "torch" and last in TORCH_DRAWS:
        return frozenset({"torch"})
    if qualname.startswith(_AUGMENTATION_PACKAGES):
        return frozenset({"numpy", "random", "torch"})
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in TORCH_FILL_METHODS and not qualname:
        return frozenset({"torch"})
    return frozenset()
