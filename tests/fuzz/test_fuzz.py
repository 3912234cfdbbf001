"""Property tests over generated and mutated programs (see strategies.py
for the inputs and the profiles, properties.py for what is checked)."""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.properties import CONFIG, check_bytes, check_findings, check_text, no_rule_failures
from tests.fuzz.strategies import (
    PROFILE,
    cells,
    mutated_bytes,
    mutated_source,
    pitfall_programs,
    scaled,
)
from torchtrap import cli
from torchtrap.notebook import fix_cells, lint_cells
from torchtrap.rules import ALL_RULES

# Generated programs compile to SyntaxWarnings (`1()`): the user's business, not ours.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


@PROFILE
@given(mutated_source())
def test_mutated_sources(text: str) -> None:
    check_text(text)


@PROFILE
@given(pitfall_programs())
def test_pitfall_programs(text: str) -> None:
    check_text(text)


@scaled(0.5)
@given(mutated_bytes())
def test_mutated_bytes(data: bytes) -> None:
    check_bytes(data)


@scaled(0.25)
@given(hypothesmith.from_grammar() | hypothesmith.from_node())
def test_generated_programs(text: str) -> None:
    check_text(text)


@scaled(0.25)
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    check_text(text, fixes=False)


@scaled(0.5)
@given(cells())
def test_notebook_cells(texts: list[str]) -> None:
    with no_rule_failures():
        result = lint_cells(texts, "fuzz.ipynb", CONFIG)
        for finding in result.findings:
            located = result.module.to_cell(finding.range.start)
            assert located is not None or finding.is_syntax_error, finding
        fixed, _ = fix_cells(texts, "fuzz.ipynb", CONFIG, unsafe=True)
        again, count = fix_cells(fixed, "fuzz.ipynb", CONFIG, unsafe=True)
    assert (again, count) == (fixed, 0)
    check_findings(result.module.source, [f for f in result.findings if not f.is_syntax_error])


def test_every_rule_is_fuzzed() -> None:
    from tests.fuzz.strategies import SEEDS, SNIPPETS

    # Each rule contributes seeds (its examples) and snippets to splice in.
    assert len(SEEDS) >= sum(len(r.valid) + len(r.invalid) for r in ALL_RULES)
    assert SNIPPETS


@settings(PROFILE, max_examples=max(3, PROFILE.max_examples // 66))
@given(st.lists(mutated_bytes() | mutated_source().map(str.encode), min_size=30, max_size=40))
def test_check_serial_and_parallel_agree(files: list[bytes]) -> None:
    # check -j 1 lints in process; -j 2 in a pool (findings and fixes pickled).
    with tempfile.TemporaryDirectory() as tmp:
        for i, data in enumerate(files):
            Path(tmp, f"m{i}.py").write_bytes(data)
        outputs = []
        for jobs in ("1", "2"):
            for mode in (["--format", "json"], ["--diff", "--unsafe-fixes"]):
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = cli.main(["check", tmp, "-j", jobs, "--color", "never", *mode])
                assert code in (0, 1), err.getvalue()
                outputs.append(out.getvalue())
    assert outputs[:2] == outputs[2:]
