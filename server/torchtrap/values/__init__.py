"""The value layer: what an expression holds, for every rule.

A rule asks ``self.ctx.values.of(expr)`` (optionally ``of(expr, at)``: the
value as seen at another node) and gets a :class:`Value`:

``value.kind``
    :class:`Kind`: TENSOR, MODULE, DISTRIBUTION, CALLABLE, TUPLE, ... UNKNOWN.
    UNKNOWN whenever there is no evidence (never a guess from a name).
``value.holds(Kind.TENSOR)`` / ``value.holds(Kind.MODULE)``
    "Is it a tensor / a module" on every path (the probability may differ
    between paths: ``value.partial``). The one answer every rule asks:
    torch tensor functions, tensor methods of tensors, operators, calling a
    module, ``.grad``/``.data``/``.weight``, ``register_buffer``, loop
    targets over ``.parameters()`` and over a default-collate DataLoader
    (``Kind.BATCH``: ``batch["x"]`` is a tensor), annotations. The syntax
    tables are :mod:`torchtrap.values.kinds`.
``value.certainty`` / ``value.definite``
    :class:`Certainty`: DEFINITE when every path to the use gives it, MAY
    when some do (one branch of an ``if``, some of the call sites).
    A MAY value never makes an error-level finding alone: stay silent or
    lower the severity and say ``value.assumed``.
``value.probability``
    A :class:`Probability` when the tensor holds probabilities: ``kind``
    "softmax", "sigmoid" or "normalised"; ``origin`` (the node where it is
    computed; another file's is a stand-in that ``ctx.related`` places
    there); ``direct`` (the expression is that call), ``complement``
    (``1 - p``), ``module`` (computed by a module instance or a project
    function), ``guarded`` (clamped or moved off 0), ``scaled``
    (multiplied: ``p * w``), ``via`` (the name it went through).
    ``value.bare_probability()``: the probability when DEFINITE, unguarded
    and unscaled (what a log turns into -inf).
``value.log_probability``
    The same for log-probabilities: "log_softmax", "logsigmoid".
``value.output``
    For a module instance or a project function: the value calling it gives
    (``nn.Softmax(1).cuda()``'s output is a softmax probability).
``value.generator``
    For a random generator (``Kind.RNG``): a :class:`Generator`, its
    ``family`` ("numpy.random.default_rng", "torch.Generator", ...) and
    ``ctor`` (the constructor call; the table is
    :mod:`torchtrap.facts.generators`). ``alternative``: MAY only because
    one operand of ``a if c else b`` / ``a or b`` builds it.
``ctx.values.constant(expr)``
    ``Kind.CONSTANT`` with ``value.constant`` (the ``ast.Constant``) when
    ``expr`` is a literal or a name bound once, to a literal, in the
    nearest scope that binds it; else UNKNOWN (``of`` never gives CONSTANT).
``ctx.values.parameter(name, at)``
    The function ``name`` is a parameter of when it still holds what the
    caller passed at ``at`` (no other binding reaches); else None.
``ctx.values.sources(expr, at)``
    The expressions written to a name or ``self.attr`` that reach ``at``
    (for a rule that judges how a value was written, not what it holds);
    None when unknown.
``ctx.values.narrowed(expr, at)``
    ``at`` lies in a branch that tests ``expr`` is a tensor (``if
    isinstance(x, torch.Tensor):``, ``torch.is_tensor(x) and ...``) and
    nothing there writes to it; ``of`` answers TENSOR there already.
``ctx.values.binds`` / ``bound_before`` / ``mutated_after`` / ``shadowed``
    Names in scopes, for where a fix may go: the scope binds the name, a
    binding comes before the use, an in-place change comes after it, a
    builtin is rebound. Rules never read the binding tables themselves.
``ctx.values.worker_init_resets(loader, attr, view)``
    Whether a DataLoader's ``worker_init_fn`` re-creates or re-seeds
    ``<x>.attr`` in each worker, read through its calls (three deep) or, for
    another file's DataLoader, its summary; None when it cannot be read
    (:mod:`torchtrap.values.worker_init`).
``ctx.values.autograd``
    Parameters, values in the autograd graph, tensors that do not require
    grad (:mod:`torchtrap.values.autograd`).
``value.elements`` / ``value.field(name)``
    A tuple element-wise; a distribution's ``"probs"``.

This API (``of``, ``probability``, ``log_probability``, ``bare_probability``,
``certainty``) is stable: TT201 and TT213 build on it.

Which operations keep, make or guard a property is one documented table:
:mod:`torchtrap.values.tensor_ops`. How values flow inside a function and
across functions and files: :mod:`torchtrap.values.evaluate`.
"""

from torchtrap.values.evaluate import Values
from torchtrap.values.model import (
    UNKNOWN,
    Certainty,
    Generator,
    Kind,
    Probability,
    Step,
    Value,
    join,
)

__all__ = [
    "UNKNOWN",
    "Certainty",
    "Generator",
    "Kind",
    "Probability",
    "Step",
    "Value",
    "Values",
    "join",
]
