"""The fixture projects (tests/projects/*) and a project index built from
one, as `torchtrap check`'s first pass would build it."""

from __future__ import annotations

from pathlib import Path

from torchtrap.config import load_config
from torchtrap.project import Project, module_for, project_files, summarize_source

PROJECTS = Path(__file__).resolve().parent.parent / "projects"


def index(root: Path) -> Project:
    config = load_config(root)
    summaries = []
    for path in project_files(root, config):
        summary = summarize_source(path.read_bytes(), str(path), module_for(path, config))
        assert summary is not None
        summaries.append(summary)
    return Project(summaries)
