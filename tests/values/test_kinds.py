"""Tensor and module evidence from ``Values.of``: the one answer to "is it a
tensor / a module" that every rule asks (``value.holds(Kind.TENSOR)``).
Each step that gives the kind, with the near miss beside it."""

from __future__ import annotations

from tests.values.helpers import probes
from torchtrap.values import Kind, Value


def _held(value: Value) -> str:
    """ "tensor", "module", "batch", "may tensor", ... or "unknown"."""
    if value.kind is Kind.UNKNOWN:
        return "unknown"
    name = value.kind.value
    return name if value.holds(value.kind) else f"may {name}"


def _kinds(code: str) -> list[str]:
    return [_held(v) for v in probes(code)]


def test_torch_functions_tensor_methods_and_operators() -> None:
    assert _kinds(
        """
        import torch
        x = torch.zeros(3)
        probe(x.float().view(-1))       # a tensor method of a tensor
        probe(x @ x)                    # any arithmetic with a tensor
        probe(-x)
        probe(torch.sum(unknown))       # a torch tensor function, whatever it gets
        probe(x.grad)
        probe(x.T)
        probe(unknown.float())          # near miss: `float` is no tensor-only method
        probe("%d" % x)                 # near miss: `%` formats strings as often
        probe(-unknown)
        """
    ) == [
        "tensor",
        "tensor",
        "tensor",
        "tensor",
        "tensor",
        "tensor",
        "unknown",
        "unknown",
        "unknown",
    ]


def test_modules_their_calls_and_their_parameters() -> None:
    assert _kinds(
        """
        import torch.nn as nn
        import torchvision

        class Net(nn.Module):
            pass

        class Plain:
            pass

        net = Net().cuda()
        probe(net)                                  # a local module class, moved
        probe(net(1))                               # calling a module: its output
        probe(net.weight)
        probe(torchvision.models.resnet18())
        probe(nn.DataParallel(net))
        probe(Plain())                              # near miss: not a module
        probe(torchvision.models.ResNet18_Weights)  # near miss: weights enum
        probe(net.sum())                            # near miss: a module's own method
        """
    ) == ["module", "tensor", "tensor", "module", "module", "unknown", "unknown", "unknown"]


def test_loop_targets_annotations_and_registrations() -> None:
    assert _kinds(
        """
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(ds, batch_size=4)
        for batch in loader:
            probe(batch)
            probe(batch["x"])
        for i, (x, y) in enumerate(loader):
            probe(x)
            probe(i)                    # near miss: enumerate's counter
        for p in model.parameters():
            probe(p)
        for name, p in model.named_parameters():
            probe(name)                 # near miss: the name, not the parameter
        for batch in DataLoader(ds, collate_fn=pad):
            probe(batch)                # near miss: a custom collate may give anything
        h: torch.Tensor = make()
        probe(h)

        class M(torch.nn.Module):
            def __init__(self):
                self.register_buffer("w", torch.ones(1))
                self.add_module("head", build())

            def forward(self):
                probe(self.w)
                probe(self.head)
        """
    ) == [
        "batch",
        "tensor",
        "tensor",
        "unknown",
        "tensor",
        "unknown",
        "unknown",
        "tensor",
        "tensor",
        "module",
    ]


def test_a_tensor_changed_in_place_is_still_a_tensor_but_no_probability() -> None:
    p, q = probes(
        """
        import torch
        p = torch.softmax(z, 1)
        p.clamp_(min=1e-6)
        probe(p)
        q = torch.softmax(z, 1)
        probe(q)
        """
    )
    assert p.holds(Kind.TENSOR) and p.probability is None
    assert q.holds(Kind.TENSOR) and q.probability is not None


def test_the_kind_holds_on_every_path_when_only_the_probability_differs() -> None:
    both, one = probes(
        """
        import torch
        if cond:
            a = torch.softmax(z, 1)
            b = torch.softmax(z, 1)
        else:
            a = torch.zeros(3)
            b = make()
        probe(a)
        probe(b)
        """
    )
    # A tensor on both paths, a probability on one: MAY for the probability
    # (what TT201 asks), a tensor for certain (what TT202 asks).
    assert not both.definite and both.probability is not None and both.holds(Kind.TENSOR)
    # Near miss: `make()` may give anything.
    assert not one.holds(Kind.TENSOR)


def test_calling_a_module_that_is_one_of_two_is_a_tensor() -> None:
    (out,) = probes(
        """
        import torch.nn as nn
        head = nn.Sigmoid()
        if wrap:
            head = nn.DataParallel(head)
        probe(head(x))
        """
    )
    assert out.holds(Kind.TENSOR)
