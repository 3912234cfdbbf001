from __future__ import annotations

from pathlib import Path

from torchtrap.config import (
    Config,
    from_table,
    load_config,
    parse_version,
    pinned_torch_version,
    resolve_torch_version,
)
from torchtrap.findings import Severity


def test_unknown_and_bad_keys_warn_not_crash() -> None:
    cfg = from_table({"selct": ["TT1"], "severity": {"TT101": "loud"}, "ignore": 5})
    text = "\n".join(cfg.warnings)
    assert "unknown key 'selct'" in text and "did you mean 'select'" in text
    assert "severity for 'TT101'" in text
    assert "ignore must be a list" in text


def test_select_ignore_per_file_and_severity(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchtrap]\nselect = ["TT1", "TT201"]\nignore = ["TT103"]\n'
        'exclude = ["third_party"]\n'
        '[tool.torchtrap.per-file-ignores]\n"tests/*" = ["TT101"]\n'
        '[tool.torchtrap.severity]\nTT1 = "info"\nTT101 = "Error"\n',
        encoding="utf-8",
    )
    (tmp_path / "pkg").mkdir()
    cfg = load_config(tmp_path / "pkg")
    assert cfg.root == tmp_path
    assert cfg.is_enabled("TT101", str(tmp_path / "pkg" / "a.py"))
    assert not cfg.is_enabled("TT101", str(tmp_path / "tests" / "test_a.py"))
    assert not cfg.is_enabled("TT103") and not cfg.is_enabled("TT202")
    assert cfg.severity_for("TT101", Severity.WARNING) is Severity.ERROR
    assert cfg.severity_for("TT102", Severity.WARNING) is Severity.INFO
    assert cfg.is_excluded(tmp_path / "third_party" / "x.py")
    assert cfg.merged(select=["TT202"]).is_enabled("TT202")


def test_broken_pyproject_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchtrap\n", encoding="utf-8")
    assert load_config(tmp_path) == Config()


def test_torch_version_resolution(tmp_path: Path) -> None:
    assert parse_version("1.8.1+cu111") == (1, 8, 1)
    assert resolve_torch_version(Config(torch_version="1.8"), None) == (1, 8)
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("numpy\ntorch==1.7.1\n", encoding="utf-8")
    assert pinned_torch_version(tmp_path) == "1.7.1"
    (tmp_path / "requirements.txt").write_text("torch>=1.7\n", encoding="utf-8")
    pinned_torch_version.cache_clear()
    assert pinned_torch_version(tmp_path) is None


def test_severity_names_of_pyproject_and_editor_are_both_accepted() -> None:
    # pyproject documents error|warning|info|hint; VS Code's names work too.
    names = {"error": "Error", "warning": "Warning", "info": "Information", "hint": "Hint"}
    for short, long in names.items():
        table = {"severity": {"TT1": short, "TT2": long, "TT3": long.upper()}}
        cfg = from_table(table)
        assert cfg.warnings == ()
        assert {sev for _, sev in cfg.severity} == {Severity(short)}


def test_unsafe_fixes_key() -> None:
    assert from_table({"unsafe-fixes": True}).unsafe_fixes is True
    assert from_table({}).unsafe_fixes is False
    bad = from_table({"unsafe-fixes": "yes"})
    assert bad.unsafe_fixes is False and "unsafe-fixes must be true or false" in bad.warnings[0]
    assert Config().merged(unsafe_fixes=True).unsafe_fixes is True
    assert Config(unsafe_fixes=True).merged().unsafe_fixes is True


def test_find_pyproject_shares_what_it_learnt_walking_up(tmp_path: Path) -> None:
    """The answers ``ConfigLookup`` keeps for folders walked before are the
    ones a fresh walk gives: the nearest [tool.torchtrap] above each folder."""
    from torchtrap.config import find_pyproject

    (tmp_path / "pyproject.toml").write_text("[tool.torchtrap]\n", encoding="utf-8")
    inner = tmp_path / "a" / "inner"
    (inner / "deep" / "er").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    (tmp_path / "a" / "pyproject.toml").write_text("[tool.torchtrap]\nselect = []\n")
    known: dict[Path, Path | None] = {}
    folders = [inner / "deep" / "er", tmp_path / "a" / "b" / "c", inner, tmp_path, inner / "deep"]
    for folder in folders:
        assert find_pyproject(folder, known) == find_pyproject(folder)
    assert find_pyproject(inner / "deep" / "er", known) == tmp_path / "a" / "pyproject.toml"
    assert find_pyproject(tmp_path, known) == tmp_path / "pyproject.toml"
    assert known[(inner / "deep").resolve()] == tmp_path / "a" / "pyproject.toml"
