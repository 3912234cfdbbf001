"""Fixtures for the language-server tests (helpers live in lsp_harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    # A project folder whose pyproject.toml does not configure torchtrap.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path
