"""TT104, TT105 and TT107 across files: a Dataset in datasets.py, its DataLoader in train.py.

The fixture ``tests/projects/workers_split`` has one positive class per rule
(loaded with ``num_workers=4`` in train.py) and near misses: loaded only with
``num_workers=0``, with ``multiprocessing_context="fork"``, from a module that
calls ``set_start_method("fork")``, or through a third-party import of the
same name (unknown, never evidence), or only as a subclass (subclasses.py)
that replaces the method the finding is about.
"""

from __future__ import annotations

import ast
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from torchtrap import cli
from torchtrap.config import load_config
from torchtrap.engine import analyse, lint
from torchtrap.project import PENDING, Project, module_for, project_files, summarize_source
from torchtrap.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent / "projects" / "workers_split"
CODES = "TT104,TT105,TT107"

EXPECTED = [
    ("datasets.py", 13, "TT104"),  # Scored stores an nn.Module; num_workers=4 in train.py:4
    ("datasets.py", 42, "TT105"),  # Lines.__iter__ reads a whole file; train.py:5
    ("datasets.py", 63, "TT107"),  # Captions keeps readlines(); train.py:6
]
# Where each finding's DataLoader is: (line, column) in train.py.
LOADER_AT = {"TT104": (4, 9), "TT105": (5, 8), "TT107": (6, 11)}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["check", "--color", "never", "--no-cache", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def json_findings(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    _, out = run(capsys, "--format", "json", "--select", CODES, *argv)
    found: list[dict[str, Any]] = json.loads(out)["findings"]
    return found


def located(found: list[dict[str, Any]], root: Path) -> list[tuple[str, int, str]]:
    return sorted(
        (Path(f["path"]).relative_to(root).as_posix(), f["range"]["start"]["line"], f["code"])
        for f in found
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT, tmp_path / "workers_split")
    return tmp_path / "workers_split"


def test_datasets_are_linked_to_their_dataloaders_in_train_py(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = json_findings(capsys, str(project))
    assert located(found, project) == EXPECTED
    train = str(project / "train.py")
    for f in found:
        line, column = LOADER_AT[f["code"]]
        where = f"train.py:{line}"
        assert len(f["message"]) <= 120
        # The message names the line when it still fits one line; the related
        # location always points into train.py and names it.
        assert [r["path"] for r in f["related"]] == [train]
        assert f["related"][0]["range"]["start"] == {"line": line, "column": column}
        assert f"num_workers=4 in {where}" in f["related"][0]["message"]
        if f["code"] == "TT107":
            assert f["message"].endswith(f"(DataLoader at {where})")
    tt104 = next(f for f in found if f["code"] == "TT104")
    assert tt104["message"].startswith("Dataset `Scored` (holds `self.scorer`, an nn.Module)")
    assert tt104["severity"] == "warning"
    assert tt104["fixes"] == []  # num_workers=0 would have to edit train.py


def test_checking_datasets_py_alone_still_sees_its_project(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert located(json_findings(capsys, str(project / "datasets.py")), project) == EXPECTED


def test_without_a_project_each_positive_is_silent(
    project: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = project / "datasets.py"
    text = path.read_text()
    config = load_config(project)
    assert [f for f in lint(text, str(path), config) if f.code in CODES.split(",")] == []
    # The same file in a folder of its own: no DataLoader anywhere visible.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(path, alone / "datasets.py")
    assert json_findings(capsys, str(alone)) == []
    # stdin has no project either
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert json_findings(capsys, "-") == []


def test_the_first_pass_asks_for_the_project() -> None:
    path = ROOT / "datasets.py"
    config = load_config(ROOT)
    for code in CODES.split(","):
        rule = next(r for r in ALL_RULES if r.code == code)
        first = analyse(
            path.read_text(),
            str(path),
            config,
            [rule],
            project=PENDING,
            module=("datasets", False),
        )
        assert first.needs_project, code


def test_the_summary_records_a_fork_start_method() -> None:
    config = load_config(ROOT)
    summaries = [
        summarize_source(p.read_bytes(), str(p), module_for(p, config))
        for p in project_files(ROOT, config)
    ]
    project = Project([s for s in summaries if s is not None])
    pins = {Path(s.path).name: s.pins_fork for s in project}
    assert pins == {
        "datasets.py": False,
        "fork_train.py": True,
        "subclasses.py": False,
        "train.py": False,
        "vendor_train.py": False,
    }


@pytest.mark.parametrize(
    ("file", "old", "new", "extra"),
    [
        # Only num_workers=0 keeps QuietScored, QuietLines and QuietCoco silent.
        (
            "train.py",
            "QuietScored([1, 2]), num_workers=0",
            "QuietScored([1, 2]), num_workers=2",
            [("datasets.py", 13, "TT104")],  # the store it inherits from Scored
        ),
        (
            "train.py",
            'QuietLines("data.txt"), batch_size=4, num_workers=0',
            'QuietLines("data.txt"), batch_size=4, num_workers=2',
            [("datasets.py", 53, "TT105")],
        ),
        (
            "train.py",
            'QuietCoco("train.json"), num_workers=0',
            'QuietCoco("train.json"), num_workers=2',
            [("datasets.py", 76, "TT107")],
        ),
        # multiprocessing_context="fork" in train.py: nothing is pickled
        ("train.py", ', multiprocessing_context="fork"', "", [("datasets.py", 13, "TT104")]),
        # set_start_method("fork") in the DataLoader's own file
        (
            "fork_train.py",
            'mp.set_start_method("fork")',
            'mp.set_start_method("spawn")',
            [("datasets.py", 13, "TT104")],
        ),
        # a subclass's own `__iter__` / `__getitem__` is what runs in the workers
        (
            "subclasses.py",
            "    def __iter__(self):",
            "    def sharded(self):",
            [("datasets.py", 114, "TT105")],
        ),
        (
            "subclasses.py",
            "    def __getitem__(self, index):",
            "    def box(self, index):",
            [("datasets.py", 124, "TT107")],
        ),
        # the third-party import is what keeps Vendored and VendoredLines unknown
        (
            "vendor_train.py",
            "from vendorlib.data import Vendored, VendoredLines",
            "from datasets import Vendored, VendoredLines",
            [
                ("datasets.py", 88, "TT104"),
                ("datasets.py", 90, "TT107"),
                ("datasets.py", 104, "TT105"),
            ],
        ),
    ],
)
def test_each_near_miss_is_silent_for_its_reason(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    file: str,
    old: str,
    new: str,
    extra: list[tuple[str, int, str]],
) -> None:
    path = project / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    assert located(json_findings(capsys, str(project)), project) == sorted(EXPECTED + extra)


def test_fixes_edit_datasets_py_only_and_are_idempotent(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    datasets = project / "datasets.py"
    others = {p.name: p.read_text() for p in project.glob("*.py") if p != datasets}
    code, out = run(capsys, str(project), "--select", CODES, "--fix", "--unsafe-fixes")
    assert "Fixed 2 issues." in out, out
    fixed = datasets.read_text()
    ast.parse(fixed)
    assert "itertools.islice(stream, worker.id, None, worker.num_workers)" in fixed
    assert "self.lines = np.array(fh.readlines())" in fixed
    assert {p.name: p.read_text() for p in project.glob("*.py") if p != datasets} == others
    # Only TT104 is left (it has no fix that stays in datasets.py).
    line = fixed.splitlines().index("        self.scorer = torch.nn.Linear(4, 1)") + 1
    assert located(json_findings(capsys, str(project)), project) == [("datasets.py", line, "TT104")]
    run(capsys, str(project), "--select", CODES, "--fix", "--unsafe-fixes")
    assert datasets.read_text() == fixed
