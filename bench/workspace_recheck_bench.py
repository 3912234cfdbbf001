"""What picking the closed files to re-check costs, per change, in
``diagnosticMode: "workspace"`` (project_index.py ``_recheck_closed``).

    python bench/workspace_recheck_bench.py FOLDER [--files 2000]

Summarises the first ``--files`` modules of FOLDER (as the index does),
builds the import graph, gives each module a synthetic ``Reads`` (5 files
read, 20 references, as a lint records them), then for 20 changed modules
spread over the folder times, in this process:

- per-file: ``ImportGraph.concerns`` and ``Reads.touched`` for each module
  (how open documents are picked: fine for a few, not for 2,000);
- indexed: ``ImportGraph.concerned_paths`` and ``ReadsIndex.readers``,
  found from the changed side (what the server runs on the event loop);

and checks that both pick the same files.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from torchtrap.lsp import index_worker  # noqa: E402
from torchtrap.lsp.workspace_diagnostics import ReadsIndex  # noqa: E402
from torchtrap.project.graph import ImportGraph  # noqa: E402
from torchtrap.project.index import Change, Project, Reads  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    layouts, _ = index_worker.discover([str(Path(args.folder).resolve())])
    paths = sorted(layouts)[: args.files]
    started = time.perf_counter()
    results = index_worker.summarize_files([(p, layouts[p]) for p in paths], None)
    summaries = {p: s for p, s in results if s is not None}
    print(f"{len(summaries)} modules summarised in {time.perf_counter() - started:.1f} s")
    project = Project(summaries.values())
    graph = ImportGraph.of(project)
    rng = random.Random(0)
    names = list(summaries)
    refs = [f"m{i}.f" for i in range(100_000)]
    reads = {
        p: Reads(paths=set(rng.sample(names, 5)), refs=set(rng.sample(refs, 20))) for p in names
    }
    table = ReadsIndex()
    for path, read in reads.items():
        table.record(path, read)
    per_file: list[float] = []
    indexed: list[float] = []
    picked: list[int] = []
    for path in names[:: max(1, len(names) // 20)]:
        changed = [summaries[path]]
        t0 = time.perf_counter()
        changes = [Change(project, s) for s in changed]
        slow = {
            p
            for p, s in summaries.items()
            if graph.concerns(project, s, changed) or any(reads[p].touched(c) for c in changes)
        }
        t1 = time.perf_counter()
        fast = graph.concerned_paths(project, changed)
        fast |= table.readers(Change(project, s) for s in changed)
        t2 = time.perf_counter()
        slow.discard(path)
        fast.discard(path)
        assert fast == slow, (path, sorted(fast ^ slow)[:5])
        per_file.append(t1 - t0)
        indexed.append(t2 - t1)
        picked.append(len(fast))
    for label, times in (("per-file", per_file), ("indexed", indexed)):
        times.sort()
        print(
            f"{label:9s} median {times[len(times) // 2] * 1000:.2f} ms, "
            f"max {times[-1] * 1000:.2f} ms per change"
        )
    picked.sort()
    print(f"files picked: median {picked[len(picked) // 2]}, max {picked[-1]}; same picks: yes")


if __name__ == "__main__":
    main()
