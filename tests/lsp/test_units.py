"""Fast checks of the server's pure parts (no subprocess)."""

from __future__ import annotations

import io
import logging
import os
import random

import pytest
from lsprotocol import types

from torchtrap.config import Config
from torchtrap.findings import Position
from torchtrap.lsp import configure_logging
from torchtrap.lsp.actions import minimal_edit
from torchtrap.lsp.carry import CarryStore, shift
from torchtrap.lsp.documents import LineShift, TextDocument
from torchtrap.lsp.positions import (
    UTF8,
    UTF16,
    UTF32,
    choose_encoding,
    from_client_character,
    split_lines,
    to_client_character,
)
from torchtrap.lsp.settings import Settings, parse_settings
from torchtrap.notebook import join_cells, lint_cells, mask_ipython


def test_encoding_preference() -> None:
    assert choose_encoding(None) == UTF16
    assert choose_encoding(["utf-16", "utf-8"]) == UTF8
    assert choose_encoding(["utf-32", "utf-16"]) == UTF32
    assert choose_encoding(["latin-1"]) == UTF16


def test_columns_round_trip() -> None:
    rng = random.Random(0)
    alphabet = "ab\t 数据😀é𝔘"
    for _ in range(300):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        for encoding in (UTF8, UTF16, UTF32):
            for column in range(len(line) + 1):
                units = to_client_character(line, column, encoding)
                assert from_client_character(line, units, encoding) == column
    # Inside an emoji's units: the end of that character.
    assert from_client_character("😀x", 1, UTF16) == 1
    assert from_client_character("😀x", 2, UTF8) == 1


def test_lines_split_like_lsp() -> None:
    assert split_lines("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c", "d", "e", ""]


def test_incremental_changes_with_crlf_and_wide_characters() -> None:
    doc = TextDocument("file:///x.py", "a = '😀'\r\nb = 2\r\n", 1)
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 7), types.Position(1, 1)), text="'\r\nc"
    )
    assert doc.apply(change, UTF16) == LineShift(0, 1, 0)
    assert doc.text == "a = '😀'\r\nc = 2\r\n"
    change = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 10), types.Position(0, 10)), text="  # 注\r\nx"
    )
    doc.apply(change, UTF8)  # 10 bytes = after the closing quote
    assert doc.text == "a = '😀'  # 注\r\nx\r\nc = 2\r\n"


def test_minimal_edit_touches_only_the_difference() -> None:
    old = "x = 1\ndanger(1)  # 😀\ny = 2\n"
    new = "x = 1\nsafe(1)  # 😀\ny = 2\n"
    edit = minimal_edit(old, new, split_lines(old), UTF16)
    assert edit.range == types.Range(types.Position(1, 0), types.Position(1, 6))
    assert edit.new_text == "safe"


def test_carried_diagnostics_move_with_edits() -> None:
    def diag(line: int) -> types.Diagnostic:
        rng = types.Range(types.Position(line, 0), types.Position(line, 3))
        return types.Diagnostic(range=rng, message=str(line))

    kept = shift([diag(1), diag(5), diag(9)], LineShift(4, 5, 2), "file:///x.py")
    assert [d.range.start.line for d in kept] == [1, 11]
    assert shift([diag(1)], None, "file:///x.py") == []


@pytest.mark.parametrize(
    ("start", "end", "text", "expected"),
    [
        ((1, 0), (1, 0), "z = 0\n", LineShift(1, 0, 1)),  # lines typed above line 1
        ((1, 5), (1, 5), "\nz = 0", LineShift(2, 1, 1)),  # Enter at the end of line 1
        ((1, 2), (1, 2), "\n", LineShift(1, 1, 1)),  # Enter inside line 1: edited
        ((1, 0), (2, 0), "", LineShift(1, 1, -1)),  # line 1 deleted
        ((1, 2), (2, 0), "", LineShift(1, 2, -1)),  # line 2 joined to line 1
    ],
    ids=["above", "below", "split", "delete", "join"],
)
def test_line_shifts_name_only_edited_lines(
    start: tuple[int, int], end: tuple[int, int], text: str, expected: LineShift
) -> None:
    """A line that only moves (lines typed above or below it) is not an
    edited line: a finding carried across a syntax error moves with it."""
    doc = TextDocument("file:///x.py", "x = 1\ny = 2\nw = 3\n", 1)
    rng = types.Range(types.Position(*start), types.Position(*end))
    change = types.TextDocumentContentChangePartial(range=rng, text=text)
    assert doc.apply(change, UTF16) == expected


def test_carried_related_locations_move_with_edits() -> None:
    uri = "file:///x.py"

    def at(line: int) -> types.Range:
        return types.Range(types.Position(line, 0), types.Position(line, 3))

    def related(line: int, where: str = uri) -> types.DiagnosticRelatedInformation:
        return types.DiagnosticRelatedInformation(types.Location(where, at(line)), str(line))

    other = "file:///y.py"
    diag = types.Diagnostic(
        range=at(6), message="", related_information=[related(0), related(4), related(2, other)]
    )
    # Two lines typed above line 0; line 4 edited.
    (moved,) = shift([diag], LineShift(0, -1, 2), uri)
    assert moved.range.start.line == 8
    assert [
        (r.location.uri, r.location.range.start.line) for r in moved.related_information or []
    ] == [(uri, 2), (uri, 6), (other, 2)]
    (kept,) = shift([diag], LineShift(4, 4, 0), uri)
    assert [r.message for r in kept.related_information or []] == ["0", "2"]


def test_carried_findings_of_another_cell_follow_this_one() -> None:
    """A broken cell keeps its findings; one of them points into cell 1,
    where lines are then typed above the pointed-at line."""
    first, second = "vscode-notebook-cell:/n.ipynb#C0", "vscode-notebook-cell:/n.ipynb#C1"
    rng = types.Range(types.Position(1, 0), types.Position(1, 3))
    note = types.DiagnosticRelatedInformation(types.Location(first, rng), "imported here")
    store = CarryStore()
    store.remember(second, [types.Diagnostic(range=rng, message="", related_information=[note])])
    store.moved(first, LineShift(0, -1, 2))
    ((moved,),) = [d.related_information for d in store.get(second)]
    assert moved.location.range.start.line == 3
    store.moved(first, None)  # lines moved in a way not known: no pointer left
    assert [d.related_information for d in store.get(second)] == [None]


def test_ipython_is_masked_with_same_widths() -> None:
    cell = "%matplotlib inline\nx = !ls -la\n    !echo hi\nobj?\ny = 1"
    masked = mask_ipython(cell)
    assert [len(line) for line in masked.split("\n")] == [len(x) for x in cell.split("\n")]
    assert masked.split("\n")[-1] == "y = 1"
    assert mask_ipython("%%bash\necho hi") == "\n"


def test_notebook_positions_and_broken_cells() -> None:
    cells = ["import os", "def f(:\n  pass", "x = 1\ny = 2"]
    module = join_cells(cells)
    assert module.to_cell(Position(4, 2)) == (2, Position(1, 2))
    assert module.from_cell(2, Position(2, 0)) == Position(5, 0)
    result = lint_cells(cells, "nb.ipynb")
    assert result.broken == frozenset({1})
    (error,) = result.findings
    assert error.code == "TT000" and module.to_cell(error.range.start)[0] == 1  # type: ignore[index]


def test_settings_parsing_is_forgiving() -> None:
    settings = parse_settings(
        {
            "torchtrap": {
                "run": "sometimes",
                "select": ["tt1", " "],
                "severity": {"tt2": "Information", "TT3": "loud"},
                "probe": {"timeout": -1},
                "showNotifications": True,
                "debounceMs": 0,
            }
        }
    )
    assert settings.run == "onType" and settings.select == ("TT1",)
    assert dict(settings.severity) == {"TT2": settings.severity[0][1]}
    assert settings.probe_timeout == Settings().probe_timeout
    assert settings.show_notifications == "always" and settings.debounce_ms == 0
    assert len(settings.problems) == 3
    assert Settings(docs_base_url="https://h/{code}.html").docs_url("TT1") == "https://h/TT1.html"


def test_settings_severity_names_and_unsafe_fixes() -> None:
    # The pyproject names (documented) and VS Code's names both work.
    raw = {"severity": {"TT1": "info", "TT2": "Information", "TT3": "hint", "TT4": "Hint"}}
    settings = parse_settings(raw)
    assert settings.problems == ()
    assert [sev.value for _, sev in settings.severity] == ["info", "info", "hint", "hint"]
    assert settings.unsafe_fixes is None  # not set: pyproject decides
    on = parse_settings({"unsafeFixes": True})
    assert on.unsafe_fixes is True and on.apply(Config()).unsafe_fixes is True
    assert parse_settings({"debounceMs": 5}, base=on).unsafe_fixes is True  # kept
    assert parse_settings({"unsafeFixes": "yes"}).problems


def test_lint_keeps_no_module_alive() -> None:
    """The server lints thousands of times: nothing may outlive a result."""
    import ast
    import gc
    import warnings
    from pathlib import Path

    from torchtrap.engine import lint

    example = Path(__file__).resolve().parents[2] / "examples" / "tt101_stored_rng.py"
    source = example.read_text(encoding="utf-8")

    def live_modules() -> int:
        gc.collect()
        # isinstance() on every live object also touches torch's deprecated
        # module aliases (other tests import torch), which warn.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return sum(type(o) is ast.Module for o in gc.get_objects())

    assert lint(source, str(example))  # warm up: lazy imports may parse templates
    before = live_modules()
    for _ in range(3):
        assert lint(source, str(example))
    assert live_modules() == before


@pytest.mark.parametrize(("level", "pygls_shown"), [("INFO", False), ("DEBUG", True)])
def test_pygls_noise_stays_out_of_an_info_log(level: str, pygls_shown: bool) -> None:
    """pygls logs every message's JSON at INFO ("Sending data: ..."): the
    server log at INFO keeps only our own lines; DEBUG shows everything."""
    root, pygls = logging.getLogger(), logging.getLogger("pygls")
    saved = (root.level, pygls.level)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    try:
        configure_logging(handler, level)
        rpc = logging.getLogger("pygls.protocol.json_rpc")
        rpc.info("Sending data: {}")
        rpc.warning("a pygls warning")
        for _ in range(3):  # VS Code cancels answered requests on cursor moves
            rpc.warning('Cancel notification for unknown message id "%s"', 7)
        logging.getLogger("torchtrap.lsp").info("linted a.py")
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        pygls.setLevel(saved[1])
    log = stream.getvalue()
    assert "linted a.py" in log and "a pygls warning" in log
    assert ("Sending data" in log) is pygls_shown
    assert log.count("Cancel notification") == (3 if pygls_shown else 0)


def test_the_reads_index_finds_what_each_reads_would() -> None:
    """Workspace mode asks which closed files read a changed summary; the
    inverted index answers as testing each file's reads does, after files
    are recorded, re-recorded and forgotten."""
    from tests.core.projects import PROJECTS, index
    from torchtrap.lsp.workspace_diagnostics import ReadsIndex
    from torchtrap.project.index import Change, Reads

    project = index(PROJECTS / "flat")
    summaries = list(project)
    paths = [os.path.abspath(s.path) for s in summaries]
    refs = sorted({ref for s in summaries for ref in project.provided(s)})
    rng = random.Random(1)
    table = ReadsIndex()
    reads: dict[str, Reads] = {}
    for step in range(200):
        path = f"/closed/{rng.randrange(30)}.py"
        if step % 7 == 0:
            table.forget(path)
            reads.pop(path, None)
        else:
            reads[path] = Reads(
                paths=set(rng.sample(paths, rng.randrange(3))),
                refs=set(rng.sample(refs, rng.randrange(4))),
                all_loaders=rng.random() < 0.1,
            )
            table.record(path, reads[path])
        for summary in summaries:
            change = Change(project, summary)
            brute = {p for p, r in reads.items() if r.touched(change)}
            assert table.readers([change]) == brute
    assert len(table) == len(reads)
