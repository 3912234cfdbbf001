"""Which project modules import which, kept current one summary at a time:
the files whose findings may change when another file changes.

A finding can rest on a file two imports away: TT201 in ``losses.py`` on
the Sigmoid that ends ``models.py``'s network, both imported by
``train.py``, which passes one's output to the other; a DataLoader in
``train.py`` that gets ``datasets.py``'s class through a package's
``__init__.py``; a subclass whose base sits in a third module. So a change
in module M concerns document D when one imports the other, when one
imports a module that imports the other, or when some module imports both.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from torchtrap.project.index import Project, module_key
from torchtrap.project.summary import ModuleSummary


class ImportGraph:
    def __init__(self) -> None:
        # path -> (the summary the edges were computed from, modules it imports)
        self._edges: dict[str, tuple[ModuleSummary, frozenset[str]]] = {}
        self._importers: dict[str, set[str]] = {}  # module key -> importing module keys
        self._imported: dict[str, frozenset[str]] = {}  # module key -> modules it imports
        self._paths: dict[str, str] = {}  # module key -> path

    @classmethod
    def of(cls, project: Project) -> ImportGraph:
        """Every module's edges (a few hundred milliseconds for a thousand
        modules: built off the event loop)."""
        graph = cls()
        for summary in project:
            graph.imports(project, summary)
        return graph

    def imports(self, project: Project, summary: ModuleSummary) -> frozenset[str]:
        """The modules ``summary`` imports; records them when ``summary`` is
        its file's current one (computed again only when it changed)."""
        path = os.path.abspath(summary.path)
        known = self._edges.get(path)
        if known is not None and known[0] is summary:
            return known[1]
        edges = project.imported_modules(summary)
        if project.summary(path) is summary:
            self._record(path, summary, edges)
        return edges

    def refresh(self, project: Project) -> None:
        """Catch up with the files that changed since the edges were made."""
        for path in list(self._edges):
            if project.summary(path) is None:
                self.remove(path)
        for summary in project:
            self.imports(project, summary)

    def remove(self, path: str) -> None:
        known = self._edges.pop(os.path.abspath(path), None)
        if known is not None:
            key = module_key(known[0])
            self._imported.pop(key, None)
            self._paths.pop(key, None)
            for module in known[1]:
                self._importers.get(module, set()).discard(key)

    def importers(self, module: str) -> set[str]:
        return self._importers.get(module, set())

    def concerns(
        self, project: Project, doc: ModuleSummary, changed: Iterable[ModuleSummary]
    ) -> bool:
        """Whether a change to the module of ``changed`` (its summaries
        before and after) may change ``doc``'s findings."""
        mine = module_key(doc)
        my_imports = self.imports(project, doc)
        my_importers = self.importers(mine)
        for summary in changed:
            other = module_key(summary)
            other_imports = self.imports(project, summary)
            other_importers = self.importers(other)
            if (
                other in my_imports  # doc imports it
                or mine in other_imports  # it imports doc
                or other_imports & my_importers  # it imports a module importing doc
                or my_imports & other_importers  # doc imports a module importing it
                or my_importers & other_importers  # a module imports both
            ):
                return True
        return False

    def concerned(self, project: Project, changed: Iterable[ModuleSummary]) -> set[str]:
        """The module keys of every recorded module ``concerns`` holds for,
        found from the changed side (a few set unions, not a test of each
        module: a workspace of 2,000 files re-checks its closed files on
        every change)."""
        out: set[str] = set()
        for summary in changed:
            other = module_key(summary)
            other_imports = self.imports(project, summary)
            other_importers = self.importers(other)
            out |= other_importers  # it imports the changed module
            out |= other_imports  # the changed module imports it
            for module in other_imports:  # ...through a module between them
                out |= self._imported.get(module, frozenset())
            for module in other_importers:
                out |= self.importers(module)  # it imports a module importing it
                out |= self._imported.get(module, frozenset())  # a module imports both
            out.discard(other)
        return out

    def concerned_paths(self, project: Project, changed: Iterable[ModuleSummary]) -> set[str]:
        """``concerned``, as the modules' paths."""
        paths = self._paths
        return {paths[key] for key in self.concerned(project, changed) if key in paths}

    def _record(self, path: str, summary: ModuleSummary, edges: frozenset[str]) -> None:
        self.remove(path)
        key = module_key(summary)
        for module in edges:
            self._importers.setdefault(module, set()).add(key)
        self._edges[path] = (summary, edges)
        self._imported[key] = edges
        self._paths[key] = path
