"""TT207 across files: a model class defined in another module of the project
(tests/projects/eval_split), its layers known from the project index."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from tests.core.projects import index
from torchtrap import cli
from torchtrap.config import load_config
from torchtrap.engine import analyse, lint
from torchtrap.project import PENDING

ROOT = Path(__file__).resolve().parent.parent / "projects" / "eval_split"

EXPECTED = [
    ("evaluate.py", 7),  # run(): main() passes DeepDropNet(), inheriting DropNet's Dropout
    ("evaluate.py", 37),  # NormNet imported inside the function
    ("train.py", 11),  # DropNet() from `from models import DropNet`
    ("train.py", 17),  # models.NormNet().to("cpu"): `import models`, BatchNorm in a Sequential
    ("train.py", 23),  # Head: re-exported by zoo/__init__.py, a subclass of DropNet
    ("zoo/bench.py", 9),  # Head through a relative import
    # near misses: .eval() before the block or on the constructor, PlainNet,
    # ZeroDropNet (Dropout(0.0), track_running_stats=False), timm.create_model,
    # a teacher inside a training step, a shape probe on torch.zeros, a caller
    # that calls .eval() before passing the model, NotAModule (not an nn.Module),
    # WrappedNet (a base outside the project), a module-level model switched at
    # module level
]


def tt207(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> list[dict[str, object]]:
    code = cli.main(["check", "--color", "never", "--no-cache", "--format", "json", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and code in (0, 1)
    return [f for f in json.loads(out)["findings"] if f["code"] == "TT207"]


def where(findings: list[dict[str, object]], root: Path) -> list[tuple[str, int]]:
    return sorted(
        (Path(str(f["path"])).relative_to(root).as_posix(), f["range"]["start"]["line"])  # type: ignore[index]
        for f in findings
    )


def test_project_knows_train_mode_layers_of_module_classes() -> None:
    project = index(ROOT)
    models = str(ROOT / "models.py")

    def layers(ref: str) -> list[tuple[str, str, int]] | None:
        found = project.train_mode_layers(ref)
        if found is None:
            return None
        return [(Path(path).name, qual, span.line) for path, qual, span in found]

    assert layers("models.DropNet") == [("models.py", "torch.nn.Dropout", 9)]
    assert layers("models.NormNet") == [("models.py", "torch.nn.BatchNorm1d", 18)]
    assert layers("models.PlainNet") == []
    assert layers("models.ZeroDropNet") == []  # Dropout(0.0), track_running_stats=False
    assert layers("models.DeepDropNet") == [("models.py", "torch.nn.Dropout", 9)]
    assert project.ref(str(ROOT / "train.py"), "Head") == "zoo.heads.Head"
    assert layers("zoo.heads.Head") == [("models.py", "torch.nn.Dropout", 9)]
    assert layers("models.NotAModule") is None  # not an nn.Module: unknown
    assert layers("models.WrappedNet") is None  # a base outside the project: unknown
    assert layers("models.Missing") is None
    assert project.ref(str(ROOT / "train.py"), "timm.create_model") is None
    # the older query still sees the inert layers: they are layers all the same
    assert project.module_class_has_layers("models.ZeroDropNet", {"torch.nn.Dropout"})
    assert project.summary(models) is not None


def test_tt207_finds_models_defined_in_other_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "eval_split"
    shutil.copytree(ROOT, root)
    found = tt207(capsys, root, "--select", "TT207", str(root))
    assert where(found, root) == EXPECTED
    first = next(f for f in found if str(f["path"]).endswith("train.py"))
    message = str(first["message"])
    assert "its Dropout layers (models.py:9) act as in training" in message
    assert len(message) <= 120
    related = first["related"][0]  # type: ignore[index]
    assert related["path"] == str(root / "models.py")
    assert related["range"]["start"] == {"line": 9, "column": 20}
    # checking one file still sees the rest of the project
    one = tt207(capsys, root, "--select", "TT207", str(root / "zoo" / "bench.py"))
    assert where(one, root) == [("zoo/bench.py", 9)]


@pytest.mark.parametrize("name", ["train.py", "evaluate.py", "zoo/bench.py"])
def test_positives_are_silent_without_the_project(name: str) -> None:
    path = ROOT / name
    config = load_config(ROOT)
    assert [f for f in lint(path.read_text(), str(path), config) if f.code == "TT207"] == []


def test_first_pass_asks_for_the_project() -> None:
    path = ROOT / "train.py"
    first = analyse(
        path.read_text(), str(path), load_config(ROOT), project=PENDING, module=("train", False)
    )
    assert first.needs_project and first.findings == []


def test_fixes_insert_eval_and_are_idempotent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = tmp_path / "eval_split"
    shutil.copytree(ROOT, root)
    files = sorted(root.rglob("*.py"))
    cli.main(["check", "--no-cache", "--select", "TT207", "--fix", "--unsafe-fixes", str(root)])
    capsys.readouterr()
    fixed = {p: p.read_text() for p in files}
    for text in fixed.values():
        ast.parse(text)
    assert fixed[root / "models.py"] == (ROOT / "models.py").read_text()  # never another file
    assert (
        "    model = DropNet()\n    model.eval()\n    with torch.no_grad():"
        in fixed[root / "train.py"]
    )
    assert "    head.eval()\n    with torch.no_grad():" in fixed[root / "zoo" / "bench.py"]
    assert (
        "def run(model, x):\n    model.eval()\n    return model(x)" in fixed[root / "evaluate.py"]
    )
    assert tt207(capsys, root, "--select", "TT207", str(root)) == []
    cli.main(["check", "--no-cache", "--select", "TT207", "--fix", "--unsafe-fixes", str(root)])
    capsys.readouterr()
    assert {p: p.read_text() for p in files} == fixed
