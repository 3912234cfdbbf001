from __future__ import annotations

import logging

import pytest

from torchtrap.config import Config
from torchtrap.engine import fix_source, lint
from torchtrap.findings import SYNTAX_ERROR_CODE

from .fake_rules import BrokenRule, FlagPrintRule

RULES = [FlagPrintRule]


def test_positions_are_code_points_on_cjk_and_emoji_lines() -> None:
    src = 'x = "中文🙂"; print(x)\n'
    (finding,) = lint(src, rules=RULES)
    assert finding.range.start.line == 1
    assert finding.range.start.column == src.index("print")
    assert finding.range.end.column == src.index("print") + len("print")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(:\n    print(1)\n", "SyntaxError"),
        (b"print(1)\n# \xff\xfe bad bytes\n", "not valid utf-8: byte 0xff at line 2"),
        ("print(1)\x00\n", "NUL byte"),
        ("if True:\n\tprint(1)\n        print(2)\n", "SyntaxError"),
    ],
)
def test_bad_input_gives_one_tt000_and_no_rule_findings(source: str | bytes, message: str) -> None:
    findings = lint(source, "bad.py", rules=RULES)
    assert [f.code for f in findings] == [SYNTAX_ERROR_CODE]
    assert message in findings[0].message


def test_syntax_error_location() -> None:
    (finding,) = lint('x = "中文" + (\n', rules=RULES)
    assert (finding.range.start.line, finding.range.start.column) == (1, 11)


def test_empty_bom_and_coding_cookie() -> None:
    assert lint("", rules=RULES) == []
    assert len(lint(b"\xef\xbb\xbfprint(1)\n", rules=RULES)) == 1
    latin = "# -*- coding: latin-1 -*-\ns = 'caf\xe9'\nprint(s)\n".encode("latin-1")
    assert [f.range.start.line for f in lint(latin, rules=RULES)] == [3]


def test_ten_thousand_lines_and_deep_nesting() -> None:
    big = "".join(f"x{i} = {i}\nprint(x{i})\n" for i in range(5000))
    assert len(lint(big, rules=RULES)) == 5000
    deep = "x = " + " + ".join(["1"] * 5000) + "\nprint(x)\n"
    assert len(lint(deep, rules=RULES)) == 1


def test_broken_rule_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="torchtrap"):
        findings = lint("print(1)\n", rules=[BrokenRule, FlagPrintRule])
    assert [f.code for f in findings] == ["TT990"]
    assert "TT991 failed" in caplog.text


def test_suppressions() -> None:
    src = (
        "print(1)  # torchtrap: ignore[TT990]\n"
        "print(2)  # noqa: TT990\n"
        "print(3)  # noqa: E501\n"
        "print(4)  # torchtrap: ignore\n"
        "print(5)  # torchtrap: ignore[TT101]\n"
        "print(  # noqa\n    6,\n)\n"
    )
    assert [f.range.start.line for f in lint(src, rules=RULES)] == [3, 5]
    assert lint("# torchtrap: ignore-file\nprint(1)\n", rules=RULES) == []
    assert len(lint("# torchtrap: ignore-file[TT101]\nprint(1)\n", rules=RULES)) == 1


def test_config_select_ignore_and_severity() -> None:
    cfg = Config(ignore=("TT99",))
    from torchtrap.engine import enabled_rules

    assert all(not r.code.startswith("TT99") for r in enabled_rules(cfg))
    cfg = Config().merged(severity={"TT9": "hint", "TT990": "error"})
    (finding,) = lint("print(1)\n", config=cfg, rules=RULES)
    assert finding.severity.value == "error"


def test_fix_source_applies_and_is_idempotent() -> None:
    src = "print(1)\nprint(2)  # keep this comment\n"
    fixed, count = fix_source(src, rules=RULES)
    assert (fixed, count) == ("log(1)\nlog(2)  # keep this comment\n", 2)
    assert fix_source(fixed, rules=RULES) == (fixed, 0)


def test_crlf_is_kept() -> None:
    src = "a = 1\r\nprint(a)\r\n"
    fixed, _ = fix_source(src, rules=RULES)
    assert fixed == "a = 1\r\nlog(a)\r\n"
