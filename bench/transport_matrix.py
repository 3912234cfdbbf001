"""Recall of the interprocedural core on the transport matrix (issue 32).

    PYTHONPATH=server:. .venv/bin/python bench/transport_matrix.py [--variants] [--json FILE]

Generates every producer x transport case of ``tests/interproc/matrix.py``
(the same generator the tests use), analyses each small project with the
core, and prints recall per transport (``--variants``: per variant too), per
producer, overall, and the false positives (a near-miss twin that holds the
producer). Each case is also checked by running it in
``tests/interproc/test_transport_matrix.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for entry in (str(ROOT), str(ROOT / "server")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from tests.interproc.helpers import describe  # noqa: E402
from tests.interproc.matrix import Outcome, cases, run_case  # noqa: E402


def _table(title: str, rows: dict[str, list[Outcome]]) -> list[str]:
    lines = [
        f"| {title} | cases | found | recall | false positives |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, outs in rows.items():
        found = sum(o.found for o in outs)
        fps = sum(o.false_positive for o in outs)
        lines.append(f"| {name} | {len(outs)} | {found} | {found / len(outs):.2f} | {fps} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", action="store_true", help="a row per transport variant")
    parser.add_argument("--json", metavar="FILE", help="write every case's outcome")
    args = parser.parse_args(argv)

    by_group: dict[str, list[Outcome]] = defaultdict(list)
    by_variant: dict[str, list[Outcome]] = defaultdict(list)
    by_producer: dict[str, list[Outcome]] = defaultdict(list)
    records = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for number, case in enumerate(cases()):
            outcome = run_case(case, Path(scratch) / str(number))
            by_group[case.transport.group].append(outcome)
            by_variant[case.transport.name].append(outcome)
            by_producer[case.producer.name].append(outcome)
            records.append(
                {
                    "case": case.id,
                    "transport": case.transport.name,
                    "producer": case.producer.name,
                    "found": outcome.found,
                    "false_positive": outcome.false_positive,
                    "positive": _names(outcome.positive),
                    "negative": _names(outcome.negative),
                }
            )
    elapsed = time.perf_counter() - started

    everything = [o for outs in by_group.values() for o in outs]
    found = sum(o.found for o in everything)
    fps = sum(o.false_positive for o in everything)
    print("\n".join(_table("transport", by_variant if args.variants else by_group)))
    print()
    print("\n".join(_table("producer", by_producer)))
    print()
    print(
        f"overall: recall {found / len(everything):.3f} ({found}/{len(everything)}), "
        f"false positives {fps} of {len(everything)} near-miss twins; "
        f"{len(by_variant)} transports in {len(by_group)} groups x {len(by_producer)} producers, "
        f"{elapsed:.1f} s"
    )
    for record in records:
        if not record["found"]:
            print(f"miss: {record['case']}: {record['positive']}")
    for record in records:
        if record["false_positive"]:
            print(f"false positive: {record['case']}: {record['negative']}")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1), encoding="utf-8")
    return 0


def _names(objs: frozenset[object] | None) -> list[str] | None:
    return None if objs is None else sorted(describe(o) for o in objs)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
