"""Annotations as tensor evidence: a parameter ``x: torch.Tensor``, a
project function's return annotation (``-> Tensor``, ``-> tuple[Tensor,
...]`` element-wise, through tuple unpacking), in one file and across files,
with near misses (``Optional``, a variadic tuple, an unresolved import)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.values.helpers import probe_calls, probes, project_probes
from torchtrap.facts.imports import ImportTable
from torchtrap.project.summary import return_annotation
from torchtrap.values import Kind
from torchtrap.values.loops import Ref


def _annotation(code: str) -> tuple[str, ...]:
    tree = ast.parse(code)
    imports = ImportTable(s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)))
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef) and fn.returns is not None
    return return_annotation(fn.returns, imports)


def test_return_annotations_recorded_element_wise() -> None:
    assert _annotation("import torch\ndef f() -> torch.Tensor: ...") == ("tensor",)
    assert _annotation("from torch import Tensor\ndef f() -> 'Tensor': ...") == ("tensor",)
    assert _annotation("import torch\ndef f() -> tuple[torch.Tensor, int]: ...") == (
        "tuple",
        "tensor",
        "",
    )
    assert _annotation(
        "from typing import Tuple\nfrom torch import Tensor\ndef f() -> Tuple[Tensor, Tensor]: ..."
    ) == ("tuple", "tensor", "tensor")
    # Near misses: nothing certain about a tensor.
    assert _annotation("import torch\ndef f() -> tuple[torch.Tensor, ...]: ...") == ()
    assert (
        _annotation(
            "from typing import Optional\nimport torch\ndef f() -> Optional[torch.Tensor]: ..."
        )
        == ()
    )
    assert _annotation("def f() -> Tensor: ...") == ()  # Tensor is not imported: unknown
    assert _annotation("import torch\ndef f() -> 'torch.Tensor[': ...") == ()  # does not parse
    assert _annotation("def f() -> tuple[int, str]: ...") == ()


def test_a_parameter_annotated_as_a_tensor() -> None:
    values = probes(
        """
        import torch
        from torch import Tensor

        def f(x: torch.Tensor, y: "Tensor", z, w: "Tensor["):
            probe(x)
            probe(y)
            probe(z)
            probe(w)
        """
    )
    assert [v.kind for v in values] == [Kind.TENSOR, Kind.TENSOR, Kind.UNKNOWN, Kind.UNKNOWN]
    assert values[0].definite


def test_a_return_annotation_in_one_file_unpacked(tmp_path: Path) -> None:
    files = {
        "main.py": """
            import torch

            def split(x, y) -> tuple[torch.Tensor, torch.Tensor, int]:
                return helper(x, y)

            a, b, n = split(x, y)
            probe(a)
            probe(b)
            probe(n)
            probe(split(x, y)[1])
        """
    }
    values = project_probes(files, "main.py", tmp_path)
    assert [v.kind for v in values] == [Kind.TENSOR, Kind.TENSOR, Kind.UNKNOWN, Kind.TENSOR]


def test_a_return_annotation_across_files_relative_import(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    files = {
        "pkg/utils.py": """
            import torch

            def split(X, Y, test_size: float) -> tuple[torch.Tensor, torch.Tensor]:
                idx = torch.randperm(len(X))
                return X[idx], Y[idx]

            def one(x) -> torch.Tensor:
                return x

            def loose(x) -> tuple[torch.Tensor, ...]:
                return x, x
        """,
        "pkg/model.py": """
            from .utils import split, one, loose

            def fit(X, Y):
                train_x, calib_x = split(X, Y, test_size=0.2)
                probe(train_x)
                probe(calib_x)
                probe(one(X))
                a, b = loose(X)
                probe(a)
        """,
    }
    values = project_probes(files, "pkg/model.py", tmp_path)
    assert [v.kind for v in values] == [Kind.TENSOR, Kind.TENSOR, Kind.TENSOR, Kind.UNKNOWN]


def test_an_unresolved_import_with_the_same_name_is_unknown(tmp_path: Path) -> None:
    files = {
        "main.py": """
            from elsewhere import split

            a, b = split(x, y)
            probe(a)
        """
    }
    values = project_probes(files, "main.py", tmp_path)
    assert [v.kind for v in values] == [Kind.UNKNOWN]


def test_an_annotated_optimizer_stored_on_self() -> None:
    """l2hmc-qcd's Trainer: ``__init__(self, optimizer: optim.Optimizer)``
    stores it, a method uses ``self.optimizer``; near misses: the same
    without the annotation, or annotated as something else."""
    ctx, calls = probe_calls(
        """
        from typing import Any
        from torch import optim

        class Trainer:
            def __init__(self, optimizer: optim.Optimizer, other, thing: Any):
                self.optimizer = optimizer
                self.other = other
                self.thing = thing

            def step(self):
                probe(self.optimizer)
                probe(self.other)
                probe(self.thing)
        """
    )
    loops = ctx.values.loops
    verdicts = [loops.optimizer(Ref(c.args[0], c, None)) for c in calls]
    assert verdicts == [True, False, False]
