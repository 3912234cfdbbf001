"""The abstract values the layer hands to rules: plain, immutable data.

A :class:`Value` never holds a rule, a context or a project: only syntax
nodes (where something comes from) and other values, so keeping one alive
keeps no tree of caches alive and makes no reference cycle.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, replace


class Kind(enum.Enum):
    """What an expression holds. ``UNKNOWN`` is the answer whenever there
    is no evidence: never a guess from a variable's name."""

    TENSOR = "tensor"
    # A whole batch of a DataLoader with the default collate: a tensor, or a
    # list/dict of them (so ``batch["x"]`` and ``batch[0]`` are tensors).
    BATCH = "batch"
    MODULE = "module"  # an nn.Module instance (``output``: what calling it gives)
    DISTRIBUTION = "distribution"  # torch.distributions.* (``probs`` in ``fields``)
    CALLABLE = "callable"  # a project function (``output``: what calling it gives)
    TUPLE = "tuple"  # ``elements`` element-wise
    DATASET = "dataset"
    DATALOADER = "dataloader"
    ITERATOR = "iterator"
    RNG = "rng"
    DEVICE = "device"
    OPTIMIZER = "optimizer"
    GRAD_SCALER = "grad-scaler"
    SAMPLER = "sampler"
    CONSTANT = "constant"  # a literal (``constant``), from Values.constant only
    UNKNOWN = "unknown"


class Certainty(enum.Enum):
    """DEFINITE: every path that reaches the use gives it. MAY: some path
    does (one ``if`` branch, some call sites): a rule never reports an error
    on MAY alone; it stays silent or says what it assumed."""

    DEFINITE = "definite"
    MAY = "may"


@dataclass(frozen=True)
class Probability:
    """A tensor of probabilities (or their logs, in ``log_probability``).

    ``kind``: "softmax", "sigmoid" or "normalised" (``y / y.sum(d, keepdim=True)``,
    a one-hot selection ``(p * onehot).sum(1)`` keeps the producer's kind);
    "log_softmax" / "logsigmoid" for a log-probability.
    ``origin``: where it is computed (a call here, or a stand-in node for
    another file: ``Context.related`` places it there).
    ``direct``: the expression is exactly that call (``1 - call`` too).
    ``complement``: ``1 - p``. ``module``: computed by a module instance or
    a project function (no rewrite of the call is possible).
    ``guarded``: clamped, or moved off 0 (``p + eps``, ``torch.maximum``).
    ``via``: the local name or parameter it went through.
    ``passed``: reached a parameter from a call site (``origin`` is the
    argument there).
    ``scaled``: multiplied by another factor (``p * w``, ``p ** 2``): not a
    probability on its own, a probability again once summed over a
    dimension (``(p * onehot).sum(1)``, a one-hot selection).
    ``part``: the dimension a slice keeps only some entries of
    (``p[:, 1:]``): summed over it, the mass of those classes, a
    probability that underflows when the others take it all."""

    kind: str
    origin: ast.expr
    direct: bool = True
    complement: bool = False
    module: bool = False
    guarded: bool = False
    via: str | None = None
    scaled: bool = False
    passed: bool = False
    part: int | None = None

    def derived(self, **changes: object) -> Probability:
        """The same probability one step further (``direct`` False unless given)."""
        changes.setdefault("direct", False)
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Generator:
    """A random generator (``Kind.RNG``) and the call that builds it.

    ``family``: what it is (:data:`torchtrap.facts.generators.CONSTRUCTORS`'s
    values: "numpy.random.default_rng", "numpy.random.RandomState",
    "random.Random", "torch.Generator"). ``ctor``: the constructor call
    (inside a ``.manual_seed(...)`` chain for torch). ``alternative``: one
    operand of ``a if c else b`` / ``a or b`` builds it (the value is MAY
    for that reason alone, not because a path to the use skips it)."""

    family: str
    ctor: ast.Call
    alternative: bool = False


@dataclass(frozen=True)
class Step:
    """One link of a value's origin chain (for related information)."""

    node: ast.AST
    note: str


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.UNKNOWN
    certainty: Certainty = Certainty.DEFINITE
    probability: Probability | None = None
    log_probability: Probability | None = None
    # A module or callable: the value calling it gives.
    output: Value | None = None
    # A tuple: its elements (None where unknown).
    elements: tuple[Value, ...] | None = None
    # A random generator (Kind.RNG): which one, built where.
    generator: Generator | None = None
    # A literal (Kind.CONSTANT): the node that gives it.
    constant: ast.Constant | None = None
    # Named parts (a distribution's "probs").
    fields: tuple[tuple[str, Value], ...] = ()
    origin: tuple[Step, ...] = ()
    # What the rule may say it assumed for a MAY value ("if `p` is the softmax at line 4").
    assumed: str = ""
    # MAY only because a property (a probability) holds on some paths: the
    # kind itself holds on every path.
    partial: bool = False

    @property
    def definite(self) -> bool:
        return self.certainty is Certainty.DEFINITE

    def holds(self, kind: Kind) -> bool:
        """Every path to the use gives a ``kind`` (whatever its properties):
        the question "is it a tensor / a module"."""
        return self.kind is kind and (self.definite or self.partial)

    @property
    def known(self) -> bool:
        return self.kind is not Kind.UNKNOWN or self.probability is not None

    def bare_probability(self) -> Probability | None:
        """The probability when it is DEFINITE, unguarded and not scaled: what
        a log turns into -inf when it underflows."""
        prob = self.probability
        if prob is None or not self.definite or prob.guarded or prob.scaled:
            return None
        return prob

    def field(self, name: str) -> Value:
        return next((v for k, v in self.fields if k == name), UNKNOWN)

    def maybe(self, assumed: str = "") -> Value:
        if not self.known:
            return self
        return replace(
            self, certainty=Certainty.MAY, assumed=assumed or self.assumed, partial=False
        )

    def via(self, name: str) -> Value:
        """The value seen through a local name or parameter."""
        prob = self.probability
        logp = self.log_probability
        return replace(
            self,
            probability=prob.derived(via=prob.via or name) if prob else None,
            log_probability=logp.derived(via=logp.via or name) if logp else None,
        )


UNKNOWN = Value()


def tensor(
    probability: Probability | None = None, log_probability: Probability | None = None
) -> Value:
    return Value(Kind.TENSOR, probability=probability, log_probability=log_probability)


def plain(value: Value, kind: Kind = Kind.TENSOR) -> Value:
    """A value of ``kind`` with nothing more known, as certain as ``value``
    (``x.float()`` of a tensor that only some paths give is only MAY one)."""
    if value.definite or value.partial:
        return Value(kind)
    return Value(kind, value.certainty, assumed=value.assumed)


def _join_prob(probs: list[Probability | None]) -> tuple[Probability | None, bool]:
    """(the joined probability, whether every path gives one)."""
    present = [p for p in probs if p is not None]
    if not present:
        return None, True
    live = [p for p in present if not p.guarded]
    if len(present) == len(probs):
        # Unguarded only when every path is: a clamp on one path guards that one.
        return (live[0] if len(live) == len(present) else present[0]), True
    return (live or present)[0], False


def join(values: list[Value]) -> Value:
    """The value of a name that several paths give (branches, call sites):
    what they all agree on stays DEFINITE; what only some give is MAY;
    nothing in common is UNKNOWN."""
    if not values:
        return UNKNOWN
    first = values[0]
    if len(values) == 1:
        return first
    if any(v.kind is Kind.RNG for v in values):
        return _join_generators(values)
    certain = all(v.definite for v in values)
    kinds = {v.kind for v in values}
    kind = first.kind if len(kinds) == 1 else Kind.UNKNOWN
    every_path = kind is not Kind.UNKNOWN and all(v.definite or v.partial for v in values)
    prob, all_prob = _join_prob([v.probability for v in values])
    logp, all_logp = _join_prob([v.log_probability for v in values])
    outputs = [v.output for v in values]
    output: Value | None = None
    if any(o is not None for o in outputs):
        output = join([o if o is not None else UNKNOWN for o in outputs])
    if kind is Kind.UNKNOWN and prob is None and logp is None:
        return UNKNOWN
    if kind is Kind.UNKNOWN:
        kind, certain = Kind.TENSOR, False  # a probability on some paths only
    certain = certain and all_prob and all_logp
    return Value(
        kind,
        Certainty.DEFINITE if certain else Certainty.MAY,
        prob,
        logp,
        output,
        origin=first.origin,
        partial=every_path and not certain,
    )


def _join_generators(values: list[Value]) -> Value:
    """Paths that give a random generator: RNG (the last path's constructor),
    DEFINITE when every path builds one, MAY when some give something else."""
    built = [v for v in values if v.kind is Kind.RNG and v.generator is not None]
    if len(built) != len([v for v in values if v.kind is Kind.RNG]) or any(
        v.kind is not Kind.RNG and v.known for v in values
    ):
        return UNKNOWN  # a generator on one path, a tensor on another
    last = built[-1]
    if len(built) == len(values):
        certain = all(v.definite for v in values)
        mays = [v.generator for v in built if not v.definite]
        alternative = bool(mays) and all(g is not None and g.alternative for g in mays)
        generator = replace(last.generator, alternative=alternative) if last.generator else None
        return Value(
            Kind.RNG,
            Certainty.DEFINITE if certain else Certainty.MAY,
            generator=generator,
            origin=last.origin,
        )
    generator = replace(last.generator, alternative=False) if last.generator else None
    return Value(
        Kind.RNG,
        Certainty.MAY,
        generator=generator,
        origin=last.origin,
        assumed="a generator on some paths only",
    )
