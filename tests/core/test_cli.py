"""The CLI end to end, in process, with a test-only rule added to the registry."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchtrap import cli
from torchtrap.rules import ALL_RULES, RULES_BY_CODE

from .fake_rules import FlagPrintRule


@pytest.fixture(autouse=True)
def fake_rule() -> Iterator[None]:
    ALL_RULES.append(FlagPrintRule)
    RULES_BY_CODE[FlagPrintRule.code] = FlagPrintRule
    try:
        yield
    finally:
        ALL_RULES.remove(FlagPrintRule)
        del RULES_BY_CODE[FlagPrintRule.code]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["check", "--select", "TT990", "--color", "never", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\nprint(x)  # 中文\n", encoding="utf-8")
    (tmp_path / "pkg" / "clean.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n", encoding="utf-8")
    for skipped in (".venv", "node_modules", ".hidden", "build"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "s.py").write_text("print(1)\n", encoding="utf-8")
    return tmp_path


def test_text_output_exit_codes_and_skips(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(tree))
    assert code == 1
    assert f"{tree / 'pkg' / 'a.py'}:2:1: TT990 [*] print found" in out
    assert "2 | print(x)  # 中文" in out and "^^^^^ TT990" in out
    assert "= help: Use log (safe fix)" in out
    assert f"{tree / 'pkg' / 'broken.py'}:1:7: SyntaxError" in out
    assert "s.py" not in out  # .venv, node_modules, hidden and build folders are skipped
    assert "Found 2 issues." in out
    assert run(capsys, str(tree), "--exit-zero")[0] == 0
    assert run(capsys, str(tree / "pkg" / "clean.py"))[:2] == (0, "All checks passed!\n")


def test_missing_path_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope"))
    assert code == 2 and "no such file or folder" in err


def test_fix_and_diff(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tree / "pkg" / "a.py"
    code, out, err = run(capsys, str(target), "--diff")
    assert code == 1 and "-print(x)  # 中文" in out and "+log(x)  # 中文" in out
    assert target.read_text(encoding="utf-8") == "x = 1\nprint(x)  # 中文\n"
    code, out, _ = run(capsys, str(target), "--fix")
    assert code == 0 and "Fixed 1 issue." in out
    assert target.read_text(encoding="utf-8") == "x = 1\nlog(x)  # 中文\n"


def test_json_sarif_github(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, str(tree / "pkg"), "--format", "json")
    doc = json.loads(out)
    codes = sorted(f["code"] for f in doc["findings"])
    assert codes == ["TT000", "TT990"]
    tt990 = next(f for f in doc["findings"] if f["code"] == "TT990")
    assert tt990["range"]["start"] == {"line": 2, "column": 0}
    assert tt990["fixes"][0]["edits"][0]["new_text"] == "log"

    _, out, _ = run(capsys, str(tree / "pkg"), "--format", "sarif")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0"
    run0 = sarif["runs"][0]
    assert run0["tool"]["driver"]["name"] == "torchtrap"
    assert {r["id"] for r in run0["tool"]["driver"]["rules"]} >= {"TT990"}
    result = next(r for r in run0["results"] if r["ruleId"] == "TT990")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 6}
    assert result["level"] == "warning"
    assert result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"] == {
        "text": "log"
    }

    _, out, _ = run(capsys, str(tree / "pkg" / "a.py"), "--format", "github")
    assert out.startswith("::warning file=")
    assert ",line=2,col=1,endLine=2,endColumn=6,title=TT990 (flag-print)::TT990 print found" in out


def test_parallel_matches_serial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(f"print({i})\n" * (i % 3), encoding="utf-8")
    serial = json.loads(run(capsys, str(tmp_path), "-j", "1", "--format", "json")[1])
    parallel = json.loads(run(capsys, str(tmp_path), "-j", "2", "--format", "json")[1])
    assert serial == parallel and len(serial["findings"]) == 39


def test_statistics_and_stdin(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, out, _ = run(capsys, str(tree), "--statistics")
    assert "    1  TT990  [*] flag-print" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO("print(1)\n"))
    code, out, _ = run(capsys, "-", "--stdin-filename", "x.py")
    assert code == 1 and "x.py:1:1: TT990" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO("print(1)\n"))
    code, out, _ = run(capsys, "-", "--fix")
    assert out == "log(1)\n"


def test_rule_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rule", "TT990"]) == 0
    assert capsys.readouterr().out.startswith("# TT990 `flag-print`")
    assert cli.main(["rule", "TT999"]) == 2
    assert "unknown rule" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["flag", "pyproject", "neither"])
def test_unsafe_fixes_by_flag_or_pyproject(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    table = "unsafe-fixes = true\n" if how == "pyproject" else ""
    (tmp_path / "pyproject.toml").write_text(f"[tool.torchtrap]\n{table}", encoding="utf-8")
    path = tmp_path / "a.py"
    # TT202's only fix here is unsafe: the in-place twin.
    path.write_text("import torch\n\n\ndef f(s, m):\n    s.masked_fill(m, 0)\n", encoding="utf-8")
    flags = ["--unsafe-fixes"] if how == "flag" else []
    cli.main(["check", str(path), "--fix", *flags])
    capsys.readouterr()
    fixed = "s.masked_fill_(m, 0)" in path.read_text(encoding="utf-8")
    assert fixed is (how != "neither")
