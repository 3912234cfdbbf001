"""Observation hooks that `torchtrap run` installs in the user's interpreter.

This package runs inside the user's Python, which has torch but not
torchtrap: it imports only the standard library and torch (numpy only when
the script already imported it), and only relative imports among itself.
The launcher copies it into a temporary folder as `_torchtrap_run_hooks`
and starts `boot.main`, which installs the hooks when the script imports
torch and then runs the script unchanged.

The hooks only read: no random number is drawn, no tensor is written, no
argument is changed. What they see goes, as JSON lines, into one file per
process in the run's temporary folder (see `events.py`); the launcher turns
those into findings.
"""
