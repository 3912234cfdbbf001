"""`torchtrap run` as a launcher: what passes through unchanged (output,
argv, exit status, Ctrl+C), bad input, and that the hooks only observe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.run.helpers import SCRIPTS, found, line_of, run_cli, torchtrap_env


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_output_argv_exit_status_and_main_pass_through(tmp_path: Path) -> None:
    write(
        tmp_path,
        "hello.py",
        """
        import os, sys
        print("argv", sys.argv)
        print("path0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
        print("cwd-first", sys.path[0] == "")
        print("name", __name__)
        import torch
        print("torchtrap", any(m.startswith("torchtrap") for m in sys.modules))
        print("to stderr", file=sys.stderr)
        sys.exit(3)
        """,
    )
    proc, doc = run_cli("hello.py", "--lr", "3", "-m", "x", cwd=tmp_path)
    assert proc.returncode == 3
    lines = proc.stdout.splitlines()
    assert lines[0] == "argv ['hello.py', '--lr', '3', '-m', 'x']"
    assert lines[1:] == ["path0 True", "cwd-first False", "name __main__", "torchtrap False"]
    assert "to stderr" in proc.stderr
    assert doc is not None and doc["exit_code"] == 3 and doc["findings"] == []


def test_module_mode(tmp_path: Path) -> None:
    write(tmp_path, "pkg/__init__.py", "")
    write(
        tmp_path,
        "pkg/train.py",
        """
        import sys
        import torch
        print("argv", sys.argv[1:], sys.argv[0].endswith("train.py"), __name__)
        """,
    )
    proc, doc = run_cli("pkg.train", "--epochs", "1", cwd=tmp_path, options=("-m",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "argv ['--epochs', '1'] True __main__"
    assert doc is not None and doc["command"] == ["-m pkg.train", "--epochs", "1"]


def test_stop_after_steps() -> None:
    proc, doc = run_cli("tt215_fires.py", options=("--stop-after-steps", "2"))
    assert proc.returncode == 0, proc.stderr
    assert doc is not None
    assert doc["steps"] == 2 and doc["stopped_after_steps"] == 2
    assert proc.stdout.splitlines() == [proc.stdout.splitlines()[0]]  # step 0 printed, not 1
    assert [f["code"] for f in doc["findings"]] == ["TT215"]
    assert "stopped after 2 optimizer steps" in proc.stderr


def test_crash_passes_the_traceback_and_keeps_the_findings(tmp_path: Path) -> None:
    script = write(
        tmp_path,
        "crash.py",
        """
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(2):
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
        raise ValueError("boom")
        """,
    )
    proc, doc = run_cli("crash.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert 'File "' + str(script) + '", line 8, in <module>' in proc.stderr
    assert proc.stderr.count("ValueError: boom") == 1
    assert "runpy" not in proc.stderr and "_torchtrap_run_hooks" not in proc.stderr
    assert doc is not None and doc["crashed"] == "ValueError"
    assert found(doc) == [("TT215", 7, "SGD")]


def test_no_torch_in_the_interpreter(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    write(tmp_path, "train.py", "import torch\n")
    proc, doc = run_cli("train.py", cwd=tmp_path, options=("--python", str(python)))
    assert proc.returncode == 2
    assert f"torch is not installed in {python}" in proc.stderr
    assert "-m pip install torch" in proc.stderr and "point torchtrap run at" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert doc is None


def test_bad_command_lines(tmp_path: Path) -> None:
    for options, target, message in (
        ((), "missing.py", "missing.py: no such file"),
        (("--bogus",), "x.py", "unknown option --bogus"),
        (("--python", str(tmp_path / "nope")), "x.py", "no Python interpreter at"),
    ):
        write(tmp_path, "x.py", "pass\n")
        proc, _ = run_cli(target, cwd=tmp_path, options=options)
        assert proc.returncode == 2, (options, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr


def test_no_dataloader_and_no_torch_import(tmp_path: Path) -> None:
    write(tmp_path, "plain.py", "print(sum(range(10)))\n")
    proc, doc = run_cli("plain.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "45\n"
    assert doc is not None and doc["findings"] == []
    assert doc["notes"] == ["the script never imported torch: nothing was checked"]


def test_attributes_that_raise_and_huge_graphs() -> None:
    proc, doc = run_cli("hostile_dataset.py")
    assert proc.returncode == 0, proc.stderr
    assert doc is not None
    script = SCRIPTS / "hostile_dataset.py"
    assert found(doc) == [
        ("TT101", line_of(script, "self.rng = np.random.default_rng(0)"), "dataset.rng"),
        ("TT103", line_of(script, "self.mean = fake_cuda("), "dataset.mean"),
    ]
    cuda = next(f for f in doc["findings"] if f["code"] == "TT103")
    assert cuda["measured"]["truncated"] == "stopped after 20000 objects"
    assert "getattr was called" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_fork_and_torch_multiprocessing_spawn(tmp_path: Path) -> None:
    write(
        tmp_path,
        "procs.py",
        """
        import os
        import torch
        import torch.multiprocessing as mp

        def work(rank):
            print("spawned", rank, flush=True)

        if __name__ == "__main__":
            print("unbuffered", os.environ.get("PYTHONUNBUFFERED"), flush=True)
            pid = os.fork()
            if pid == 0:
                print("forked child", flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
            mp.spawn(work, nprocs=2)
            print("done")
        """,
    )
    proc, doc = run_cli("procs.py", cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert "forked child" in out and "done" in out
    # Two processes' lines: each one write (stdout buffered as without `run`; an
    # unbuffered one wrote "spawned 0" and its newline apart: 'spawnedspawned 1').
    assert "unbuffered None" in out
    assert sorted(x for x in out if x.startswith("spawned")) == ["spawned 0", "spawned 1"]
    assert doc is not None and doc["findings"] == []


def _ours(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in p.info["cmdline"] or ()):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.mark.slow
def test_ctrl_c_stops_the_script_and_its_workers(tmp_path: Path) -> None:
    marker = f"forever_{os.getpid()}.py"
    write(
        tmp_path,
        marker,
        """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Endless(Dataset):
            def __len__(self):
                return 10**9

            def __getitem__(self, i):
                return torch.zeros(2)

        if __name__ == "__main__":
            loader = DataLoader(Endless(), batch_size=2, num_workers=2)
            for n, batch in enumerate(loader):
                if n == 0:
                    print("ready", flush=True)
        """,
    )
    out = tmp_path / "report.json"
    cli = subprocess.Popen(
        [sys.executable, "-m", "torchtrap", "run", "-o", str(out), "--format", "json", marker],
        cwd=tmp_path,
        env=torchtrap_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stdout is not None
        assert cli.stdout.readline().strip() == "ready"
        assert len(_ours(marker)) >= 3  # the script and its 2 workers
        cli.send_signal(signal.SIGINT)
        _, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 130, err
    assert "KeyboardInterrupt" in err
    assert "interrupted" in err
    deadline = time.monotonic() + 30  # bounds a failure only: under load a kill takes a while
    while _ours(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ours(marker) == []
    import json

    assert json.loads(out.read_text())["interrupted"] is True


@pytest.mark.slow
def test_hooks_change_nothing_and_leave_nothing_behind(tmp_path: Path) -> None:
    """Identical losses with and without the hooks, and no file the plain run
    does not write too (torch itself makes $TMPDIR/torchinductor_<user>)."""
    written = {}
    outputs = {}
    for how in ("plain", "hooks"):
        work, temp = tmp_path / how / "work", tmp_path / how / "temp"
        work.mkdir(parents=True)
        temp.mkdir()
        (work / "seeded.py").write_text((SCRIPTS / "seeded_training.py").read_text())
        env = torchtrap_env(TMPDIR=str(temp))
        if how == "plain":
            proc = subprocess.run(
                [sys.executable, "seeded.py"], cwd=work, env=env, capture_output=True, text=True
            )
        else:
            proc, doc = run_cli("seeded.py", cwd=work, out=tmp_path / "report.json", env=env)
            assert doc is not None and doc["steps"] == 12 and doc["findings"] == []
        assert proc.returncode == 0, proc.stderr
        outputs[how] = proc.stdout
        written[how] = sorted(
            str(p.relative_to(tmp_path / how)) for p in (tmp_path / how).rglob("*")
        )
    losses = [line for line in outputs["plain"].splitlines() if line.startswith("loss")]
    assert len(losses) == 12 and len(set(losses)) > 1
    assert outputs["hooks"] == outputs["plain"]  # the same losses, bit for bit
    assert written["hooks"] == written["plain"]
    assert "work/seeded.py" in written["hooks"]


def test_sarif_and_text_reports(tmp_path: Path) -> None:
    import json

    script = SCRIPTS / "tt217_fires.py"
    out = tmp_path / "run.sarif"
    proc, _ = run_cli(script.name, options=("--format", "sarif"), out=out)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(out.read_text())["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert result["ruleId"] == "TT217"
    assert region["startLine"] == line_of(script, "clip_grad_norm_(")
    assert result["message"]["text"].endswith("(seen when run)")
    text = tmp_path / "run.txt"
    proc, _ = run_cli(script.name, options=("--format", "text"), out=text)
    report = text.read_text()
    assert f"tt217_fires.py:{region['startLine']}:5: TT217 clip_grad_norm_:" in report
    assert report.rstrip().endswith("s)") and "1 finding" in report


# A preemption handler (SLURM, Kubernetes send SIGTERM) that saves a checkpoint and
# exits 143, in a loop that reads a DataLoader with a worker; "ready" is written once
# the handler is installed and a batch came, so the signal never races the start-up.
_PREEMPTIBLE = """
import signal
import sys
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset


class Endless(Dataset):
    def __len__(self):
        return 10**9

    def __getitem__(self, i):
        return torch.zeros(2)


model = torch.nn.Linear(2, 1)


def on_sigterm(signum, frame):
    torch.save(model.state_dict(), "checkpoint.pt")
    print("checkpoint saved", flush=True)
    sys.exit(143)


if __name__ == "__main__":
    if "--handler" in sys.argv:
        signal.signal(signal.SIGTERM, on_sigterm)
    for n, batch in enumerate(DataLoader(Endless(), batch_size=2, num_workers=1)):
        model(batch).sum().backward()
        if n == 0:
            Path("ready").write_text("ready")
        time.sleep(0.01)
"""


def _run_until_ready(tmp_path: Path, marker: str, *args: str) -> subprocess.Popen[str]:
    write(tmp_path, marker, _PREEMPTIBLE)
    cli = subprocess.Popen(
        [sys.executable, "-m", "torchtrap", "run", "-o", "report.json", "--format", "json"]
        + [marker, *args],
        cwd=tmp_path,
        env=torchtrap_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():
        if cli.poll() is not None or time.monotonic() > deadline:
            out, err = cli.communicate(timeout=30) if cli.poll() is None else cli.communicate()
            pytest.fail(f"the script did not get ready: {cli.returncode}\n{out}\n{err}")
        time.sleep(0.05)
    return cli


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "signum", "code", "saved"),
    [
        (("--handler",), signal.SIGTERM, 143, True),  # the handler runs, its status passes
        ((), signal.SIGTERM, 143, False),  # no handler: killed by SIGTERM, as without run
        (("--handler",), signal.SIGINT, 130, False),  # twin: Ctrl+C stays KeyboardInterrupt
        (("--handler",), signal.SIGHUP, 129, False),  # a closed terminal: SIGHUP, not SIGINT
    ],
    ids=["sigterm-handler", "sigterm-default", "sigint-twin", "sighup"],
)
def test_signal_reaches_the_script_as_sent(
    tmp_path: Path, args: tuple[str, ...], signum: int, code: int, saved: bool
) -> None:
    marker = f"preemptible_{os.getpid()}_{signum}_{len(args)}.py"
    cli = _run_until_ready(tmp_path, marker, *args)
    try:
        cli.send_signal(signum)
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == code, err
    assert (tmp_path / "checkpoint.pt").exists() is saved, err
    assert ("checkpoint saved" in out) is saved
    assert ("KeyboardInterrupt" in err) is (signum == signal.SIGINT), err
    if signum == signal.SIGTERM:
        assert "DataLoader worker" not in err  # it went to the script, not its worker
    import json

    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["interrupted"] is True and doc["exit_code"] in (code, -signum)
    deadline = time.monotonic() + 30  # bounds a failure only: under load a kill takes a while
    while _ours(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ours(marker) == []


@pytest.mark.parametrize(
    ("script", "flag", "code"),
    [
        ("tt215_fires.py", True, 1),  # found something: CI fails without reading the report
        ("tt215_fixed.py", True, 0),  # its fixed twin passes
        ("tt215_fires.py", False, 0),  # without the option the script's own status
    ],
    ids=["findings", "fixed-twin", "default"],
)
def test_exit_non_zero_on_findings(script: str, flag: bool, code: int) -> None:
    options = ("--exit-non-zero-on-findings",) if flag else ()
    proc, doc = run_cli(script, options=options)
    assert proc.returncode == code, proc.stderr
    assert doc is not None and doc["exit_code"] == 0
    assert bool(doc["findings"]) is script.endswith("fires.py")


def test_exit_non_zero_on_findings_keeps_a_failing_scripts_status(tmp_path: Path) -> None:
    source = (SCRIPTS / "tt215_fires.py").read_text(encoding="utf-8")
    write(tmp_path, "fails.py", source + "raise SystemExit(3)\n")
    proc, doc = run_cli("fails.py", cwd=tmp_path, options=("--exit-non-zero-on-findings",))
    assert proc.returncode == 3, proc.stderr
    assert doc is not None and [f["code"] for f in doc["findings"]] == ["TT215"]


def test_exit_non_zero_on_findings_is_in_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "torchtrap", "run", "--help"],
        env=torchtrap_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "--exit-non-zero-on-findings" in proc.stdout
