"""Rules that exist only in the LSP tests: they pin behaviour the server
must have whatever the real rules do (a fix per finding, an unsafe
alternative, related information, a rule that crashes, a slow rule).

Codes TT9xx are never used by real rules.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Iterable

from torchtrap.findings import Applicability, Edit, Finding, Fix, Severity, unsafe_title
from torchtrap.rules.base import Rule


class FakeDanger(Rule):
    """Flags calls to `danger()`.

    ## What it does
    Flags `danger(x)`.

    ## Why is this bad?
    It is dangerous.

    ## Example
    ```python
    danger(x)
    ```

    ## Use instead
    ```python
    safe(x)
    ```

    ## References
    - nowhere
    """

    code = "TT901"
    name = "fake-danger"
    summary = "Calls to danger()"
    default_severity = Severity.WARNING
    requires_text = ("danger",)

    def check(self) -> Iterable[Finding]:
        tree = self.ctx.tree
        imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in ast.walk(self.ctx.tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "danger"
            ):
                continue
            name_range = self.ctx.range(node.func)
            call_range = self.ctx.range(node)

            def rename(r=name_range) -> list[Edit]:
                return [Edit(r, "safe")]

            def delete(r=call_range) -> list[Edit]:
                return [Edit(r, "None")]

            related = [self.ctx.related(imports[0], "imported here")] if imports else []
            yield self.finding(
                node,
                "danger() is dangerous",
                fixes=[
                    Fix("Replace `danger` with `safe`", Applicability.SAFE, rename),
                    Fix(
                        unsafe_title("Delete the call", "drops what it computes"),
                        Applicability.UNSAFE,
                        delete,
                    ),
                ],
                related=related,
            )


class FakeBroken(Rule):
    """Always crashes on files that mention `boom`."""

    code = "TT902"
    name = "fake-broken"
    summary = "Crashes"
    requires_text = ("boom",)

    def check(self) -> Iterable[Finding]:
        raise RuntimeError("fake rule exploded")


class FakeSlow(Rule):
    """Sleeps `N` ms for a file containing `# sleep: N` (to test the
    version guard against a lint still running when the text changes)."""

    code = "TT903"
    name = "fake-slow"
    summary = "Slow"
    requires_text = ("# sleep:",)

    def check(self) -> Iterable[Finding]:
        text = self.ctx.text
        ms = int(text.split("# sleep:", 1)[1].split()[0])
        time.sleep(ms / 1000)
        return []


FAKE_RULES: list[type[Rule]] = [FakeDanger, FakeBroken, FakeSlow]


def install() -> None:
    """Register the fakes next to the real rules (in this process)."""
    import torchtrap.engine as engine
    import torchtrap.rules as rules

    for rule in FAKE_RULES:
        if rule not in rules.ALL_RULES:
            rules.ALL_RULES.append(rule)
            rules.RULES_BY_CODE[rule.code] = rule
    assert engine.ALL_RULES is rules.ALL_RULES
