"""``torchtrap graph``: the call graph the core resolves, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interproc.helpers import write_project

REPO = Path(__file__).resolve().parents[2]

PROJECT = {
    "main.py": """
        import torch
        from pkg.mod import Model, helper

        square = lambda v: v * v
        twice = lambda v: v + v


        def run():
            m = Model()
            m.fit(helper())
            pick = lambda f: f
            pick(square)(2)
            return len(torch.zeros(3))


        run()
    """,
    "pkg/__init__.py": "from .mod import helper\n",
    "pkg/mod.py": """
        class Base:
            def __init__(self):
                self.ready = True


        class Model(Base):
            def __init__(self):
                super().__init__()

            def fit(self, data):
                return self.step(data)

            def step(self, data):
                return data


        def helper():
            return [1, 2]
    """,
}

EDGES = {
    "main": {"main.run"},
    "main.run": {
        "pkg.mod.Model.__init__",
        "pkg.mod.Model.fit",
        "pkg.mod.helper",
        "main.run.<lambda1>",
        "main.<lambda1>",
        "<builtin>.len",
        "torch.zeros",
    },
    "pkg.mod.Model.__init__": {"pkg.mod.Base.__init__"},
    "pkg.mod.Model.fit": {"pkg.mod.Model.step"},
}
NON_EDGES = {
    "main.run": {"main.<lambda2>", "pkg.mod.Model.step", "pkg.mod.Base.__init__"},
}


def graph(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONSAFEPATH="1", PYTHONPATH=str(REPO / "server"))
    return subprocess.run(
        [sys.executable, "-m", "torchtrap", "graph", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "case", PROJECT)


def _files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*.py"))


def test_pycg_format(project: Path) -> None:
    done = graph("--format", "pycg", "--root", str(project), *_files(project))
    assert done.returncode == 0, done.stderr
    cg = json.loads(done.stdout)
    assert all(isinstance(v, list) and v == sorted(v) for v in cg.values())
    # every module, function, method and lambda is a key, callers or not
    for node in (
        "main",
        "pkg",
        "pkg.mod",
        "main.run",
        "main.<lambda1>",
        "main.<lambda2>",
        "main.run.<lambda1>",
        "pkg.mod.Base.__init__",
        "pkg.mod.Model.step",
        "pkg.mod.helper",
    ):
        assert node in cg, node
    for caller, callees in EDGES.items():
        assert callees <= set(cg[caller]), (caller, cg[caller])
    for caller, callees in NON_EDGES.items():
        assert not callees & set(cg[caller]), (caller, cg[caller])
    assert cg["main.<lambda2>"] == [] and cg["pkg.mod.Model.step"] == []
    for callees in cg.values():  # every node a key
        assert set(callees) <= set(cg)


def test_a_folder_gives_the_same_graph_as_its_files(project: Path) -> None:
    by_files = graph("--format", "pycg", "--root", str(project), *_files(project))
    by_folder = graph("--format", "pycg", "--root", str(project), str(project))
    assert by_folder.returncode == 0, by_folder.stderr
    assert json.loads(by_folder.stdout) == json.loads(by_files.stdout)


def test_root_names_the_modules(project: Path) -> None:
    done = graph("--format", "pycg", "--root", str(project.parent), str(project))
    assert done.returncode == 0, done.stderr
    cg = json.loads(done.stdout)
    assert "case.main.run" in cg and "case.pkg.mod.Model.fit" in cg
    assert "case.pkg.mod.Model.step" in cg["case.pkg.mod.Model.fit"]


def test_text_format(project: Path) -> None:
    done = graph("--format", "text", "--root", str(project), str(project))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "main.run" in lines
    start = lines.index("main.run")
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("  -> "):
            break
        block.append(line.removeprefix("  -> "))
    assert EDGES["main.run"] <= set(block)
    assert block == sorted(block)
    assert "pkg.mod.Model.fit" in lines and "  -> pkg.mod.Model.step" in lines


def test_json_format_reports_skipped_files(project: Path) -> None:
    (project / "broken.py").write_text("def f(:\n", encoding="utf-8")
    done = graph("--format", "json", "--root", str(project), str(project))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["modules"] == ["main", "pkg", "pkg.mod"]
    assert data["complete"] is True
    assert EDGES["pkg.mod.Model.fit"] <= set(data["calls"]["pkg.mod.Model.fit"])
    assert [Path(s["path"]).name for s in data["skipped"]] == ["broken.py"]
    assert "SyntaxError" in data["skipped"][0]["reason"]
    assert "skipped" in done.stderr and "broken.py" in done.stderr


def test_text_format_reports_skipped_files(project: Path) -> None:
    (project / "broken.py").write_text("def f(:\n", encoding="utf-8")
    done = graph("--root", str(project), str(project))
    assert done.returncode == 0, done.stderr
    assert any(
        line.startswith("skipped ") and "broken.py" in line and "SyntaxError" in line
        for line in done.stdout.splitlines()
    ), done.stdout


def test_a_missing_path_is_a_clear_error(project: Path) -> None:
    missing = project / "nope.py"
    done = graph("--format", "pycg", "--root", str(project), str(project / "main.py"), str(missing))
    assert done.returncode != 0
    assert done.stdout == ""
    assert f"no such file or folder: {missing}" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_format_is_a_usage_error(project: Path) -> None:
    done = graph("--format", "dot", str(project))
    assert done.returncode == 2
    assert "invalid choice" in done.stderr


def test_a_deeply_nested_file_does_not_crash_the_command(project: Path) -> None:
    (project / "deep.py").write_text("x = " + " + ".join(["a"] * 2_000) + "\n", encoding="utf-8")
    done = graph("--format", "pycg", "--root", str(project), str(project))
    assert "Traceback" not in done.stderr
    assert done.returncode == 0
    assert "main.run" in json.loads(done.stdout)
