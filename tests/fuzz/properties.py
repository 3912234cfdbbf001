"""The properties every input must satisfy, as plain functions (the
hypothesis tests and the regression tests share them)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

from torchtrap.config import Config
from torchtrap.engine import fix_source, lint
from torchtrap.findings import Finding, Range
from torchtrap.fixes.apply import apply_edits
from torchtrap.notebook import _parses as parses  # ast.parse, warnings off: True/False
from torchtrap.rules import ALL_RULES
from torchtrap.source import UndecodableSource, decode_source

CONFIG = Config()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def no_rule_failures() -> Iterator[None]:
    """Fail if anything logs a warning or worse on the ``torchtrap`` logger
    (the engine logs a rule that raised, and skips it)."""
    handler = _Collect()
    logger = logging.getLogger("torchtrap")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    failures = [handler.format(r) + _exc(r) for r in handler.records]
    assert not failures, "\n".join(failures)


def _exc(record: logging.LogRecord) -> str:
    if not record.exc_info:
        return ""
    import traceback

    return "\n" + "".join(traceback.format_exception(*record.exc_info))


def reference_lines(text: str) -> list[str]:
    """Lines as Python's tokenizer counts them, written independently of
    torchtrap.source: every "\\r\\n", "\\r" and "\\n" ends a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def assert_inside(rng: Range, lines: Sequence[str], what: str) -> None:
    assert rng.start <= rng.end, f"{what}: start after end: {rng}"
    for pos in (rng.start, rng.end):
        assert 1 <= pos.line <= len(lines), f"{what}: line {pos.line} of {len(lines)}: {rng}"
        width = len(lines[pos.line - 1])
        assert 0 <= pos.column <= width, f"{what}: column {pos.column} of {width}: {rng}"


def check_findings(text: str, findings: Sequence[Finding]) -> None:
    lines = reference_lines(text)
    for finding in findings:
        where = f"{finding.code} {finding.message!r}"
        assert_inside(finding.range, lines, where)
        for related in finding.related:
            if related.path is None:
                assert_inside(related.range, lines, f"{where}, related {related.message!r}")


def check_text(text: str, config: Config = CONFIG, *, fixes: bool = True) -> list[Finding]:
    """All properties for one module's text; returns its findings."""
    with no_rule_failures():
        findings = lint(text, "fuzz.py", config, rules=ALL_RULES)
    check_findings(text, findings)
    if not fixes:
        return findings
    parsed = parses(text)
    with no_rule_failures():
        for finding in findings:
            for fix in finding.fixes:
                lines = reference_lines(text)
                for edit in fix.edits:
                    assert_inside(edit.range, lines, f"{finding.code} fix {fix.title!r}")
                fixed = apply_edits(text, fix.edits)  # raises on overlapping edits
                if parsed:
                    assert parses(fixed), f"{finding.code} fix {fix.title!r} broke:\n{fixed}"
        for unsafe in (False, True):
            once, _ = fix_source(text, "fuzz.py", config, unsafe=unsafe, rules=ALL_RULES)
            if parsed:
                assert parses(once), f"fix_source(unsafe={unsafe}) broke:\n{once}"
            twice, count = fix_source(once, "fuzz.py", config, unsafe=unsafe, rules=ALL_RULES)
            assert (twice, count) == (once, 0), (
                f"second fix pass (unsafe={unsafe}) changed:\n{once}"
            )
    return findings


def check_bytes(data: bytes) -> list[Finding]:
    with no_rule_failures():
        findings = lint(data, "fuzz.py", CONFIG, rules=ALL_RULES)
    try:
        text = decode_source(data)
    except UndecodableSource:
        assert [f.code for f in findings] == ["TT000"]
        return findings
    check_findings(text, findings)
    return findings
