"""TT104-TT107 beyond their own examples: message length, structural fixes
that keep strings and comments, notebooks, where cross-file facts plug in;
no safe fix of any rule changes a worker count."""

from __future__ import annotations

import ast
import textwrap

import pytest

from torchtrap.config import from_table
from torchtrap.engine import fix_source, lint
from torchtrap.fixes.apply import apply_edits
from torchtrap.rules import ALL_RULES, RULES_BY_CODE, Invalid, Rule

WORKER_RULES = ("TT104", "TT105", "TT106", "TT107")


@pytest.mark.parametrize("code", WORKER_RULES)
def test_messages_are_short(code: str) -> None:
    rule = RULES_BY_CODE[code]
    for example in rule.invalid:
        for finding in lint(textwrap.dedent(example.code), "example.py", rules=[rule]):
            assert len(finding.message) <= 120, finding.message


SHARD = '''\
from torch.utils.data import DataLoader, IterableDataset

HEADER = """id,text
"""


class Rows(IterableDataset):
    def __init__(self, rows):
        self.rows = list(rows)

    def __iter__(self):
        yield HEADER  # the header first
        for row in self.rows:
            # one row per line
            yield f"""{row},
x"""


loader = DataLoader(Rows(range(4)), num_workers=3)
'''


def test_sharding_fix_keeps_strings_and_comments() -> None:
    fixed, applied = fix_source(SHARD, "rows.py", rules=[RULES_BY_CODE["TT105"]])
    assert applied == 1
    assert "            yield HEADER  # the header first\n" in fixed
    assert '                yield f"""{row},\nx"""\n' in fixed  # continuation line untouched
    assert "                # one row per line\n" in fixed
    assert lint(fixed, "rows.py", rules=[RULES_BY_CODE["TT105"]]) == []
    namespace: dict[str, object] = {}
    exec(compile(fixed.split("\n\n\nloader")[0], "rows.py", "exec"), namespace)
    rows = namespace["Rows"](range(4))  # type: ignore[operator]
    assert list(rows) == ["id,text\n", *(f"{i},\nx" for i in range(4))]  # no workers: unchanged


def test_main_guard_rule_is_silent_in_notebooks() -> None:
    code = (
        "from torch.utils.data import DataLoader\n"
        "for b in DataLoader(range(4), num_workers=2):\n    pass\n"
    )
    rule = RULES_BY_CODE["TT106"]
    assert [f.code for f in lint(code, "train.py", rules=[rule])] == ["TT106"]
    assert lint(code, "train.ipynb", rules=[rule]) == []


def test_main_guard_fix_keeps_dataset_classes_at_module_level() -> None:
    """Spawn workers unpickle the dataset by its module-level name: the fix
    must not move classes or functions into main()."""
    code = textwrap.dedent(
        """\
        from torch.utils.data import DataLoader, Dataset

        data = [1, 2, 3]


        class Items(Dataset):
            def __len__(self):
                return 3

            def __getitem__(self, i):
                return i


        for batch in DataLoader(Items(), num_workers=2):
            print(batch)
        """
    )
    fixed, applied = fix_source(code, "train.py", rules=[RULES_BY_CODE["TT106"]])
    assert applied == 1
    tree = ast.parse(fixed)
    assert [type(s).__name__ for s in tree.body] == [
        "ImportFrom",
        "Assign",  # a literal constant stays
        "ClassDef",
        "FunctionDef",
        "If",
    ]


def _worker_counts(source: str) -> list[str]:
    return [
        ast.unparse(kw.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg == "num_workers"
    ]


def _examples() -> list[object]:
    return [
        pytest.param(rule, example, id=f"{rule.code}-{i}")
        for rule in ALL_RULES
        for i, example in enumerate(rule.invalid)
        if "num_workers" in example.code
    ]


@pytest.mark.parametrize(("rule", "example"), _examples())
def test_no_safe_fix_changes_a_worker_count(rule: type[Rule], example: Invalid) -> None:
    """A worker count is the program's speed, and a worker_init_fn runs only
    in workers: ``check --fix`` (safe fixes only) never changes one."""
    source = textwrap.dedent(example.code)
    config = from_table(dict(example.config))
    before = _worker_counts(source)
    for finding in lint(source, "example.py", config, rules=[rule]):
        for fix in finding.fixes:
            if fix.is_safe:
                fixed = apply_edits(source, fix.edits)
                assert _worker_counts(fixed) == before, (rule.code, fix.title)
    fixed, _ = fix_source(source, "example.py", config, rules=[rule])
    assert _worker_counts(fixed) == before
