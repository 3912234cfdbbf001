"""What a DataLoader's worker_init_fn re-creates in each worker
(``ctx.values.worker_init_resets``), in this file and across files."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.values.helpers import probe_calls
from torchtrap.project import Project, summarize_source
from torchtrap.values.remote import remote_uses

DATASET = """
import functools
import numpy as np
from torch.utils.data import DataLoader, Dataset, get_worker_info

class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)
    def reset(self, seed):
        self.rng = np.random.default_rng(seed)
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return self.rng.random()
"""


def _resets(code: str, path: str = "example.py", project: Project | None = None) -> list:
    ctx, _ = probe_calls(code, path, project)
    view = next(v for v in ctx.values.datasets.views() if v.name == "Noisy")
    loaders = sorted(ctx.facts.dataloaders, key=lambda d: d.node.lineno)
    return [ctx.values.worker_init_resets(d, "rng", view) for d in loaders]


def test_a_worker_init_fn_in_this_file_is_read_through_its_calls() -> None:
    code = DATASET + textwrap.dedent(
        """
        def via_method(worker_id):
            get_worker_info().dataset.reset(worker_id)

        def reseed(ds, seed):
            ds.rng.seed(seed)

        def one_deep(worker_id):
            reseed(get_worker_info().dataset, worker_id)

        def global_only(worker_id):
            np.random.seed(worker_id)

        ds = Noisy()
        DataLoader(ds, num_workers=2, worker_init_fn=via_method)
        DataLoader(ds, num_workers=2, worker_init_fn=functools.partial(one_deep))
        fresh = lambda i: setattr(ds, "rng", np.random.default_rng(i))
        DataLoader(ds, num_workers=2, worker_init_fn=fresh)
        DataLoader(ds, num_workers=2, worker_init_fn=global_only)
        DataLoader(ds, num_workers=2)
        """
    )
    # The near misses: seeding the global generator re-creates nothing;
    # without a worker_init_fn nothing is re-created.
    assert _resets(code) == [True, True, True, False, False]


def test_past_the_cut_off_or_unreadable_is_unknown_not_a_guess() -> None:
    # deep -> one -> two -> three -> four: four calls deep, one past the cut-off.
    code = DATASET + textwrap.dedent(
        """
        from helpers import seed_everything

        def four(ds, seed):
            ds.rng.seed(seed)
        def three(ds, seed):
            four(ds, seed)
        def two(ds, seed):
            three(ds, seed)
        def one(ds, seed):
            two(ds, seed)
        def deep(worker_id):
            one(get_worker_info().dataset, worker_id)

        ds = Noisy()
        DataLoader(ds, num_workers=2, worker_init_fn=deep)
        DataLoader(ds, num_workers=2, worker_init_fn=seed_everything)
        """
    )
    assert _resets(code) == [None, None]


def test_another_files_loader_is_read_from_its_summary(tmp_path: Path) -> None:
    data = DATASET
    train = textwrap.dedent(
        """
        import numpy as np
        from torch.utils.data import DataLoader, get_worker_info
        from data import Noisy

        def init_rng(worker_id):
            info = get_worker_info()
            info.dataset.rng = np.random.default_rng(worker_id)

        def init_method(worker_id):
            info = get_worker_info()
            info.dataset.reset(worker_id)

        def init_global(worker_id):
            info = get_worker_info()
            np.random.seed(info.seed % 2**32)

        DataLoader(Noisy(), num_workers=2, worker_init_fn=init_rng)
        DataLoader(Noisy(), num_workers=2, worker_init_fn=init_method)
        DataLoader(Noisy(), num_workers=2, worker_init_fn=init_global)
        """
    )
    summaries = []
    for name, code in (("data.py", data), ("train.py", train)):
        path = tmp_path / name
        path.write_text(code, encoding="utf-8")
        summary = summarize_source(code, str(path), (name.removesuffix(".py"), False))
        assert summary is not None
        summaries.append(summary)
    project = Project(summaries)
    ctx, _ = probe_calls(data, str(tmp_path / "data.py"), project)
    view = next(v for v in ctx.values.datasets.views() if v.name == "Noisy")
    remote = [u.loader for u in remote_uses(ctx, "Noisy")()]
    found = sorted(
        ((d.node.lineno, ctx.values.worker_init_resets(d, "rng", view)) for d in remote),
        key=lambda t: t[0],
    )
    assert [r for _, r in found] == [True, True, False]
