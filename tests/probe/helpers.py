"""Helpers shared by the probe's tests."""

from __future__ import annotations

from typing import Any


def experiment_of(doc: dict[str, Any], experiment_id: str) -> dict[str, Any]:
    return next(e for e in doc["experiments"] if e["id"] == experiment_id)
