"""The project index: per-module summaries and the cross-file view rules use.

See :mod:`torchtrap.project.index` for the API rules call (``ctx.project``).
"""

from torchtrap.project.build import layout_for, module_for, project_files, summarize_source
from torchtrap.project.index import (
    PENDING,
    NeedsProject,
    Project,
    ProjectArg,
    ProjectLoader,
    location,
    module_key,
)
from torchtrap.project.layout import find_root, module_name, source_roots
from torchtrap.project.summary import (
    SUMMARY_VERSION,
    ArgFact,
    CallSite,
    ClassFact,
    FunctionFact,
    LoaderFact,
    ModuleSummary,
    Span,
    summarize,
)

__all__ = [
    "PENDING",
    "SUMMARY_VERSION",
    "ArgFact",
    "CallSite",
    "ClassFact",
    "FunctionFact",
    "LoaderFact",
    "ModuleSummary",
    "NeedsProject",
    "Project",
    "ProjectArg",
    "ProjectLoader",
    "Span",
    "find_root",
    "layout_for",
    "module_for",
    "project_files",
    "summarize_source",
    "location",
    "module_key",
    "module_name",
    "source_roots",
    "summarize",
]
