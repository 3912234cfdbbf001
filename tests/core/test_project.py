"""The project index: summaries, import resolution, the view rules query."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from tests.core.projects import PROJECTS, index
from torchtrap.config import load_config
from torchtrap.engine import analyse, lint
from torchtrap.project import (
    PENDING,
    SUMMARY_VERSION,
    Project,
    module_for,
    summarize_source,
)
from torchtrap.project.summary import module_key


def test_summaries_are_plain_versioned_data() -> None:
    project = index(PROJECTS / "flat")
    for summary in project:
        assert summary.version == SUMMARY_VERSION
        assert pickle.loads(pickle.dumps(summary)) == summary


def test_script_siblings_resolve() -> None:
    root = PROJECTS / "flat"
    project = index(root)
    train = str(root / "train.py")
    assert project.ref(train, "Noisy") == "datasets.Noisy"
    assert project.ref(train, "DataLoader") is None  # third-party: unknown
    uses = project.dataloaders_loading("datasets.Noisy")
    assert [(Path(u.path).name, u.fact.workers, u.fact.argument("num_workers")) for u in uses] == [
        ("train.py", "some", "4")
    ]
    assert uses[0].where(project.root) == "train.py:5"
    assert project.function("utils.reseed_dataset").rebuilds == ("rng",)  # type: ignore[union-attr]
    assert project.function("utils.seed_globals").rebuilds == ()  # type: ignore[union-attr]


def test_module_classes() -> None:
    project = index(PROJECTS / "flat")
    assert project.module_class_has_layers("models.Discriminator", {"torch.nn.Dropout"})
    assert not project.module_class_has_layers("models.Discriminator", {"torch.nn.BatchNorm1d"})
    assert project.module_class_has_layers("models.Missing", {"torch.nn.Dropout"}) is None
    assert project.module_class_output("models.Discriminator") == "sigmoid"
    assert project.probability_of("train.disc") == "sigmoid"  # a module-level instance
    assert project.probability_of("utils.probs") == "sigmoid"
    assert project.probability_of("utils.safe_probs") is None  # clamped
    assert project.derives_from("datasets.Noisy", {"torch.utils.data.Dataset"})


def test_src_layout_and_import_as() -> None:
    root = PROJECTS / "srclayout"
    project = index(root)
    assert project.summary(str(root / "src/vision/data/crops.py")).module == "vision.data.crops"  # type: ignore[union-attr]
    # `import vision.data as vd` and `vd.Crops()`, re-exported by vision/data/__init__.py
    assert project.resolve("vision.data.Crops") == "vision.data.crops.Crops"
    uses = project.dataloaders_loading("vision.data.crops.Crops")
    assert [Path(u.path).name for u in uses] == ["train.py"]


def test_relative_imports_star_reexports() -> None:
    root = PROJECTS / "relpkg"
    project = index(root)
    assert project.resolve("toolkit.Stream") == "toolkit.data.streams.Stream"
    assert project.resolve("toolkit.make_loader") == "toolkit.loaders.make_loader"
    assert len(project.dataloaders_loading("toolkit.data.streams.Stream")) == 1
    # `from fancy.streams import Other`: a third-party class of the same name
    assert project.dataloaders_loading("toolkit.data.streams.Other") == []


def test_import_cycles_and_self_reexports_terminate(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.a import X\nfrom pkg.b import Y\n")
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import X\n")
    (tmp_path / "pkg" / "b.py").write_text("from pkg.a import X\nfrom pkg import Y\n")
    project = index(tmp_path)
    assert project.resolve("pkg.X") is None
    assert project.resolve("pkg.Y") is None


def test_star_imports_of_missing_modules_stay_linear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fairseq's MMPT processors: a package ``__init__`` star-importing 15
    modules that are not there (and two that are, star-importing it back).
    Resolving ``pkg.missingK.name`` by its longest known prefix grew the
    name at every step and branched over every star import (22 GB); a star
    import of a module the project does not have exports nothing known."""
    (tmp_path / "pyproject.toml").write_text("")  # the root of module names
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    init = "".join(f"from .missing{i} import *\n" for i in range(15))
    (pkg / "__init__.py").write_text(init + "from .present import *\nfrom .more import *\n")
    (pkg / "present.py").write_text("from . import *\n\n\nclass Thing:\n    pass\n")
    (pkg / "more.py").write_text("from pkg import *\nfrom .absent import *\n")
    (tmp_path / "user.py").write_text("from pkg import *\nfrom pkg.missing3 import gone\n")
    project = index(tmp_path)
    steps: list[str] = []
    step = Project._step

    def counted(self: Project, ref: str, *rest: object) -> object:
        steps.append(ref)
        assert len(steps) < 1_000, f"resolution branches: {steps[-3:]}"  # fail, not hang
        return step(self, ref, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(Project, "_step", counted)
    assert project.resolve("pkg.Thing") == "pkg.present.Thing"
    assert project.resolve("pkg.missing3.gone") is None
    assert project.resolve("pkg.nothing") is None
    user = next(s for s in project if s.path.endswith("user.py"))
    assert "pkg" in project.imported_modules(user)
    # Measured: 12 steps for the four questions; the old resolution took
    # more than 10^6 before its depth cut-off.
    assert len(steps) < 200, len(steps)


def test_relative_import_above_top_package_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from ...far import thing\nfrom . import near\n")
    project = index(tmp_path)
    assert project.summary(str(tmp_path / "m.py")).imports == {}  # type: ignore[union-attr]


def test_pending_project_asks_for_a_second_pass() -> None:
    root = PROJECTS / "flat"
    path = root / "datasets.py"
    config = load_config(root)
    first = analyse(
        path.read_text(), str(path), config, project=PENDING, module=("datasets", False)
    )
    assert first.needs_project and first.findings == [] and first.summary is not None
    alone = lint(path.read_text(), str(path), config)
    assert {f.code for f in alone} == {"TT101"}  # no DataLoader visible: warnings only


def test_a_deferred_summary_is_the_summary_made_with_the_lint() -> None:
    """The language server publishes an edit's findings first and summarises
    the module after (``defer_summary``): same findings, same summary."""
    root = PROJECTS / "flat"
    project = index(root)
    for name in ("datasets.py", "train.py"):
        path = root / name
        module = (path.stem, False)
        now = analyse(path.read_text(), str(path), project=project, module=module)
        later = analyse(
            path.read_text(), str(path), project=project, module=module, defer_summary=True
        )
        assert later.summary is None and later.summarize is not None
        assert repr(later.findings) == repr(now.findings)  # a fix's edits are made lazily
        assert now.summary is not None and later.summarize() == now.summary
    assert (
        analyse("def broken(:\n", "x.py", module=("x", False), defer_summary=True).summarize is None
    )


@pytest.mark.parametrize("bad", ["def broken(:\n", "\x00", b"\xff\xfe\x00bad"])
def test_unparsable_source_has_no_summary(bad: str | bytes) -> None:
    assert summarize_source(bad, "x.py", ("x", False)) is None


def test_import_graph_finds_files_one_module_apart(tmp_path: Path) -> None:
    """What the language server re-lints when a file changes: importers and
    imports, two steps either way, and two modules imported by a third."""
    from torchtrap.project.graph import ImportGraph

    files = {
        "pyproject.toml": '[project]\nname = "g"\n',
        "a.py": "import b\n",
        "b.py": "from c import C\n",
        "c.py": "class C: pass\n",
        "d.py": "import numpy as np\nD = 1\n",
        "e.py": "from d import D\n",
        "f.py": "import e\nimport c\n",
        "lone.py": "import torch\nimport numpy\n",
        "pkg/__init__.py": "from pkg.impl import Impl\n",
        "pkg/impl.py": "class Impl: pass\n",
        "user.py": "from pkg import Impl\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    project = index(tmp_path)
    graph = ImportGraph.of(project)

    def summary(name: str):  # type: ignore[no-untyped-def]
        found = project.summary(str(tmp_path / name))
        assert found is not None
        return found

    def concerns(doc: str, changed: str) -> bool:
        return graph.concerns(project, summary(doc), [summary(changed)])

    # Re-exports count both the package and the module that defines the name.
    assert project.imported_modules(summary("user.py")) == {"pkg", "pkg.impl"}
    assert project.imported_modules(summary("lone.py")) == frozenset()  # third-party only
    assert concerns("a.py", "b.py") and concerns("b.py", "a.py")  # direct, either way
    assert concerns("a.py", "c.py") and concerns("c.py", "a.py")  # through b.py
    assert concerns("e.py", "c.py")  # f.py imports both
    assert not concerns("a.py", "d.py") and not concerns("d.py", "a.py")
    assert not concerns("lone.py", "c.py") and not concerns("c.py", "lone.py")
    assert concerns("user.py", "pkg/impl.py")
    # Found from the changed side (workspace re-checks), the same answers.
    for changed in files:
        if changed.endswith(".py"):
            keys = graph.concerned(project, [summary(changed)])
            for doc in files:
                if doc.endswith(".py") and doc != changed:
                    expected = concerns(doc, changed)
                    assert (module_key(summary(doc)) in keys) == expected, (doc, changed)

    # Kept current one summary at a time: b.py stops importing c.py.
    path = tmp_path / "b.py"
    path.write_text("B = 2\n")
    config = load_config(tmp_path)
    new_b = summarize_source(path.read_bytes(), str(path), module_for(path, config))
    assert new_b is not None
    project = project.updated(str(path), new_b)
    graph.imports(project, new_b)
    assert not concerns("a.py", "c.py")
    assert concerns("a.py", "b.py")


def test_a_file_added_to_a_project_reuses_its_tables(tmp_path: Path) -> None:
    """Project.with_file (a notebook linted with its project): the added
    file's own names resolve under its key, and the project-wide tables are
    the base's plus its entries, the same as a project built with it."""
    root = PROJECTS / "flat"
    base = index(root)
    source = (
        "import torch\nfrom datasets import Noisy\nfrom torch.utils.data import DataLoader\n"
        "def loss(p):\n    return torch.log(p).mean()\n"
        "loader = DataLoader(Noisy(), num_workers=2)\n"
        "loss(torch.sigmoid(torch.randn(3)))\n"
    )
    path = str(root / "explore.ipynb")
    own = summarize_source(source, path, ("", False))
    assert own is not None
    base.dataloaders_loading("datasets.Noisy")  # the base builds its tables first
    added = base.with_file(own)
    fresh = Project([*base, own])
    local = added.ref(path, "loss")
    assert local is not None and local.endswith(".loss")
    assert added.call_sites(local) == fresh.call_sites(local) != []
    assert added.dataloaders_loading("datasets.Noisy") == fresh.dataloaders_loading(
        "datasets.Noisy"
    )
    assert len(added.dataloaders_loading("datasets.Noisy")) == 2
    assert added.subclasses("datasets.Noisy") == fresh.subclasses("datasets.Noisy")
    assert base.summary(path) is None and len(base.dataloaders_loading("datasets.Noisy")) == 1


def test_a_loaders_dataset_follows_the_binding_that_reaches_it() -> None:
    """The summary's DataLoader -> dataset class follows the latest binding
    before the DataLoader (flow-sensitive), not the last one in the scope."""
    code = """
from torch.utils.data import DataLoader, Subset
from data import A, B, MapDataset

def before_use(mapper):
    ds = A()
    if mapper is not None:
        ds = MapDataset(ds, mapper)
    return DataLoader(ds, num_workers=2)

def rebound_after():
    ds = A()
    loader = DataLoader(ds, num_workers=2)
    ds = B()
    return loader

def wrapped():
    ds = Subset(B(), [0])
    return DataLoader(ds, num_workers=2)

def parameter(ds):
    return DataLoader(ds, num_workers=2)
"""
    summary = summarize_source(code, "train.py", ("train", False))
    assert summary is not None
    got = [(d.dataset, d.direct) for d in summary.dataloaders]
    assert got == [
        ("data.MapDataset", True),
        ("data.A", True),  # the later `ds = B()` does not reach the DataLoader
        ("data.B", False),
        (None, True),
    ]


def test_a_lint_records_the_files_and_references_it_read(tmp_path: Path) -> None:
    """What the language server re-lints when a file changes, past imports:
    losses.py's TT201 rests on nets.py (reached through train.py's call and
    helpers.py's re-export), so its lint read those three; a new caller
    anywhere provides the callee it asked about; an unrelated file does not
    concern it, and neither does the lint of a file that read no project."""
    from torchtrap.project.index import recording

    files = {
        "losses.py": "import torch\n\ndef nll(p, y):\n    return -(y * torch.log(p)).mean()\n",
        "nets.py": "import torch\n\ndef make(z):\n    return torch.sigmoid(z)\n",
        "helpers.py": "from nets import make\n",
        "train.py": "import helpers\nfrom losses import nll\n\nloss = nll(helpers.make(z), y)\n",
        "other.py": "import torch\n\ndef f(x):\n    return torch.sigmoid(x)\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    project = index(tmp_path)
    losses = str(tmp_path / "losses.py")
    with recording() as reads:
        found = analyse(files["losses.py"], losses, project=project).findings
    assert [f.code for f in found] == ["TT201"]
    assert {os.path.basename(p) for p in reads.paths} >= {"nets.py", "helpers.py", "train.py"}
    assert "other.py" not in {os.path.basename(p) for p in reads.paths}
    assert "losses.nll" in reads.refs

    def summary(name: str, text: str):  # type: ignore[no-untyped-def]
        path = tmp_path / name
        made = summarize_source(text.encode(), str(path), module_for(path, load_config(tmp_path)))
        assert made is not None
        return made

    new_caller = summary(
        "eval.py", "import torch\nfrom losses import nll\nnll(torch.sigmoid(z), y)\n"
    )
    assert reads.concerns(project.updated(new_caller.path, new_caller), new_caller)
    unrelated = summary("other.py", files["other.py"] + "\nX = 1\n")
    assert not reads.concerns(project, unrelated)
    assert reads.concerns(project, summary("nets.py", files["nets.py"] + "\n"))
    with recording() as alone:
        analyse(files["other.py"], str(tmp_path / "other.py"), project=project)
    assert not alone.concerns(project, summary("nets.py", files["nets.py"]))


def test_resolve_remembers_answers_only_while_nothing_records(tmp_path: Path) -> None:
    """``resolve`` answers a repeated question from memory in ``check``, but
    a recorded lint (the language server's dependent refresh) still reads
    every file the answer rests on."""
    from torchtrap.project.index import recording

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "g"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.impl import Impl\n")
    (tmp_path / "pkg" / "impl.py").write_text("class Impl: pass\n")
    (tmp_path / "user.py").write_text("from pkg import Impl\n")
    project = index(tmp_path)
    user = str(tmp_path / "user.py")
    assert project.resolve("pkg.Impl", user) == "pkg.impl.Impl"
    assert project.resolve("pkg.Impl", user) == "pkg.impl.Impl"
    with recording() as reads:
        assert project.resolve("pkg.Impl", user) == "pkg.impl.Impl"
    assert {os.path.relpath(p, tmp_path) for p in reads.paths} == {
        os.path.join("pkg", "__init__.py"),
        os.path.join("pkg", "impl.py"),
    }


def test_a_module_under_a_sys_path_folder_records_the_adding_file_every_time(
    tmp_path: Path,
) -> None:
    """A name resolved under a folder ``_init_paths.py`` puts on ``sys.path``
    depends on that file: every lint that resolves it records it (the
    editor re-lints on its change), the second one from memory too."""
    from torchtrap.project.index import recording

    files = {
        "src/_init_paths.py": (
            "import os.path as osp\nimport sys\n\n"
            "sys.path.insert(0, osp.join(osp.dirname(__file__), 'lib'))\n"
        ),
        "src/lib/detectors/__init__.py": "",
        "src/lib/detectors/detector.py": "class Detector:\n    pass\n",
        "src/test.py": "import _init_paths\nfrom detectors.detector import Detector\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    project = index(tmp_path)
    importer = str(tmp_path / "src" / "test.py")
    for _ in range(2):
        with recording() as reads:
            found = project.resolve("detectors.detector.Detector", importer)
        assert found is not None and found.endswith("Detector"), found
        assert str(tmp_path / "src" / "_init_paths.py") in reads.paths
