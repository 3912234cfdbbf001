"""Random generator constructors: the one table of what builds a generator.

``np.random.default_rng(0)``, ``np.random.RandomState(0)``,
``np.random.Generator(bitgen)``, ``random.Random(0)``, ``torch.Generator()``
(also seeded in the same expression: ``torch.Generator().manual_seed(0)``).
The value layer (:mod:`torchtrap.values.evaluate`) gives such a call a
``Kind.RNG`` value; rules ask the layer, not this table.
"""

from __future__ import annotations

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
