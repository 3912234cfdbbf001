from __future__ import annotations

import pytest

from torchtrap.fixes.apply import apply_edits
from torchtrap.source import SourceText
from torchtrap.suppressions import ignore_edit


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x.clamp(min=0)", "x.clamp(min=0)  # torchtrap: ignore[TT202]"),
        ("x.clamp(min=0)   ", "x.clamp(min=0)  # torchtrap: ignore[TT202]"),
        (
            "x.clamp(min=0)  # torchtrap: ignore[TT101]",
            "x.clamp(min=0)  # torchtrap: ignore[TT101, TT202]",
        ),
        ("x.clamp(min=0)  # noqa: E501", "x.clamp(min=0)  # noqa: E501, TT202"),
        (
            "x.clamp(min=0)  # torchtrap: ignore[TT202]",
            "x.clamp(min=0)  # torchtrap: ignore[TT202]",
        ),
        ("x.clamp(min=0)  # noqa", "x.clamp(min=0)  # noqa"),
        ("x.clamp(min=0)  # 中文注释", "x.clamp(min=0)  # 中文注释  # torchtrap: ignore[TT202]"),
    ],
)
def test_ignore_edit_merges_into_existing_comments(line: str, expected: str) -> None:
    text = f"import torch\n{line}\ny = 1\n"
    edit = ignore_edit(SourceText(text), 2, "TT202")
    assert apply_edits(text, [edit]) == f"import torch\n{expected}\ny = 1\n"
