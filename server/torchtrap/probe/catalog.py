"""The experiments the probe knows: id, title, the rules each confirms, and
the standalone script that runs it in the user's interpreter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from torchtrap.probe.errors import ProbeError

EXPERIMENTS_DIR = Path(__file__).parent / "experiments"
PREFLIGHT_SCRIPT = EXPERIMENTS_DIR / "probe_preflight.py"


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    script: Path
    rules: tuple[str, ...] = ()
    needs_cuda: bool = False
    timeout_s: float = 60.0


def _script(name: str) -> Path:
    return EXPERIMENTS_DIR / f"probe_{name}.py"


# CPU experiments first: they give answers even when the GPU ones hang.
EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment(
        "environment",
        "Python, OS, torch, CUDA, GPUs, start method, /dev/shm, ulimit",
        _script("environment"),
        timeout_s=30.0,
    ),
    Experiment(
        "worker-rng",
        "RNG streams in DataLoader workers (2 workers, default start method)",
        _script("worker_rng"),
        rules=("TT101", "TT102"),
    ),
    Experiment(
        "shm-capacity",
        "A worker hands a 256 MB batch back through shared memory",
        _script("shm_capacity"),
    ),
    Experiment(
        "iterable-duplicates",
        "An unsharded IterableDataset through 2 workers",
        _script("iterable_duplicates"),
        rules=("TT105",),
    ),
    Experiment(
        "main-guard",
        "A script without the __main__ guard under spawn and forkserver",
        _script("main_guard"),
        rules=("TT106",),
        timeout_s=120.0,  # two scripts whose workers each import torch
    ),
    Experiment(
        "worker-memory",
        "Workers' private memory: Python objects vs numpy arrays",
        _script("worker_memory"),
        rules=("TT107",),
        timeout_s=120.0,
    ),
    Experiment(
        "pickle-reach",
        "What a bound-method collate_fn pickles into spawn workers",
        _script("pickle_reach"),
        rules=("TT104",),
        timeout_s=120.0,  # spawn workers import torch
    ),
    Experiment(
        "sampler-order",
        "A DistributedSampler's order over epochs, with and without set_epoch",
        _script("sampler_order"),
        rules=("TT108",),
        timeout_s=30.0,
    ),
    Experiment(
        "scaled-clip",
        "Gradient clipping before and after GradScaler.unscale_ (CPU scaler)",
        _script("scaled_clip"),
        rules=("TT217",),
        timeout_s=30.0,
    ),
    Experiment(
        "cuda-ipc-share",
        "CUDA tensors after _share_cuda_() and spawn workers (pytorch #128497)",
        _script("cuda_ipc_share"),
        rules=("TT103",),
        needs_cuda=True,
        timeout_s=150.0,  # three spawn workers that each import torch and init CUDA
    ),
    Experiment(
        "fork-cuda",
        "A fork worker touching a CUDA tensor",
        _script("fork_cuda"),
        rules=("TT103",),
        needs_cuda=True,
    ),
    Experiment(
        "pin-memory",
        "Pinned host-to-device copies and their bandwidth",
        _script("pin_memory"),
        needs_cuda=True,
    ),
)

EXPERIMENT_IDS: tuple[str, ...] = tuple(e.id for e in EXPERIMENTS)


def select(only: Sequence[str] | None) -> list[Experiment]:
    """The experiments named in `only` (ids, or comma-separated ids), in
    catalog order; all of them when `only` is None or empty."""
    if not only:
        return list(EXPERIMENTS)
    wanted = {name.strip() for item in only for name in item.split(",") if name.strip()}
    if not wanted:
        raise ProbeError(f"no experiment named; known: {', '.join(EXPERIMENT_IDS)}")
    unknown = sorted(wanted - set(EXPERIMENT_IDS))
    if unknown:
        raise ProbeError(
            f"unknown experiment {', '.join(repr(u) for u in unknown)};"
            f" known: {', '.join(EXPERIMENT_IDS)}"
        )
    return [e for e in EXPERIMENTS if e.id in wanted]
