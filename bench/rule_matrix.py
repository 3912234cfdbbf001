"""Recall of the rules on their transport matrix (issue 32): each producer
of a bad value crossed with each way it travels, each with a near-miss twin
(``tests/interproc/rule_cases.py``, the cases ``test_rule_matrix.py`` runs).

    PYTHONPATH=server:. .venv/bin/python bench/rule_matrix.py [--json FILE] [--only NAME]

Prints a table of transports by producers, then recall and false positives
per producer and overall.
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

from tests.interproc.rule_cases import PRODUCERS, TRANSPORTS, findings, write_case  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="write every case's outcome")
    parser.add_argument("--only", metavar="NAME", help="transports whose name contains NAME")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, tuple[bool, bool]]] = defaultdict(dict)
    records = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for p_index, producer in enumerate(PRODUCERS):
            for t_index, transport in enumerate(TRANSPORTS):
                if args.only and args.only not in transport.name:
                    continue
                bug = Path(scratch) / f"{p_index}-{t_index}-bug"
                twin = Path(scratch) / f"{p_index}-{t_index}-twin"
                write_case(bug, producer, transport, producer.make)
                write_case(twin, producer, transport, producer.decoy)
                found = bool(findings(bug, producer.code))
                false = bool(findings(twin, producer.code))
                rows[transport.name][producer.name] = (found, false)
                records.append(
                    {
                        "producer": producer.name,
                        "transport": transport.name,
                        "found": found,
                        "false_positive": false,
                    }
                )
    names = [p.name for p in PRODUCERS]
    print("| transport | " + " | ".join(names) + " |")
    print("| --- |" + " :---: |" * len(names))
    for transport_name, cells in rows.items():
        marks = []
        for name in names:
            found, false = cells.get(name, (False, False))
            marks.append(("found" if found else "**missed**") + (", **FP**" if false else ""))
        print(f"| {transport_name} | " + " | ".join(marks) + " |")
    total = len(records)
    hits = sum(r["found"] for r in records)
    fps = sum(r["false_positive"] for r in records)
    for name in names:
        mine = [r for r in records if r["producer"] == name]
        got = sum(r["found"] for r in mine)
        false = sum(r["false_positive"] for r in mine)
        print(f"{name}: recall {got}/{len(mine)}, false positives {false}")
    print(
        f"total: recall {hits}/{total} ({hits / max(total, 1):.2f}), false positives {fps}/{total}"
    )
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
