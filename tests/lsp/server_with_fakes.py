"""Start `torchtrap lsp` (stdio) with the test-only rules registered."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent / "server")]

import fake_rules  # noqa: E402

fake_rules.install()

from torchtrap.lsp import main  # noqa: E402

# Guarded: the project index's worker process (spawn) imports this script.
if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
