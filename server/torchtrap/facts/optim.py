"""Optimizer-side names: which constructors build learning-rate schedulers.

Whether a value *is* a scheduler is a value question
(:meth:`torchtrap.values.loops.LoopFacts.scheduler`); this is the table.
"""

from __future__ import annotations

from torchtrap.facts.tensors import words

SCHEDULER_NAMESPACES = ("torch.optim.lr_scheduler.",)
OTHER_SCHEDULER_CLASSES = frozenset({"torch.optim.swa_utils.SWALR"})
# Hugging Face's schedule builders return a `torch.optim.lr_scheduler.LambdaLR`.
_HF_BUILDERS = words(
    """
    get_scheduler get_constant_schedule get_constant_schedule_with_warmup
    get_linear_schedule_with_warmup get_cosine_schedule_with_warmup
    get_cosine_with_hard_restarts_schedule_with_warmup get_polynomial_decay_schedule_with_warmup
    get_inverse_sqrt_schedule
    """
)
SCHEDULER_BUILDERS = frozenset(
    f"{package}.{name}"
    for package in ("transformers", "transformers.optimization")
    for name in _HF_BUILDERS
)


def is_scheduler_constructor(qualname: str) -> bool:
    """``torch.optim.lr_scheduler.StepLR`` (any class there),
    ``torch.optim.swa_utils.SWALR``, ``transformers.get_linear_schedule_with_warmup``."""
    if qualname in OTHER_SCHEDULER_CLASSES or qualname in SCHEDULER_BUILDERS:
        return True
    head, _, last = qualname.rpartition(".")
    return qualname.startswith(SCHEDULER_NAMESPACES) and last[:1].isupper() and bool(head)
