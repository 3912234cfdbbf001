"""SARIF output: valid for Microsoft's SARIF Multitool (the validator GitHub
code scanning's docs point to) for relative and absolute path arguments,
paths outside the working folder, odd file names and notebooks; and
``partialFingerprints`` that keep an alert's identity across edits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import torch\n", "x = torch.randn(3)\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["y = torch.log(torch.softmax(x, -1))\n", "x.clamp(0, 1)"]},
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}  # fmt: skip
PITFALLS = (ROOT / "examples" / "tt201_log_of_softmax.py").read_text(encoding="utf-8")


def sarif(cwd: Path, *paths: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    proc = subprocess.run(
        [sys.executable, "-m", "torchtrap", "check", "--format", "sarif", "--exit-zero", *paths],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def results(doc: dict) -> list[dict]:
    return doc["runs"][0]["results"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("proj")
    (root / "src").mkdir()
    shutil.copytree(ROOT / "examples", root / "src" / "examples")
    (root / "src" / "with space & ünïcode.py").write_text(PITFALLS, encoding="utf-8")
    (root / "src" / "train.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    (root / "outside").mkdir()
    return root


CASES = {
    "relative": ("src", ["examples", "train.ipynb", "with space & ünïcode.py"]),
    "absolute-inside": (".", ["{root}/src"]),
    "absolute-outside": ("outside", ["{root}/src"]),
    "dot-dot": ("outside", ["../src/examples", "../src/train.ipynb"]),
}


@pytest.fixture(scope="module")
def sarif_files(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("sarif")
    files = {}
    for name, (cwd, paths) in CASES.items():
        doc = sarif(project / cwd, *(p.format(root=project) for p in paths))
        assert results(doc), f"{name}: no findings to validate"
        files[name] = out / f"{name}.sarif"
        files[name].write_text(json.dumps(doc), encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def multitool() -> str:
    script = ROOT / "scripts" / "sarif-multitool.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    if proc.returncode == 3:
        pytest.skip(f"SARIF Multitool not installable: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def test_multitool_finds_no_errors_or_warnings(
    multitool: str, sarif_files: dict[str, Path], tmp_path: Path
) -> None:
    log = tmp_path / "validation.sarif"
    paths = [str(p) for p in sarif_files.values()]
    proc = subprocess.run(
        [multitool, "validate", *paths, "--output", str(log), "--level", "Error;Warning"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOTNET_CLI_TELEMETRY_OPTOUT": "1"},
    )
    assert log.exists(), proc.stdout + proc.stderr
    problems = [
        f"{r['ruleId']}: {r['message'].get('arguments')}"
        for run in json.loads(log.read_text(encoding="utf-8"))["runs"]
        for r in run.get("results", [])
        if r.get("level", "warning") in ("error", "warning")
    ]
    assert not problems, "\n".join(problems)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_absolute_paths_take_no_base_id(sarif_files: dict[str, Path], project: Path) -> None:
    inside = json.loads(sarif_files["absolute-inside"].read_text(encoding="utf-8"))
    outside = json.loads(sarif_files["absolute-outside"].read_text(encoding="utf-8"))
    loc = results(inside)[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc["uriBaseId"] == "%SRCROOT%" and loc["uri"].startswith("src/")
    for result in results(outside):
        loc = result["locations"][0]["physicalLocation"]["artifactLocation"]
        assert "uriBaseId" not in loc and loc["uri"].startswith(project.as_uri())


def test_uris_are_percent_encoded(sarif_files: dict[str, Path]) -> None:
    doc = json.loads(sarif_files["relative"].read_text(encoding="utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results(doc)}
    assert "with%20space%20%26%20%C3%BCn%C3%AFcode.py" in uris


def _fingerprints(doc: dict) -> list[str]:
    return [r["partialFingerprints"]["torchtrap/v1"] for r in results(doc)]


def test_fingerprints_survive_unrelated_edits(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(PITFALLS, encoding="utf-8")
    before = _fingerprints(sarif(tmp_path, "m.py"))
    assert before and len(set(before)) == len(before)
    module.write_text("# a new header line\n\n" + PITFALLS, encoding="utf-8")
    assert _fingerprints(sarif(tmp_path, "m.py")) == before


def test_identical_lines_get_distinct_fingerprints(tmp_path: Path) -> None:
    body = "import torch\n\ndef f(x):\n    x.clamp(0, 1)\n    x.clamp(0, 1)\n    return x\n"
    (tmp_path / "m.py").write_text(body, encoding="utf-8")
    prints = _fingerprints(sarif(tmp_path, "m.py"))
    assert len(prints) == 2 and prints[0] != prints[1]


def test_notebook_fingerprints_use_the_cell_text(project: Path) -> None:
    doc = sarif(project / "src", "train.ipynb")
    cells = {r["properties"]["notebookCell"] for r in results(doc)}
    assert cells == {2}
    assert len(set(_fingerprints(doc))) == len(results(doc))
