"""The transport matrix (issue 32): producers crossed with transports.

For every case the first ``reveal`` must hold the producer and the second,
its near-miss twin, must not. ``test_case_is_what_it_claims`` runs each
generated project for real, so the expectations are facts, not guesses.
Recall per transport: ``PYTHONPATH=server:. python bench/transport_matrix.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.interproc.helpers import describe
from tests.interproc.matrix import TRANSPORTS, Case, Outcome, cases, execute, run_case

# What the core misses today, by transport (a transport that fails for one
# producer fails for all). The lead removes an entry when the core learns it.
MISSES: dict[str, str] = {}
FALSE_POSITIVES: dict[str, str] = {}
REQUIRED_GROUPS = {
    "local",
    "helper return",
    "method return",
    "attribute",
    "parameter",
    "import",
    "factory",
    "owned object",
    "base class",
    "partial",
    "lambda",
    "container",
    "forward",
    "argparse default",
    "context",
}

CASES = cases()


def _params(known: dict[str, str]) -> list[object]:
    return [
        pytest.param(
            case,
            id=case.id,
            marks=(
                [pytest.mark.xfail(strict=True, reason=known[case.transport.name])]
                if case.transport.name in known
                else []
            ),
        )
        for case in CASES
    ]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Case], Outcome]:
    memo: dict[str, Outcome] = {}

    def get(case: Case) -> Outcome:
        if case.id not in memo:
            memo[case.id] = run_case(case, tmp_path_factory.mktemp("matrix"))
        return memo[case.id]

    return get


def _show(objs: object) -> object:
    return None if objs is None else sorted(describe(o) for o in objs)  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", _params(MISSES))
def test_recall(case: Case, outcome: Callable[[Case], Outcome]) -> None:
    got = outcome(case)
    assert got.found, f"{case.id}: the core says {_show(got.positive)}"


@pytest.mark.parametrize("case", _params(FALSE_POSITIVES))
def test_near_miss(case: Case, outcome: Callable[[Case], Outcome]) -> None:
    got = outcome(case)
    assert not got.false_positive, f"{case.id}: the twin holds {_show(got.negative)}"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_case_is_what_it_claims(case: Case, tmp_path: Path) -> None:
    """Run for real: the first reveal sees the producer, the twin runs and never does."""
    seen = execute(case, tmp_path)
    assert len(seen) == 2
    assert any(case.producer.is_value(v) for v in seen[0]), seen[0]
    assert seen[1], "the near-miss reveal never ran"
    assert not any(case.producer.is_value(v) for v in seen[1]), seen[1]


def test_the_matrix_covers_every_transport_of_the_issue() -> None:
    assert {t.group for t in TRANSPORTS} >= REQUIRED_GROUPS
    names = [t.name for t in TRANSPORTS]
    assert len(names) == len(set(names))
    assert set(MISSES) | set(FALSE_POSITIVES) <= set(names)
