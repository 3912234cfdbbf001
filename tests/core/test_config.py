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
