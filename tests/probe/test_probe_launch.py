"""The experiment scripts run the same whatever the caller's Python settings:
the VS Code client starts the server with PYTHONSAFEPATH=1, which once kept
the scripts from importing their helper module (`_common`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.probe.helpers import experiment_of
from torchtrap.probe.process import _OWN_ROOT, script_command, script_env

SERVER = Path(__file__).resolve().parents[2] / "server"


def test_cli_probe_confirms_tt101_under_pythonsafepath() -> None:
    env = {**os.environ, "PYTHONSAFEPATH": "1", "PYTHONPATH": str(SERVER)}
    proc = subprocess.run(
        [sys.executable, "-m", "torchtrap", "probe", "--json", "--only", "worker-rng"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    exp = experiment_of(doc, "worker-rng")
    assert exp["verdict"] == "confirmed", exp["summary"]
    assert exp["rules"]["TT101"] == "confirmed"
    assert doc["rules"]["TT101"]["verdict"] == "confirmed"


def _helper_and_script(tmp_path: Path) -> Path:
    (tmp_path / "_helper.py").write_text("VALUE = 'from the helper'\n")
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\nfrom _helper import VALUE\nprint(VALUE, sys.argv[1:], __name__)\n"
    )
    return script


@pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH is Python 3.11+")
def test_script_command_imports_its_neighbours_under_pythonsafepath(tmp_path: Path) -> None:
    script = _helper_and_script(tmp_path)
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    plain = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, check=False
    )
    assert "No module named '_helper'" in plain.stderr  # what broke the probe in VS Code
    ours = subprocess.run(
        script_command(sys.executable, script, ["--flag", "x"]),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path.parent,
        check=False,
    )
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip() == "from the helper ['--flag', 'x'] __main__"


def test_script_env_drops_the_servers_own_settings() -> None:
    keep = os.path.join(os.sep, "opt", "user", "site")
    base = {
        "PYTHONSAFEPATH": "1",
        "PYTHONINSPECT": "1",
        "PYTHONPATH": os.pathsep.join([str(_OWN_ROOT), keep]),
        "HOME": "/home/u",
    }
    env = script_env(base)
    assert "PYTHONSAFEPATH" not in env and "PYTHONINSPECT" not in env
    assert env["PYTHONPATH"] == keep  # the user's own entries stay
    assert env["HOME"] == "/home/u"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert "PYTHONPATH" not in script_env({"PYTHONPATH": str(_OWN_ROOT)})
