"""Errors the probe reports to the user as one clear message (exit code 2)."""

from __future__ import annotations


class ProbeError(Exception):
    """The probe could not run: bad interpreter, bad option, torch missing."""


class TorchMissing(ProbeError):
    """The chosen interpreter has no torch; the message names the install command."""
