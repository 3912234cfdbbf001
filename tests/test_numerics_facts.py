"""Measured facts behind TT201 and TT202, re-measured on the installed torch.

- TT201's clamp bound (1e-4) keeps the log and its gradient finite in float16,
  bfloat16 and float32; the smaller candidates do not (this is why it was
  picked), and the messages' numbers hold.
- TT202's method tables match torch: every listed method exists and is out of
  place, the in-place twins exist exactly where the rule offers them, and the
  module-shared names are exactly those nn.Module also has.
"""

from __future__ import annotations

import inspect

import pytest

from torchtrap.rules.tt201_log_of_probability import CLAMP_MIN
from torchtrap.rules.tt202_discarded_out_of_place_result import (
    FUNCTIONS,
    METHODS,
    MODULE_SHARED,
    NEEDS_EVIDENCE,
    NO_TWIN,
    TENSOR_ONLY,
    DiscardedOutOfPlaceResult,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional

DTYPES = ("float16", "bfloat16", "float32")


def _clamped_log(eps: float, dtype: str) -> tuple[bool, bool, bool]:
    """(bound nonzero, log finite, gradient finite) for log(p.clamp(min=eps))
    at p = 0 and at p = eps, also through a softmax that underflows."""
    dt = getattr(torch, dtype)
    stored = torch.tensor(eps, dtype=dt)
    p = torch.tensor([0.0, eps, 0.5], dtype=dt, requires_grad=True)
    y = torch.log(p.clamp(min=eps))
    y.sum().backward()
    logits = torch.tensor([[0.0, 120.0]], dtype=dt, requires_grad=True)
    loss = -torch.log(torch.softmax(logits, -1).clamp(min=eps))[0, 0]
    loss.backward()
    assert p.grad is not None and logits.grad is not None
    log_finite = bool(torch.isfinite(y).all()) and bool(torch.isfinite(loss))
    grad_finite = bool(torch.isfinite(p.grad).all()) and bool(torch.isfinite(logits.grad).all())
    return bool(stored != 0), log_finite, grad_finite


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_bound_is_finite_in_every_dtype(dtype: str) -> None:
    assert _clamped_log(float(CLAMP_MIN), dtype) == (True, True, True)


@pytest.mark.parametrize(
    ("eps", "expected_float16"),
    [
        (1e-5, (True, True, False)),  # 1/1e-5 = 1e5 > 65504: inf gradient
        (1e-7, (True, True, False)),
        (1e-8, (False, False, False)),  # rounds to 0 in float16: log -inf
    ],
)
def test_smaller_bounds_fail_in_float16(eps: float, expected_float16: tuple[bool, ...]) -> None:
    assert _clamped_log(eps, "float16") == expected_float16
    assert _clamped_log(eps, "float32") == (True, True, True)


def test_finfo_tiny_has_little_headroom() -> None:
    # finite, but a gradient of 8.5e37 overflows float32 after a factor of ~4
    tiny = torch.finfo(torch.float32).tiny
    assert 1 / tiny * 4.1 > torch.finfo(torch.float32).max


def test_message_numbers() -> None:
    x = torch.tensor([0.0, 100.0, 200.0], requires_grad=True)
    y = torch.log(torch.softmax(x, -1))
    assert y[0].item() == float("-inf")
    y[0].backward()
    assert x.grad is not None and torch.isnan(x.grad).all()
    assert torch.log_softmax(x, -1).tolist() == [-200.0, -100.0, 0.0]
    logits = torch.tensor([[0.0, 120.0]])
    assert torch.isinf(-torch.log(torch.softmax(logits, -1))[0, 0])
    assert F.cross_entropy(logits, torch.tensor([0])).item() == 120.0
    # sigmoid thresholds quoted by TT201 (float32)
    assert torch.sigmoid(torch.tensor(-88.8)).item() == 0.0
    assert torch.sigmoid(torch.tensor(-88.7)).item() > 0.0
    assert (1 - torch.sigmoid(torch.tensor(16.7))).item() == 0.0
    assert (1 - torch.sigmoid(torch.tensor(16.5))).item() > 0.0


def test_logsigmoid_rewrites_are_exact() -> None:
    # same values where the naive form is still accurate (|x| <= 10 in float64)
    x = torch.linspace(-10, 10, 81, dtype=torch.float64)
    assert torch.allclose(torch.log(torch.sigmoid(x)), F.logsigmoid(x))
    assert torch.allclose(torch.log(1 - torch.sigmoid(x)), F.logsigmoid(-x))
    assert torch.allclose(torch.log(torch.softmax(x, 0)), torch.log_softmax(x, 0))


def test_discarded_clamp_leaves_the_tensor_unchanged() -> None:
    x = torch.tensor([0.0, -1.0, 0.5])
    x.clamp(min=1e-4)
    assert x.tolist() == [0.0, -1.0, 0.5]


def test_method_tables_match_torch() -> None:
    assert TENSOR_ONLY.isdisjoint(NEEDS_EVIDENCE)
    for name in METHODS:
        assert hasattr(torch.Tensor, name), name
        assert not name.endswith("_"), name
        twin = hasattr(torch.Tensor, name + "_")
        assert twin == (name not in NO_TWIN), f"{name}: in-place twin {twin}"
    module = torch.nn.Module
    assert {m for m in METHODS if hasattr(module, m)} == MODULE_SHARED


def test_module_shared_methods_are_in_place_on_modules_only() -> None:
    net = torch.nn.Linear(2, 2)
    assert net.float() is net and net.to("cpu") is net and net.double() is net
    t = torch.zeros(2)
    assert t.double() is not t
    assert t.to(torch.float64) is not t


def test_function_forms_are_torch_functions() -> None:
    for name in FUNCTIONS:
        fn = getattr(torch, name)
        assert callable(fn) and not isinstance(fn, torch.dtype), name
        assert not inspect.ismodule(fn), name
        assert name in METHODS, name


def test_unknown_receiver_methods_are_tensor_only() -> None:
    """Names flagged on unknown receivers: no numpy/pandas-free Python type
    or numpy array has them."""
    np = pytest.importorskip("numpy")
    for name in TENSOR_ONLY:
        for other in (set, list, dict, str, bytes, np.ndarray):
            assert not hasattr(other, name), (name, other)


def test_docstring_lists_every_method() -> None:
    docs = DiscardedOutOfPlaceResult.docs()
    for name in METHODS:
        assert f"`{name}`" in docs, name
