"""Each runtime check: a small CPU script where it fires and the fixed
script (a near miss) where it must not, run through the CLI."""

from __future__ import annotations

import pytest

from tests.run.helpers import SCRIPTS, found, line_of, run_cli

# script -> [(code, text on the expected line, attribute path of the object)]
FIRES = {
    "tt101_fires": [
        ("TT101", "self.rng = random.Random(0)", "dataset.transform.rng"),
        ("TT101", "self.rng = np.random.default_rng(0)", "dataset.rng"),
    ],
    # the line to change: the worker_init_fn's np.random.seed (issue 36, item 6)
    "tt102_fires": [("TT102", "np.random.seed(1234)", "numpy.random")],
    "tt102_epochs_fires": [("TT102", "np.random.seed(worker_id)", "numpy.random")],
    "tt103_fires": [("TT103", "self.mean = fake_cuda(", "dataset.mean")],
    "tt104_fires": [("TT104", "self.weights = fake_cuda(", "collate_fn.__self__.weights")],
    "tt105_fires": [("TT105", "def __iter__(self):", "dataset")],  # where to shard
    "tt107_fires": [("TT107", "self.items = [", "dataset.items")],
    "tt207_fires": [("TT207", 'print("val", model(x)', "Sequential")],
    # after many steps, gradients off without a `with`: the forward hook is
    # installed whenever gradients go off, not for the first N steps
    "tt207_late_fires": [
        ("TT207", "return model(x).mean()", "Sequential"),
        ("TT207", "val = [model(x)", "Sequential"),
    ],
    "tt215_fires": [("TT215", "opt.step()", "SGD")],
    "tt216_fires": [("TT216", "opt.step()", "SGD")],
    "tt217_fires": [("TT217", "clip_grad_norm_(", "clip_grad_norm_")],
    "tt108_fires": [("TT108", "for (batch,) in loader:", "DistributedSampler")],
}
NEAR_MISSES = [
    "tt101_fixed",
    "tt102_fixed",
    "tt103_fixed",
    "tt104_fixed",
    "tt105_fixed",
    "tt107_fixed",
    "tt207_fixed",
    "tt207_late_fixed",
    "tt207_teacher",
    "tt215_fixed",
    "tt216_fixed",
    "tt216_frozen_bn",
    "tt217_fixed",
    "tt108_fixed",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIRES))
def test_check_fires(name: str) -> None:
    script = SCRIPTS / f"{name}.py"
    proc, doc = run_cli(script.name)
    assert proc.returncode == 0, proc.stderr
    assert doc is not None, proc.stderr
    expected = sorted((code, line_of(script, text), obj) for code, text, obj in FIRES[name])
    assert found(doc) == expected, proc.stderr
    for finding in doc["findings"]:
        assert finding["path"] == str(script)
        assert finding["source"] == "torchtrap-run"
        assert finding["message"].endswith("(seen when run)")
        assert finding["measured"], finding
        assert finding["docs"].endswith(f"/docs/rules/{finding['code']}.md")


# What proves each finding, and what to do (issue 36, item 6): script -> (related
# locations as (text on the line, message), words of the action in the message).
ACTIONABLE = {
    "tt216_fires": ([("model.eval()", "the model was put in eval mode here")], "model.train()"),
    "tt102_fires": (
        [("loader = DataLoader(", "the DataLoader is created here")],
        "np.random.seed(torch.initial_seed() % 2**32)",
    ),
    "tt105_fires": (
        [("loader = DataLoader(", "the DataLoader with 2 workers is created here")],
        "get_worker_info()",
    ),
    "tt215_fires": ([], "optimizer.zero_grad()"),
    "tt101_fires": ([("DataLoader(", "the DataLoader is created here")], "torch.initial_seed()"),
    "tt103_fires": (
        [("for batch in loader", "the DataLoader iterator started here")],
        "move each batch to the GPU",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ACTIONABLE))
def test_findings_say_what_to_do_and_what_proves_them(name: str) -> None:
    script = SCRIPTS / f"{name}.py"
    related, action = ACTIONABLE[name]
    proc, doc = run_cli(script.name)
    assert doc is not None, proc.stderr
    for finding in doc["findings"]:
        assert action in finding["message"], finding["message"]
        got = [(r["range"]["start"]["line"], r["message"]) for r in finding["related"]]
        assert got == [(line_of(script, text), message) for text, message in related]


@pytest.mark.slow
@pytest.mark.parametrize("name", NEAR_MISSES)
def test_near_miss_is_silent(name: str) -> None:
    proc, doc = run_cli(f"{name}.py")
    assert proc.returncode == 0, proc.stderr
    assert doc is not None, proc.stderr
    assert doc["findings"] == [], doc["findings"]
    assert doc["notes"] == []


def test_near_misses_are_the_fixed_scripts() -> None:
    for name in NEAR_MISSES:
        assert (SCRIPTS / f"{name}.py").exists()
    for name in FIRES:
        fixed = SCRIPTS / f"{name.replace('_fires', '_fixed')}.py"
        assert fixed.exists() or name == "tt102_epochs_fires", name


@pytest.mark.slow
def test_the_static_fix_makes_the_run_silent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """TT101's example: the run confirms the static finding's line; after
    `check --fix` the same script runs clean (and prints RESULT: ok)."""
    import shutil
    import subprocess
    import sys

    from tests.run.helpers import torchtrap_env

    example = SCRIPTS.parents[2] / "examples" / "tt101_stored_rng.py"
    script = tmp_path / example.name
    shutil.copy(example, script)
    proc, doc = run_cli(script.name, cwd=tmp_path)
    assert doc is not None and "RESULT: bug" in proc.stdout
    assert found(doc) == [("TT101", line_of(script, "self.rng = np.random"), "dataset.rng")]
    # the static rule sees it too: the run's finding carries its fix, edits and all
    (fix,) = doc["findings"][0]["fixes"]
    assert fix["applicability"] == "safe" and fix["edits"], fix
    text = tmp_path / "report.txt"
    run_cli(script.name, cwd=tmp_path, options=("--format", "text"), out=text)
    assert f"= help: {fix['title']} (safe fix)" in text.read_text(encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "torchtrap", "check", "--fix", script.name],
        cwd=tmp_path,
        env=torchtrap_env(),
        check=True,
        capture_output=True,
    )
    proc, doc = run_cli(script.name, cwd=tmp_path)
    assert doc is not None and "RESULT: ok" in proc.stdout
    assert doc["findings"] == []
