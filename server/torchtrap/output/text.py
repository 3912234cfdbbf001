"""Human output, modelled on ruff's: location, code, message, a source
excerpt with carets, the fixes on offer and related locations."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from torchtrap.findings import Finding, Severity
from torchtrap.output import FileReport
from torchtrap.rules import RULES_BY_CODE
from torchtrap.source import SourceText


class Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("1;31", text)

    def yellow(self, text: str) -> str:
        return self._wrap("1;33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def blue(self, text: str) -> str:
        return self._wrap("1;34", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def severity(self, severity: Severity, text: str) -> str:
        return self.red(text) if severity is Severity.ERROR else self.yellow(text)


def _excerpt(source: SourceText, finding: Finding, style: Style) -> list[str]:
    start, end = finding.range.start, finding.range.end
    last = min(end.line, start.line + 4)  # long ranges: the first lines are enough
    width = len(str(last))
    gutter = style.blue(" " * width + " |")
    out = [gutter]
    for lineno in range(start.line, last + 1):
        text = (
            source.line(lineno).expandtabs(4)
            if "\t" in source.line(lineno)
            else source.line(lineno)
        )
        out.append(f"{style.blue(str(lineno).rjust(width) + ' |')} {text}")
        if lineno == start.line:
            col = start.column
            stop = end.column if end.line == lineno else len(source.line(lineno))
            prefix = source.line(lineno)[:col]
            pad = len(prefix.expandtabs(4)) if "\t" in prefix else _display_width(prefix)
            marked = source.line(lineno)[col:stop]
            carets = "^" * max(_display_width(marked), 1)
            suffix = f" {finding.code}" if end.line == lineno else ""
            out.append(f"{gutter} {' ' * pad}{style.severity(finding.severity, carets + suffix)}")
    out.append(gutter)
    return out


def _display_width(text: str) -> int:
    # East Asian wide characters (the seed authors' comments) take two cells.
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def render_finding(finding: Finding, source: SourceText | None, style: Style) -> str:
    start = finding.range.start
    fixable = " [*]" if any(f.is_safe for f in finding.fixes) else (" [-]" if finding.fixes else "")
    where = finding.path if finding.cell is None else f"{finding.path}:cell {finding.cell}"
    if finding.is_syntax_error:
        return f"{style.bold(where)}:{start.line}:{start.column + 1}: {style.red(finding.message)}"
    head = (
        f"{style.bold(where)}{style.cyan(':')}{start.line}{style.cyan(':')}"
        f"{start.column + 1}{style.cyan(':')} "
        f"{style.severity(finding.severity, finding.code)}{fixable} {finding.message}"
    )
    lines = [head]
    if source is not None:
        lines.extend(_excerpt(source, finding, style))
    for fix in finding.fixes:
        # An unsafe fix's title already ends with "(unsafe: <why>)".
        tag = " (safe fix)" if fix.is_safe else ""
        lines.append(f"  {style.cyan('= help')}: {fix.title}{tag}")
    for rel in finding.related:
        rel_path = rel.path or finding.path
        if rel.cell is not None:
            rel_path += f":cell {rel.cell}"
        at = f"{rel_path}:{rel.range.start.line}:{rel.range.start.column + 1}"
        lines.append(f"  {style.cyan('= note')}: {at}: {rel.message}")
    return "\n".join(lines) + "\n"


def render(reports: Sequence[FileReport], style: Style, *, show_source: bool = True) -> str:
    chunks = []
    for report in reports:
        source = SourceText(report.source) if (report.source is not None and show_source) else None
        for finding in report.findings:
            if report.cells is not None and show_source and finding.cell in report.cells:
                source = SourceText(report.cells[finding.cell])
            chunks.append(render_finding(finding, source, style))
    return "\n".join(chunks)


def summary(reports: Sequence[FileReport], style: Style, *, fix_mode: bool, unsafe: bool) -> str:
    findings = [f for r in reports for f in r.findings]
    issues = [f for f in findings if f.severity is not Severity.HINT]
    hints = len(findings) - len(issues)
    hidden = sum(r.hidden_hints for r in reports)
    fixed = sum(r.fixed for r in reports)
    parts = []
    if fixed:
        parts.append(f"Fixed {fixed} {'issue' if fixed == 1 else 'issues'}.")
    if not issues:
        if not fixed:
            parts.append(style.bold("All checks passed!"))
        else:
            parts.append("No issues left.")
    else:
        line = f"Found {_count(len(issues), 'issue')}"
        if fixed:
            line += " remaining"
        parts.append(line + (f" and {_count(hints, 'hint')}." if hints else "."))
    if hints and not issues:
        parts.append(f"{_count(hints, 'hint')} (modernisation, not bugs: they never fail check).")
    if hidden:
        parts.append(
            f"{_count(hidden, 'hint')} hidden (modernisation, not bugs); `--show-hints` shows them."
        )
    safe = sum(1 for f in findings if any(x.is_safe for x in f.fixes))
    only_unsafe = sum(1 for f in findings if f.fixes and not any(x.is_safe for x in f.fixes))
    offers = []
    if safe and not fix_mode:
        offers.append(f"{safe} fixable with `--fix`")
    if only_unsafe and not unsafe:
        offers.append(f"{only_unsafe} more with `--fix --unsafe-fixes`")
    if offers:
        parts.append("[*] " + "; ".join(offers) + ".")
    return "\n".join(parts) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def statistics(reports: Sequence[FileReport]) -> str:
    counts = Counter(f.code for r in reports for f in r.findings)
    fixable = {f.code for r in reports for f in r.findings if any(x.is_safe for x in f.fixes)}
    lines = []
    for code, count in counts.most_common():
        rule = RULES_BY_CODE.get(code)
        name = rule.name if rule else "syntax-error"
        lines.append(f"{count:>5}  {code}  {'[*]' if code in fixable else '   '} {name}")
    return "\n".join(lines) + ("\n" if lines else "")
