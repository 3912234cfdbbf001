"""NumPy's removed aliases of builtin types, and what each one is today.

Measured on numpy 1.23.5, 1.26.4 and 2.4.6: on 1.23 all eight names are the
builtins (with a DeprecationWarning since 1.20); on 1.24-1.26 all eight raise
AttributeError; NumPy 2 re-added ``np.bool`` (``np.bool_``) and ``np.long``
(int64) as numpy scalar types, and the other six still raise.
"""

from __future__ import annotations

from dataclasses import dataclass

REMOVED_IN = (1, 24)
READDED_IN = (2, 0)


@dataclass(frozen=True)
class Alias:
    name: str  # the attribute of numpy
    builtin: str  # what it was an alias of
    readded: bool = False  # a numpy scalar type again since NumPy 2

    def removed_for(self, numpy_version: tuple[int, ...] | None) -> bool:
        """Is this alias gone (AttributeError) for that numpy version? The
        re-added two only when the version is known to be 1.24-1.26."""
        if not self.readded:
            return True
        if numpy_version is None:
            return False
        major_minor = (*numpy_version, 0, 0)[:2]  # "2" means 2.0
        return REMOVED_IN <= major_minor < READDED_IN


ALIASES: dict[str, Alias] = {
    alias.name: alias
    for alias in (
        Alias("float", "float"),
        Alias("int", "int"),
        Alias("object", "object"),
        Alias("str", "str"),
        Alias("unicode", "str"),
        Alias("complex", "complex"),
        Alias("bool", "bool", readded=True),
        Alias("long", "int", readded=True),
    )
}


def numpy_alias(qualname: str | None) -> Alias | None:
    """``numpy.float`` → its Alias; None for anything else."""
    if qualname is None or not qualname.startswith("numpy."):
        return None
    return ALIASES.get(qualname[len("numpy.") :])
