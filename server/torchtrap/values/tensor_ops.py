"""Which tensor operations make, keep, guard or drop a property.

The one table every rule sees (add a step here and every rule follows it).
Qualified names are as :class:`~torchtrap.facts.imports.ImportTable`
resolves them; methods are ``x.<name>(...)`` on a value already known.

=============================  ==========================================
Operation                      Effect on "probability" (p)
=============================  ==========================================
softmax, sigmoid (functions,   make p ("softmax" / "sigmoid"); direct
methods, nn.Softmax/Sigmoid)
log_softmax, logsigmoid        make a log-probability (not p)
``.to .cuda .cpu .float ...``  keep p (casts, devices)
``.view .reshape .squeeze``,   keep p (layout)
``.permute .transpose ...``
indexing ``p[...]``,           keep p (selection)
``gather index_select ...``
``torch.cat/stack([p, q])``    keep p when every element is p
``1 - p``                      keep p, complemented
``p.clamp(...)``, ``clip``,    guard p (``guarded``)
``clamp_min``,
``torch.clamp/maximum``,
``p + eps``, ``p * a + b``
``(p * mask).sum(d)``          keep p (a one-hot selection)
``y / y.sum(d, keepdim=True)`` make p ("normalised")
``Categorical(logits=z)``      a distribution whose ``.probs`` is a softmax
``.sum()`` of p alone,         drop p (sums to 1)
anything else
=============================  ==========================================
"""

from __future__ import annotations

from torchtrap.facts.tensors import words

SOFTMAX_FUNCTIONS = frozenset(
    {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
)
SIGMOID_FUNCTIONS = frozenset(
    {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"}
)
LOG_SOFTMAX_FUNCTIONS = frozenset(
    {"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"}
)
LOGSIGMOID_FUNCTIONS = frozenset({"torch.nn.functional.logsigmoid"})
SOFTMAX_MODULES = frozenset({"torch.nn.Softmax", "torch.nn.Softmax2d"})
SIGMOID_MODULES = frozenset({"torch.nn.Sigmoid"})
LOG_SOFTMAX_MODULES = frozenset({"torch.nn.LogSoftmax"})
LOGSIGMOID_MODULES = frozenset({"torch.nn.LogSigmoid"})
SEQUENTIAL = "torch.nn.Sequential"
# Methods that keep a zero probability zero (selection, layout, casts, devices).
KEEP_METHODS = words(
    """
    gather index_select masked_select select narrow take_along_dim view reshape squeeze
    unsqueeze flatten transpose t permute contiguous float double half bfloat16 to detach
    clone cpu cuda expand expand_as view_as reshape_as type_as resize
    """
)
KEEP_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in ("gather", "index_select", "masked_select", "select", "narrow", "take_along_dim")
    + ("squeeze", "unsqueeze", "flatten", "transpose", "permute", "reshape")
)
# Functions whose result is p when every tensor in their first argument is.
CONCAT_FUNCTIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
GUARD_METHODS = frozenset({"clamp", "clip", "clamp_min"})
GUARD_FUNCTIONS = frozenset(
    {"torch.clamp", "torch.clip", "torch.clamp_min", "torch.maximum", "torch.max"}
)
# Module methods that return the module itself.
MODULE_SELF_METHODS = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "train", "eval"}
    | {"requires_grad_", "share_memory", "to_empty", "apply", "xpu"}
)
# Qualified names that are never project code (no need to ask the project).
FOREIGN = ("torch.", "numpy.", "math.", "scipy.", "jax.", "tensorflow.", "builtins.")
