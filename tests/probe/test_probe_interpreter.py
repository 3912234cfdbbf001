"""Choosing the interpreter: no torch, no such file, not a Python."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchtrap.probe import ProbeError, TorchMissing, run_probe
from torchtrap.probe.command import add_arguments, run
from torchtrap.probe.interpreter import inspect_interpreter, resolve_python


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh venv (no pip, no system site-packages): it cannot see torch."""
    where = tmp_path_factory.mktemp("notorch") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120
    )
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    probe = subprocess.run([str(python), "-c", "import torch"], capture_output=True, check=False)
    if probe.returncode == 0:  # e.g. torch on PYTHONPATH: cannot build the case here
        pytest.skip("torch is importable even from a bare venv")
    return str(python)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_missing_torch_names_interpreter_and_install_command(python_without_torch: str) -> None:
    with pytest.raises(TorchMissing) as info:
        run_probe(python=python_without_torch)
    message = str(info.value)
    assert f"torch is not installed in {python_without_torch}" in message
    assert f"{python_without_torch} -m pip install torch" in message


def test_cli_missing_torch_exits_2_without_traceback(
    python_without_torch: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(_args("--python", python_without_torch)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "torch is not installed" in err and "pip install torch" in err
    assert "Traceback" not in err


def test_this_interpreter_has_torch() -> None:
    info = inspect_interpreter(None)
    assert info.path == sys.executable
    assert info.torch_version.startswith("2.13.0")
    assert info.cuda_available is False
    assert info.cuda_note == f"torch {info.torch_version} is a CPU-only build"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/no/such/python", "no Python interpreter at /no/such/python"),
        ("no-such-python-xyz", "no Python interpreter named 'no-such-python-xyz' on PATH"),
        ("", "--python needs a path"),
    ],
)
def test_bad_python_paths(value: str, expected: str) -> None:
    with pytest.raises(ProbeError, match=expected):
        resolve_python(value)


def test_directory_and_non_executable_are_refused(tmp_path: Path) -> None:
    plain = tmp_path / "python"
    plain.write_text("not a program")
    for path in (tmp_path, plain):
        with pytest.raises(ProbeError, match="is not an executable Python interpreter"):
            resolve_python(str(path))


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as the fake interpreter")
def test_program_that_is_not_python(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'I am not Python' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(ProbeError, match="did not run as a Python interpreter: I am not Python"):
        inspect_interpreter(str(fake))


def test_venv_symlink_is_kept(tmp_path: Path) -> None:
    """Resolving a venv's python symlink would lose the venv's packages."""
    link = tmp_path / "python"
    link.symlink_to(sys.executable)
    assert resolve_python(str(link)) == str(link)
