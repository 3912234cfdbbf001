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


def remote_base_methods(
    info: ClassInfo, classes: ClassTable, project: Project | None, path: str
) -> set[str] | None:
    """The methods the class's bases in other files of the project define
    (their own bases too); None when a base another file should define is
    not in the project (unknown, not "none")."""
    if project is None:
        return set()
    found: set[str] = set()
    todo: list[str] = []
    for cls in classes.lineage(info):
        for base in cls.bases:
            name = dotted_name(base)
            if name is None:
                return None
            if classes.get(name) is not None:
                continue
            ref = project.ref(path, name)
            if ref is None:
                if name.startswith(("nn.", "torch.")) or name in ("Module", "object"):
                    continue  # torch's own classes: nothing of the project's
                return None
            todo.append(ref)
    seen: set[str] = set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        fact = project.class_fact(ref)
        if fact is None:
            continue  # a third-party base (torch.nn.Module)
        found.update(fact[1].methods)
        todo.extend(b for b in project.bases(ref) if b)
    return found
