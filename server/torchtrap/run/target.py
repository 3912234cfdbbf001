"""What `torchtrap run` runs: a script or a module. Its own module so that
the launcher and the report both import it and neither imports the other
backwards (imports point one way: command -> launcher -> report)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A script path, or a module name (`-m`)."""

    value: str
    module: bool = False

    def describe(self) -> str:
        return f"-m {self.value}" if self.module else self.value
