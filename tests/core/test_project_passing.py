"""A parameter's model as the join over its call sites in other files
(project/passing.py, values.remote.passed_model_layers): TT207 on a method
whose callers are in another file, ``obj.m(...)`` with ``obj = Cls(...)``,
factories followed to the class, and the near misses that keep it silent
(callers that disagree, the mode switched, a class without Dropout, a
method of that name called on a receiver of unknown class, an unresolved
factory)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from torchtrap import cli
from torchtrap.project import Project, summarize_source

NETS = """
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(self.fc(x))

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    def _build(cls):
        model = cls()
        return model

    def build_net():
        return Net().to("cpu")

    def build_deep():
        '''Returns the net: the docstring's "return" words do not count.'''
        return build_net()

    def build_plain():
        return Plain()
"""

SOLVER = """
    import torch

    class Solver:
        def __init__(self, loader):
            self.loader = loader

        def train(self, model, optimizer):
            model.train()
            for x, y in self.loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
            return self.test(model)

        def test(self, model):
            total = 0
            for x, _ in self.loader:
                with torch.no_grad():
                    total += model(x).sum()
            return total
"""

EVALUATE = """
    import torch

    def evaluate(model, loader):
        with torch.no_grad():
            return [model(x) for x in loader]
"""


def _tt207(capsys: pytest.CaptureFixture[str], root: Path) -> list[tuple[str, int]]:
    code = cli.main(
        ["check", "--color", "never", "--no-cache", "--format", "json", "--select", "TT207"]
        + [str(root)]
    )
    out, err = capsys.readouterr()
    assert "Traceback" not in err and code in (0, 1)
    return sorted(
        (Path(f["path"]).relative_to(root).as_posix(), f["range"]["start"]["line"])
        for f in json.loads(out)["findings"]
    )


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, code in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code), encoding="utf-8")
    return root


def test_a_method_called_from_another_file_with_a_factory_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # solver.test(model) <- self.test in Solver.train <- main.py solver.train(net)
    # <- build_deep() -> build_net() -> Net(): three calls and two factories deep.
    root = _write(
        tmp_path,
        {
            "nets.py": NETS,
            "solver.py": SOLVER,
            "main.py": """
                import torch
                from nets import build_deep
                from solver import Solver

                def main(loader):
                    solver = Solver(loader)
                    net = build_deep()
                    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
                    return solver.train(net, optimizer)
            """,
        },
    )
    assert _tt207(capsys, root) == [("solver.py", 20)]


def test_a_module_function_called_from_another_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _write(
        tmp_path,
        {
            "nets.py": NETS,
            "evaluate.py": EVALUATE,
            "main.py": """
                from nets import Net
                from evaluate import evaluate

                if __name__ == "__main__":
                    net = Net()
                    evaluate(net, [1, 2])
            """,
        },
    )
    assert _tt207(capsys, root) == [("evaluate.py", 6)]


@pytest.mark.parametrize(
    ("main", "note"),
    [
        (
            """
            from nets import build_plain
            from evaluate import evaluate

            if __name__ == "__main__":
                evaluate(build_plain(), [1])
            """,
            "a model without Dropout/BatchNorm",
        ),
        (
            """
            from nets import Net
            from evaluate import evaluate

            def main(loader):
                net = Net()
                net.eval()
                evaluate(net, loader)
            """,
            "the caller switches the model to eval mode",
        ),
        (
            """
            from nets import Net
            from evaluate import evaluate

            def main(loader, other):
                evaluate(Net(), loader)
                evaluate(other, loader)
            """,
            "callers that disagree: one passes a parameter of unknown value",
        ),
        (
            """
            from nets import Net
            from evaluate import evaluate

            def main(loader, flag):
                net = Net()
                if flag:
                    net = load()
                evaluate(net, loader)
            """,
            "the name is bound twice",
        ),
        (
            """
            from elsewhere import make
            from evaluate import evaluate

            if __name__ == "__main__":
                evaluate(make(), [1])
            """,
            "an unresolved import: unknown",
        ),
        (
            """
            from nets import _build, Net
            from evaluate import evaluate

            if __name__ == "__main__":
                evaluate(_build(Net), [1])
            """,
            "a factory whose class is a parameter: not followed",
        ),
        (
            """
            from nets import Net
            from evaluate import evaluate

            if __name__ == "__main__":
                evaluate(Net().eval(), [1])
            """,
            "switched to eval on the way",
        ),
    ],
)
def test_near_misses_of_a_module_function(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, main: str, note: str
) -> None:
    root = _write(tmp_path, {"nets.py": NETS, "evaluate.py": EVALUATE, "main.py": main})
    assert _tt207(capsys, root) == [], note


@pytest.mark.parametrize(
    ("main", "note"),
    [
        (
            """
            from nets import build_net
            from solver import Solver

            def main(loader, trainer, optimizer):
                Solver(loader).train(build_net(), optimizer)
                trainer.train(loader, optimizer)
            """,
            "a method of that name called on a receiver of unknown class",
        ),
        (
            """
            from nets import build_net
            from solver import Solver

            def main(loader, optimizer, solver):
                net = build_net()
                solver.train(net, optimizer)
            """,
            "the receiver is a parameter: its class is unknown",
        ),
    ],
)
def test_near_misses_of_a_method(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, main: str, note: str
) -> None:
    root = _write(tmp_path, {"nets.py": NETS, "solver.py": SOLVER, "main.py": main})
    assert _tt207(capsys, root) == [], note


def test_the_project_joins_the_call_sites(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "nets.py": NETS,
            "a.py": "from nets import Net\nfrom evaluate import evaluate\n\n\ndef main():\n"
            "    evaluate(Net(), 1)\n",
            "b.py": "import evaluate\nfrom nets import build_deep\n\n\ndef main():\n"
            "    evaluate.evaluate(build_deep(), 2)\n",
            "c.py": "from nets import Net\nfrom evaluate import evaluate\n\nevaluate(Net(), 3)\n",
            "evaluate.py": EVALUATE,
        },
    )
    summaries = []
    for path in sorted(root.glob("*.py")):
        summary = summarize_source(path.read_text(), str(path), (path.stem, False))
        assert summary is not None
        summaries.append(summary)
    project = Project(summaries)
    passed = project.passed_values("evaluate.evaluate", 0, "model")
    # c.py is not a driver (no main, no __main__): its call is counted, not kept
    assert passed is None
    (root / "c.py").unlink()
    project = Project([s for s in summaries if not s.path.endswith("c.py")])
    passed = project.passed_values("evaluate.evaluate", 0, "model")
    assert passed is not None
    assert sorted(made for _, _, made in passed) == ["nets.Net", "nets.build_deep"]
    assert project.made_class("nets.build_deep") == "nets.Net"
    assert project.made_class("nets._build") is None
    assert project.passed_values("evaluate.evaluate", 1, "loader") is None  # constants: unknown


def test_factory_cycles_and_self_calls_are_bounded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _write(
        tmp_path,
        {
            "nets.py": "def a():\n    return b()\n\n\ndef b():\n    return a()\n",
            "evaluate.py": """
                import torch

                def evaluate(model, n):
                    with torch.no_grad():
                        model(n)
                    if n:
                        evaluate(model, n - 1)
            """,
            "main.py": """
                from nets import a
                from evaluate import evaluate

                if __name__ == "__main__":
                    evaluate(a(), 3)
            """,
        },
    )
    assert _tt207(capsys, root) == []
    summaries = [
        summarize_source(p.read_text(), str(p), (p.stem, False)) for p in sorted(root.glob("*.py"))
    ]
    project = Project([s for s in summaries if s is not None])
    assert project.made_class("nets.a") is None  # a -> b -> a: past the cut-off, unknown
