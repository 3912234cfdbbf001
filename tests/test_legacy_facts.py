"""TT208-TT211: the shared DataLoader facts, and the measured facts behind
the rules' messages re-measured on the installed torch and numpy.

- ``Loaders.dataloader`` / ``Loaders.iterator`` (facts/loaders.py): what
  counts as evidence that an expression is a DataLoader (or an iterator over
  one) within one module, and what stays unknown.
- ``.next()`` on a DataLoader iterator raises AttributeError (TT208).
- The aliases of facts/numpy_aliases.py raise exactly where it says (TT209).
- ``Variable(x, requires_grad=r)`` is ``x.detach().requires_grad_(r)`` and
  ``volatile=True`` still records a graph (TT210).
- ``len(loader)`` counts batches, ``len(loader.dataset)`` samples (TT211).
"""

from __future__ import annotations

import ast
import textwrap
import warnings
from pathlib import Path

import pytest

from torchtrap.config import from_table, parse_version, pinned_version, resolve_numpy_version
from torchtrap.facts import ModuleFacts
from torchtrap.facts.numpy_aliases import ALIASES
from torchtrap.values.loaders import Loaders


def _loaders(code: str) -> tuple[Loaders, ModuleFacts]:
    facts = ModuleFacts(ast.parse(textwrap.dedent(code)))
    return Loaders(facts), facts


def _len_args(facts: ModuleFacts) -> list[ast.expr]:
    return [
        c.args[0]
        for c in facts.index.of(ast.Call)
        if isinstance(c.func, ast.Name) and c.func.id == "len"
    ]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param(
            """
            from torch.utils.data import DataLoader
            loader = DataLoader(range(4), batch_size=2)
            len(loader)
            """,
            True,
            id="name",
        ),
        pytest.param(
            """
            import torch.utils.data as tud
            def make():
                return tud.DataLoader(range(4))
            def f():
                loader = make()
                return len(loader)
            """,
            True,
            id="local-function-result",
        ),
        pytest.param(
            """
            from torch.utils.data import DataLoader
            def f(loader: DataLoader):
                return len(loader)
            """,
            True,
            id="annotated-parameter",
        ),
        pytest.param(
            """
            from torch.utils.data import DataLoader
            def f(loader):
                return len(loader)
            f(DataLoader(range(4)))
            f(loader=DataLoader(range(8)))
            """,
            True,
            id="parameter-every-caller-passes-one",
        ),
        pytest.param(
            """
            from torch.utils.data import DataLoader
            def f(loader):
                return len(loader)
            f(DataLoader(range(4)))
            f([1, 2])
            """,
            False,
            id="parameter-one-caller-passes-a-list",
        ),
        pytest.param(
            """
            from torch.utils.data import DataLoader
            def f(loader):
                return len(loader)
            f(DataLoader(range(4)))
            callbacks = [f]
            """,
            False,
            id="function-used-as-a-value",
        ),
        pytest.param(
            """
            def f(loader):
                return len(loader)
            """,
            False,
            id="parameter-without-callers",
        ),
        pytest.param(
            """
            from torch.utils.data import DataLoader
            def f(data, fast):
                loader = DataLoader(data) if fast else data
                return len(loader)
            """,
            False,
            id="one-branch-is-something-else",
        ),
        pytest.param(
            """
            from torch.utils.data import DataLoader
            for loader in [DataLoader(range(4))]:
                len(loader)
            """,
            False,
            id="loop-target-unknown",
        ),
    ],
)
def test_dataloader_evidence(code: str, expected: bool) -> None:
    loaders, facts = _loaders(code)
    [arg] = _len_args(facts)
    assert (loaders.dataloader(arg, arg) is not None) is expected


def test_iterator_evidence() -> None:
    loaders, facts = _loaders(
        """
        from torch.utils.data import DataLoader
        class T:
            def __init__(self, data):
                self.loader = DataLoader(data)
                self.it = iter(self.loader)
                self.other = iter(data)
            def step(self):
                self.it.next()
                self.other.next()
                self.loader.__iter__().next()
        """
    )
    receivers = [
        c.func.value
        for c in facts.index.of(ast.Call)
        if isinstance(c.func, ast.Attribute) and c.func.attr == "next"
    ]
    found = [loaders.iterator(r, r) is not None for r in receivers]
    assert found == [True, False, True]
    # A DataLoader is not an iterator over one.
    assert loaders.iterator(receivers[2].func.value, receivers[2]) is None  # type: ignore[attr-defined]


def test_numpy_version_resolution(tmp_path: Path) -> None:
    config = from_table({"numpy-version": "1.26"})
    assert config.warnings == ()
    assert resolve_numpy_version(config, None) == (1, 26)
    assert from_table({"numpy-version": 1.26}).warnings  # not a string: a warning
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch==2.1\nnumpy==1.26.4\n", encoding="utf-8")
    assert pinned_version(tmp_path, "numpy") == "1.26.4"
    (tmp_path / "requirements.txt").write_text("numpy>=1.24\n", encoding="utf-8")
    pinned_version.cache_clear()
    assert pinned_version(tmp_path, "numpy") is None  # a lower bound says nothing


# -- measured facts --------------------------------------------------------------


def test_dataloader_iterators_have_no_next_method() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(torch.arange(10.0)), batch_size=4)
    it = iter(loader)
    with pytest.raises(
        AttributeError, match="'_SingleProcessDataLoaderIter' object has no attribute 'next'"
    ):
        it.next()  # type: ignore[attr-defined]
    assert next(it)[0].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_len_of_a_loader_counts_batches() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, SubsetRandomSampler, TensorDataset

    ds = TensorDataset(torch.arange(10.0))
    assert len(DataLoader(ds, batch_size=4)) == 3
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert len(DataLoader(ds)) == len(DataLoader(ds, batch_size=None)) == 10
    sampled = DataLoader(ds, batch_size=4, sampler=SubsetRandomSampler(range(6)))
    assert (len(sampled), len(sampled.dataset)) == (2, 10)  # type: ignore[arg-type]


def test_numpy_aliases_match_the_installed_numpy() -> None:
    np = pytest.importorskip("numpy")
    version = parse_version(np.__version__)
    assert version is not None
    for alias in ALIASES.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            present = hasattr(np, alias.name)
        if alias.removed_for(version):
            assert not present, alias.name
        elif version >= (2, 0) and alias.readded:
            assert present, alias.name
    if version >= (2, 0):
        assert np.bool is np.bool_
        assert np.long is np.int64 or np.dtype(np.long).itemsize == 8


def test_variable_is_detach_and_volatile_is_ignored() -> None:
    torch = pytest.importorskip("torch")
    from torch.autograd import Variable

    a = torch.ones(2, requires_grad=True)
    b = a * 2
    v = Variable(b)
    assert (v.requires_grad, v.is_leaf, v.data_ptr()) == (False, True, b.data_ptr())
    x = torch.zeros(2)
    w = Variable(x, requires_grad=True)
    assert (w.requires_grad, x.requires_grad, w is x) == (True, False, False)

    layer = torch.nn.Linear(3, 3)
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        out = layer(Variable(torch.ones(1, 3), volatile=True))
    assert out.requires_grad and out.grad_fn is not None
    # The graph holds the input for backward: evaluation keeps activations alive.
    assert tuple(out.grad_fn._saved_mat1.shape) == (1, 3)
    with torch.no_grad():
        assert layer(torch.ones(1, 3)).grad_fn is None


@pytest.mark.parametrize("code", ["TT208", "TT209", "TT210", "TT211"])
def test_messages_are_short(code: str) -> None:
    from torchtrap.engine import lint
    from torchtrap.rules import get_rule

    rule = get_rule(code)
    assert rule is not None
    messages = [
        f.message
        for example in rule.invalid
        for f in lint(
            textwrap.dedent(example.code),
            "example.py",
            from_table(dict(example.config)),
            rules=[rule],
        )
    ]
    assert messages
    assert max(len(m) for m in messages) <= 120, max(messages, key=len)
