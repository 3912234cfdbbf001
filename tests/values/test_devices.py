"""Device values: CUDA or not, through names, defaults and other files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.values.helpers import probe_calls
from torchtrap.facts.devices import Cuda
from torchtrap.project import Project, summarize_source


def _devices(code: str, path: str = "example.py", project: Project | None = None) -> list[Cuda]:
    ctx, calls = probe_calls(code, path, project)
    return [ctx.values.device(c.args[0]) for c in calls]


def test_one_module() -> None:
    code = """
        import torch

        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def f(x, device="cuda:0", other=None):
            local = "cuda"
            probe(local)
            probe(dev)
            probe(device)
            probe(other)
            probe(args.device)
            probe(0)
        """
    assert _devices(code) == [Cuda.YES, Cuda.MAYBE, Cuda.MAYBE, Cuda.NO, Cuda.NO, Cuda.YES]


def _project(files: dict[str, str], tmp: Path) -> Project:
    summaries = []
    for name, code in files.items():
        path = tmp / name
        path.write_text(textwrap.dedent(code), encoding="utf-8")
        summary = summarize_source(path.read_text(), str(path), (name[:-3], False))
        assert summary is not None
        summaries.append(summary)
    return Project(summaries)


def test_a_device_constant_imported_from_another_file(tmp_path: Path) -> None:
    files = {
        "config.py": """
            import torch
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            gpu = "cuda:1"
            twice = "cuda"
            twice = "cpu"
        """,
        "train.py": """
            from config import device, gpu, twice
            from elsewhere import dev

            probe(device)
            probe(gpu)
            probe(twice)
            probe(dev)
        """,
    }
    project = _project(files, tmp_path)
    code = (tmp_path / "train.py").read_text()
    found = _devices(code, str(tmp_path / "train.py"), project)
    assert found == [Cuda.MAYBE, Cuda.YES, Cuda.NO, Cuda.NO]
