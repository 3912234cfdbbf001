"""A list filled by ``append`` and read by position (values/containers.py),
through ``ctx.values.of``: the ordinal item, and near misses where the order
or the item is not certain."""

from __future__ import annotations

from tests.values.helpers import probes
from torchtrap.values import Kind


def test_an_appended_item_read_by_position() -> None:
    values = probes(
        """
        import torch
        from torch.utils.data import DataLoader

        def main(ds, model, k):
            arr = []
            arr.append(torch.softmax(model(ds), 1))
            arr.append(torch.nn.Softmax(1))
            probe(arr[0])
            probe(arr[1])
            probe(arr[-1])
            probe(arr[2])
            probe(arr[k])
        """
    )
    kinds = [v.kind for v in values]
    assert kinds[:3] == [Kind.TENSOR, Kind.MODULE, Kind.MODULE]
    assert values[0].probability is not None and values[0].probability.kind == "softmax"
    # Out of range: unknown; an unknown index over items that disagree: at most "may".
    assert kinds[3] == Kind.UNKNOWN
    assert not values[4].definite and values[4].bare_probability() is None


def test_an_unknown_index_over_items_that_agree() -> None:
    values = probes(
        """
        import torch

        def main(x, y, k):
            arr = []
            arr.append(torch.sigmoid(x))
            arr.append(torch.sigmoid(y))
            probe(arr[k])
        """
    )
    assert values[0].probability is not None and values[0].probability.kind == "sigmoid"


def test_an_order_that_is_not_certain_is_unknown() -> None:
    values = probes(
        """
        import torch

        def main(x, z, flag, helper):
            a = []
            if flag:
                a.append(z)
            a.append(torch.sigmoid(x))
            probe(a[0])
            b = []
            b.append(torch.sigmoid(x))
            helper(b)
            probe(b[0])
            c = []
            for _ in range(3):
                c.append(torch.sigmoid(x))
            probe(c[0])
            d = []
            d.append(torch.sigmoid(x))
            d[0] = z
            probe(d[0])
        """
    )
    assert [v.probability for v in values] == [None, None, None, None]


def test_items_appended_after_the_read_do_not_count() -> None:
    values = probes(
        """
        import torch

        def main(x, z):
            a = []
            a.append(z)
            probe(a[0])
            a.append(torch.sigmoid(x))
            probe(a[1])
        """
    )
    assert values[0].probability is None
    assert values[1].probability is not None
