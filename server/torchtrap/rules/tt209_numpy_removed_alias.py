"""TT209: ``np.float``, ``np.int``... : aliases of builtins removed in NumPy 1.24."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from torchtrap.config import resolve_numpy_version
from torchtrap.facts.guards import compatibility_guarded
from torchtrap.facts.numpy_aliases import ALIASES, REMOVED_IN, Alias, numpy_alias
from torchtrap.findings import Applicability, Finding, Fix, Severity
from torchtrap.fixes import edits
from torchtrap.rules.base import Invalid, Rule, Valid


class NumpyRemovedAlias(Rule):
    """Flags `np.float`, `np.int`, `np.object`, `np.str`, `np.unicode`, `np.complex`.

    ## What it does
    Flags the NumPy aliases of builtin types that NumPy 1.24 removed:
    `np.float`, `np.int`, `np.object`, `np.str`, `np.unicode` and `np.complex`,
    through any name numpy is imported as (`import numpy as onp`, `import numpy`),
    and `from numpy import float`. `np.bool` and `np.long` are flagged only when
    the project's numpy is known to be 1.24-1.26: NumPy 2 re-added them as numpy
    scalar types. The numpy version comes from `numpy-version` in
    `[tool.torchtrap]`, else the installed numpy's metadata, else an exact or
    upper-bound pin in `requirements*.txt` / `pyproject.toml`. An error; a
    warning when the project's numpy is known to be older than 1.24 (there the
    alias still works, with a DeprecationWarning).

    Silent on the numpy scalar types (`np.float32`, `np.int64`, `np.bool_`,
    `np.str_`), on `np.bool`/`np.long` on NumPy 2 or an unknown version,
    inside strings and docstrings, on an alias the module puts back itself
    (`np.float = float`, `setattr(np, "float", float)`), under a version check
    and in a `try:` whose handler catches AttributeError/ImportError.

    Ruff's `NPY001` (numpy-deprecated-type-alias) flags the same six names
    (measured with ruff 0.17.6; like this rule it skips `np.bool` and `np.long`,
    and it does not flag `from numpy import float`). With ruff's `NPY` rules
    enabled, ignore one of the two; this rule exists so that TorchTrap users
    without ruff get it with the rest.

    ## Why is this bad?
    The names were only ever the builtins (`np.float is float` on NumPy 1.23,
    with a DeprecationWarning since 1.20). Measured: on NumPy 1.26.4 and 2.4.6,
    `np.float` raises `AttributeError: module 'numpy' has no attribute 'float'`;
    on 1.26.4 `np.bool` and `np.long` raise too, and on 2.4.6 they are
    `numpy.bool` and `numpy.int64`. Code from older tutorials (a gradient-reversal
    `calc_coeff` that returns `np.float(...)`) crashes as soon as the line runs. The
    builtin is the drop-in replacement: `dtype=float` is float64 as before.

    ## Example
    ```python
    def calc_coeff(iter_num, high=1.0, low=0.0, alpha=10.0, max_iter=10000.0):
        ramp = 2.0 * (high - low) / (1.0 + np.exp(-alpha * iter_num / max_iter))
        return np.float(ramp - (high - low) + low)
    ```

    ## Use instead
    ```python
    def calc_coeff(iter_num, high=1.0, low=0.0, alpha=10.0, max_iter=10000.0):
        ramp = 2.0 * (high - low) / (1.0 + np.exp(-alpha * iter_num / max_iter))
        return float(ramp - (high - low) + low)
    ```

    ## References
    - https://numpy.org/devdocs/release/1.20.0-notes.html#deprecations
    - https://numpy.org/devdocs/release/1.24.0-notes.html#expired-deprecations
    - https://numpy.org/devdocs/release/2.0.0-notes.html
    - https://docs.astral.sh/ruff/rules/numpy-deprecated-type-alias/ (NPY001)
    """

    code = "TT209"
    name = "numpy-removed-alias"
    summary = "`np.float`, `np.int`, ...: aliases of builtins that NumPy 1.24 removed"
    default_severity = Severity.ERROR
    requires_text = ("numpy",)

    def check(self) -> Iterable[Finding]:
        imports = self.ctx.facts.imports
        if not imports.imports_module("numpy"):
            return
        version = resolve_numpy_version(self.ctx.config, self.ctx.path)
        candidates = [
            node
            for node in self.ctx.facts.index.of(ast.Attribute)
            if node.attr in ALIASES and numpy_alias(imports.qualname(node)) is not None
        ]
        # A compatibility shim (`np.float = float`, `setattr(np, "float", float)`)
        # puts the alias back for the rest of the program.
        restored = {n.attr for n in candidates if not isinstance(n.ctx, ast.Load)}
        restored |= self._setattr_restored()
        for node in candidates:
            alias = numpy_alias(imports.qualname(node))
            if (
                alias is not None
                and isinstance(node.ctx, ast.Load)
                and alias.name not in restored
                and alias.removed_for(version)
                and not compatibility_guarded(node)
            ):
                yield self._finding(node, alias, version)
        for imp in self.ctx.facts.index.of(ast.ImportFrom):
            if imp.module != "numpy" or imp.level or compatibility_guarded(imp, ("ImportError",)):
                continue
            for name in imp.names:
                alias = ALIASES.get(name.name)
                if alias is None or alias.readded:
                    continue
                yield self.finding(
                    name,
                    f"`from numpy import {alias.name}` raises ImportError on NumPy 1.24+; "
                    f"use the builtin `{alias.builtin}`",
                )

    def _setattr_restored(self) -> set[str]:
        imports = self.ctx.facts.imports
        out: set[str] = set()
        for call in self.ctx.facts.index.of(ast.Call):
            if (
                isinstance(call.func, ast.Name)
                and call.func.id == "setattr"
                and len(call.args) == 3
                and imports.qualname(call.args[0]) == "numpy"
                and isinstance(call.args[1], ast.Constant)
                and isinstance(call.args[1].value, str)
            ):
                out.add(call.args[1].value)
        return out

    def _finding(
        self,
        node: ast.Attribute,
        alias: Alias,
        version: tuple[int, ...] | None,
    ) -> Finding:
        shown = self.ctx.source.segment(self.ctx.range(node))
        when = "NumPy 1.24-1.26" if alias.readded else "NumPy 1.24+"
        # Before 1.24 the alias still works, with a DeprecationWarning.
        severity = Severity.WARNING if version and version < REMOVED_IN else None
        fixes = []
        if not self.ctx.values.shadowed(alias.builtin, node):
            fixes.append(
                Fix(
                    f"Use the builtin `{alias.builtin}`",
                    Applicability.SAFE,
                    build=lambda: [edits.replace(self.ctx.source, node, alias.builtin)],
                )
            )
        return self.finding(
            node,
            f"`{shown}` raises AttributeError on {when} (removed alias); "
            f"use the builtin `{alias.builtin}`",
            fixes=fixes,
            severity=severity,
        )

    valid = (
        Valid(
            """
            import numpy as np

            a = np.zeros(3, dtype=np.float32)
            b = np.arange(3, dtype=np.int64)
            c = np.array([True], dtype=np.bool_)
            d = np.str_("x")
            e = np.float64(1.0)
            """,
            note="numpy scalar types",
        ),
        Valid(
            '''
            import numpy as np

            def cast(x):
                """Was `np.float(x)`; see np.int in the docs."""
                return float(x), "np.float", np.dtype("float")
            ''',
            note="inside strings and docstrings",
        ),
        Valid(
            """
            import numpy as np

            mask = np.zeros(3, dtype=np.bool)
            idx = np.long(3)
            """,
            config={"numpy-version": "2.0"},
            note="np.bool and np.long on NumPy 2: numpy scalar types again",
        ),
        Valid(
            """
            import numpy as np

            mask = np.zeros(3, dtype=np.bool)
            """,
            config={"numpy-version": "1.23"},
            note="np.bool on NumPy 1.23: a deprecated alias that still works",
        ),
        Valid(
            """
            import numpy
            import torch

            class np:
                float = float

            x = torch.float
            y = np.float
            """,
            note="torch.float and a local class: not numpy",
        ),
        Valid(
            """
            import numpy as np

            if not hasattr(np, "float"):
                np.float = float
            setattr(np, "int", int)

            x = np.zeros(3, dtype=np.float)
            y = np.int(4)
            """,
            note="a compatibility shim puts the aliases back",
        ),
        Valid(
            """
            import numpy as np

            if np.lib.NumpyVersion(np.__version__) < "1.20.0":
                FLOAT = np.float
            else:
                FLOAT = float
            try:
                INT = np.int
            except AttributeError:
                INT = int
            try:
                from numpy import float as npfloat
            except ImportError:
                npfloat = float
            """,
            note="version checks and fallbacks",
        ),
    )
    invalid = (
        Invalid(
            """
            import numpy as np

            def calc_coeff(iter_num, high=1.0, low=0.0, alpha=10.0, max_iter=10000.0):
                ramp = 2.0 * (high - low) / (1.0 + np.exp(-alpha*iter_num / max_iter))
                return np.float(ramp - (high - low) + low)
            """,
            line=6,
            severity=Severity.ERROR,
            message_contains="`np.float` raises AttributeError on NumPy 1.24+",
            fixed="""
            import numpy as np

            def calc_coeff(iter_num, high=1.0, low=0.0, alpha=10.0, max_iter=10000.0):
                ramp = 2.0 * (high - low) / (1.0 + np.exp(-alpha*iter_num / max_iter))
                return float(ramp - (high - low) + low)
            """,
            note="a gradient-reversal layer's `calc_coeff`",
        ),
        Invalid(
            """
            import numpy
            import numpy as onp

            masks = numpy.zeros((2, 2), dtype=numpy.int)
            names = onp.array(["a"], dtype=onp.object)
            text = onp.unicode("x"), onp.str(1), onp.complex(1, 2)
            """,
            fixed="""
            import numpy
            import numpy as onp

            masks = numpy.zeros((2, 2), dtype=int)
            names = onp.array(["a"], dtype=onp.object)
            text = onp.unicode("x"), onp.str(1), onp.complex(1, 2)
            """,
            note="any numpy alias; np.unicode becomes str",
        ),
        Invalid(
            """
            import numpy as np

            mask = np.zeros(3, dtype=np.bool)
            """,
            config={"numpy-version": "1.26"},
            message_contains="on NumPy 1.24-1.26",
            fixed="""
            import numpy as np

            mask = np.zeros(3, dtype=bool)
            """,
            note="np.bool where the project's numpy is 1.26",
        ),
        Invalid(
            """
            import numpy as np

            starts = np.full((3,), -1, dtype=np.long)
            """,
            config={"numpy-version": "1.24.4"},
            fixed="""
            import numpy as np

            starts = np.full((3,), -1, dtype=int)
            """,
        ),
        Invalid(
            """
            import numpy as np

            x = np.float(1)
            """,
            config={"numpy-version": "1.23"},
            severity=Severity.WARNING,
            fixed="""
            import numpy as np

            x = float(1)
            """,
            note="NumPy 1.23: deprecated, still works: a warning",
        ),
        Invalid(
            """
            import numpy as np

            def parse(str):
                return np.str(str)
            """,
            message_contains="use the builtin `str`",
            note="`str` shadowed by a parameter: flagged without a fix",
        ),
        Invalid(
            """
            from numpy import float, zeros
            """,
            message_contains="raises ImportError",
            note="from-import: flagged without a fix",
        ),
    )
