"""`torchtrap check` on multi-file projects: findings across files, -j, the cache, bad input."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from torchtrap import cli

PROJECTS = Path(__file__).resolve().parent.parent / "projects"


def check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["check", "--color", "never", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def findings(
    capsys: pytest.CaptureFixture[str], root: Path, *argv: str
) -> list[tuple[str, int, str]]:
    _, out, _ = check(capsys, "--format", "json", *argv)
    data = json.loads(out)["findings"]
    return sorted(
        (Path(f["path"]).relative_to(root).as_posix(), f["range"]["start"]["line"], f["code"])
        for f in data
    )


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    shutil.copytree(PROJECTS / "flat", tmp_path / "flat")
    return tmp_path / "flat"


DATASETS_EXPECTED = [
    ("datasets.py", 10, "TT101"),  # Noisy: num_workers=4 in train.py
    ("datasets.py", 11, "TT103"),  # Noisy's CUDA tensor, same DataLoader
    ("datasets.py", 50, "TT101"),  # GlobalSeeded: its worker_init_fn seeds only globals
    ("datasets.py", 63, "TT101"),  # Table: no Dataset base, a DataLoader gets it
    # near misses: Quiet (num_workers=0 only), Reseeded (worker_init_fn re-creates
    # the generator in utils.py), Unused (no DataLoader gets it)
]
FLAT_EXPECTED = [
    *DATASETS_EXPECTED,
    ("losses.py", 6, "TT201"),  # bce() is given a Discriminator's (sigmoid) output
    # near miss: nll() is only given utils.safe_probs(), which clamps
    ("train.py", 24, "TT201"),  # utils.probs() returns a sigmoid; safe_probs() clamps
    ("train.py", 32, "TT202"),  # X: item of a batch of the DataLoader fit() is given
    ("train.py", 34, "TT202"),  # y: same; disc.to(device) (a module) and replay()'s
    # list of dicts stay silent
    ("train.py", 42, "TT106"),  # fit() iterates the 4-worker loader at top level, no guard
]


def test_flat_project_links_datasets_to_loaders_in_train_py(
    flat: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert findings(capsys, flat, str(flat)) == FLAT_EXPECTED
    _, out, _ = check(capsys, "--format", "json", str(flat))
    first = json.loads(out)["findings"][0]
    assert "DataLoader workers (train.py:5):" in first["message"]
    assert first["related"][0]["path"] == str(flat / "train.py")
    assert first["related"][0]["range"]["start"] == {"line": 5, "column": 8}
    assert "in train.py:5" in first["related"][0]["message"]
    assert first["fixes"] == []  # a fix would have to edit train.py


def test_one_file_checked_still_sees_its_project(
    flat: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = findings(capsys, flat, str(flat / "datasets.py"))
    assert got == DATASETS_EXPECTED
    _, out, _ = check(capsys, str(flat / "datasets.py"), "--format", "sarif")
    result = json.loads(out)["runs"][0]["results"][0]
    assert result["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "train.py"
    )


def test_text_output_names_the_other_file(flat: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chdir(flat)
    _, out, _ = check(capsys, ".")
    assert "= note: train.py:5:9: DataLoader with num_workers=4 in train.py:5 copies" in out


def test_without_the_index_datasets_py_alone_is_unknown(
    flat: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # stdin has no project: the one-file warnings of before
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO((flat / "datasets.py").read_text()))
    _, out, _ = check(capsys, "-", "--format", "json")
    got = [
        (f["range"]["start"]["line"], f["code"], f["severity"]) for f in json.loads(out)["findings"]
    ]
    assert got == [
        (10, "TT101", "warning"),
        (24, "TT101", "warning"),
        (37, "TT101", "warning"),
        (50, "TT101", "warning"),
    ]


def test_src_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "srclayout"
    shutil.copytree(PROJECTS / "srclayout", root)
    assert findings(capsys, root, str(root)) == [("src/vision/data/crops.py", 7, "TT101")]
    # without `src = ["src"]` the default roots (the root and <root>/src) find it too
    (root / "pyproject.toml").write_text("[project]\nname = 'vision'\n")
    assert findings(capsys, root, str(root)) == [("src/vision/data/crops.py", 7, "TT101")]
    # a src setting that points elsewhere: `vision` is not importable, the link is unknown
    (root / "pyproject.toml").write_text('[tool.torchtrap]\nsrc = ["lib"]\n')
    _, out, _ = check(capsys, "--format", "json", str(root))
    assert [f["severity"] for f in json.loads(out)["findings"]] == ["warning"]


def test_relative_imports_and_reexports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "relpkg"
    shutil.copytree(PROJECTS / "relpkg", root)
    _, out, _ = check(capsys, "--format", "json", str(root))
    got = [
        (
            Path(f["path"]).name,
            f["range"]["start"]["line"],
            f["severity"],
            f["related"][0]["path"] if f["related"] else None,
        )
        for f in json.loads(out)["findings"]
    ]
    assert got == [
        ("streams.py", 10, "error", str(root / "toolkit" / "loaders.py")),
        # `Other`: the DataLoader gets fancy.streams.Other, not this class
        ("streams.py", 23, "warning", None),
    ]


def test_parallel_output_is_identical(flat: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(30):  # enough files for a process pool
        (flat / f"extra_{i:02}.py").write_text(
            "from torch.utils.data import DataLoader\nfrom datasets import Noisy\n"
            f"loader = DataLoader(Noisy(), num_workers={i % 3})\n"
        )
    outputs = []
    for jobs in ("1", "2", "3"):
        _, out, _ = check(capsys, "--no-cache", "-j", jobs, str(flat))
        outputs.append(out)
        _, out, _ = check(capsys, "--no-cache", "-j", jobs, "--format", "json", str(flat))
        outputs.append(out)
    assert outputs[0] == outputs[2] == outputs[4]
    assert outputs[1] == outputs[3] == outputs[5]
    assert "extra_01.py" in outputs[1]


def test_cache_reuses_and_invalidates_across_files(
    flat: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TORCHTRAP_CACHE_DIR", str(cache))
    first = check(capsys, str(flat))
    assert (cache / ".gitignore").is_file() and list(cache.rglob("check.pickle"))

    # an unchanged tree is not parsed again
    import torchtrap.engine

    def no_parse(*args: object, **kwargs: object) -> object:
        raise AssertionError("parsed a cached file")

    monkeypatch.setattr(torchtrap.engine, "analyse", no_parse)
    assert check(capsys, str(flat)) == first
    monkeypatch.undo()
    monkeypatch.setenv("TORCHTRAP_CACHE_DIR", str(cache))

    # editing train.py changes the findings in datasets.py
    train = flat / "train.py"
    train.write_text(train.read_text().replace("num_workers=4", "num_workers=0"))
    got = findings(capsys, flat, str(flat))
    assert ("datasets.py", 10, "TT101") not in got and ("datasets.py", 50, "TT101") in got
    assert got == findings(capsys, flat, "--no-cache", str(flat))


def test_corrupt_or_foreign_cache_warns_once_and_rebuilds(
    flat: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TORCHTRAP_CACHE_DIR", str(cache))
    expected = check(capsys, str(flat))[1]
    (pickle_file,) = cache.rglob("check.pickle")
    for damage in (b"garbage", pickle_file.read_bytes()[:100], b"\x80\x04\x95" + b"\x00" * 20):
        pickle_file.write_bytes(damage)
        code, out, err = check(capsys, str(flat))
        assert out == expected
        assert err.count("warning") == 1 and "rebuilding" in err
        assert check(capsys, str(flat))[2] == ""  # rebuilt: silent again
    import pickle

    pickle_file.write_bytes(pickle.dumps(("torchtrap-cache", 1, "0.0.0-other", 1)))
    assert check(capsys, str(flat))[2].count("warning") == 1
    # a pickle that would run code is refused, not executed
    pickle_file.write_bytes(b"cos\nsystem\n(S'echo pwned'\ntR.")
    _, out, err = check(capsys, str(flat))
    assert out == expected and "rebuilding" in err


def test_clean(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flat: Path
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("TORCHTRAP_CACHE_DIR", str(cache))
    check(capsys, str(flat))
    assert cache.is_dir()
    assert cli.main(["clean"]) == 0
    assert not cache.exists()
    assert cli.main(["clean"]) == 0  # nothing to remove: fine


def test_bad_input_gives_at_most_one_warning(
    flat: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (flat / "broken.py").write_text("def f(:\n")
    (flat / "cycle_a.py").write_text("from cycle_b import X\n")
    (flat / "cycle_b.py").write_text("from cycle_a import X\n")
    (flat / "random.py").write_text("def seed(x):\n    pass\n")  # shadows the stdlib
    (flat / "pkg").mkdir()
    (flat / "pkg" / "__init__.py").write_text("from .pkg import *\n")
    (flat / "loop").mkdir()
    (flat / "loop" / "self").symlink_to(flat / "loop", target_is_directory=True)
    code, out, err = check(capsys, "--format", "json", str(flat))
    data = json.loads(out)["findings"]
    got = sorted((Path(f["path"]).name, f["range"]["start"]["line"], f["code"]) for f in data)
    assert ("broken.py", 1, "TT000") in got
    assert [g for g in got if g[0] == "datasets.py"] == DATASETS_EXPECTED
    assert err == ""


def test_file_deleted_while_indexing(
    flat: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        (flat / f"gone_{i}.py").write_text("x = 1\n")
    real = Path.read_bytes

    def vanishing(self: Path) -> bytes:
        if self.name.startswith("gone_"):
            raise FileNotFoundError(2, "No such file or directory")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", vanishing)
    # only datasets.py is checked: the vanished modules were only to be indexed
    code, out, err = check(capsys, "--format", "json", str(flat / "datasets.py"))
    assert len(json.loads(out)["findings"]) == 4
    assert err.count("warning") == 1 and "3 modules" in err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads everything")
def test_unreadable_folder_is_skipped(flat: Path, capsys: pytest.CaptureFixture[str]) -> None:
    locked = flat / "locked"
    locked.mkdir()
    (locked / "m.py").write_text("x = 1\n")
    locked.chmod(0)
    try:
        code, out, err = check(capsys, "--format", "json", str(flat / "datasets.py"))
        assert len(json.loads(out)["findings"]) == 4
    finally:
        locked.chmod(0o755)


def test_second_pass_lints_the_first_pass_parse(
    flat: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With -j 1 a file whose rules asked for the project is parsed once:
    its second lint reuses the first pass's tree and node index (same
    findings as a parse of its own)."""
    import ast

    parsed: list[str] = []
    real_parse = ast.parse

    def counting(source, filename="<unknown>", *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(str(filename))
        return real_parse(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    # The engine's own passes; the whole-program model reads the modules it
    # needs once per process, on its own (values/program.py), and is off here.
    from torchtrap.values import program

    monkeypatch.setattr(program, "MAX_FILES", 0)
    monkeypatch.setattr(program, "MAX_IMPORTED", 0)
    assert findings(capsys, flat, "--no-cache", "-j", "1", str(flat)) == FLAT_EXPECTED
    datasets = str(flat / "datasets.py")
    assert parsed.count(datasets) == 1, parsed
