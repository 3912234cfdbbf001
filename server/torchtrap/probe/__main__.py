"""`python -m torchtrap.probe`: the same as `torchtrap probe`, usable before
(or without) the main CLI."""

from __future__ import annotations

import argparse

from torchtrap.probe.command import add_arguments, run

parser = argparse.ArgumentParser(prog="python -m torchtrap.probe")
add_arguments(parser)
raise SystemExit(run(parser.parse_args()))
