"""What a class of this file is, with the project's evidence for bases that
other files define. Here, above ``facts`` and ``project``, so that neither
imports the other."""

from __future__ import annotations

from torchtrap.facts.classes import MODULE_BASES, ClassInfo, ClassTable
from torchtrap.facts.imports import dotted_name
from torchtrap.project.index import Project


def is_module_class(
    info: ClassInfo, classes: ClassTable, project: Project | None, path: str
) -> bool:
    """An nn.Module: through bases this file defines or imports from torch,
    or (with a project) through a base another file of the project defines
    (``class Encoder(FairseqEncoder)``). A base nothing resolves is unknown:
    not a module."""
    if classes.is_module(info):
        return True
    if project is None:
        return False
    for cls in classes.lineage(info):
        for base in cls.bases:
            name = dotted_name(base)
            if name is None or classes.get(name) is not None:
                continue
            ref = project.ref(path, name)
            if ref is not None and project.derives_from(ref, MODULE_BASES):
                return True
    return False
