from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))


@pytest.fixture(autouse=True)
def _cache_outside_the_repo(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`torchtrap check` writes .torchtrap_cache/ in the working folder: not in the repo."""
    monkeypatch.setenv("TORCHTRAP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
