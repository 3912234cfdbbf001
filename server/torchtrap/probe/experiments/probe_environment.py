"""Probe experiment `environment`: what the other experiments ran on.

Runs in the user's interpreter (stdlib + torch), never imports torchtrap.
Prints one JSON object on its last stdout line. The verdict is `confirmed`
when it sees a known hazard for DataLoader workers (small /dev/shm, low
`ulimit -n`), else `not-reproduced`.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import platform
import sys
from typing import Any

import torch

GIB = 2**30
MIB = 2**20
SHM_WARN_BYTES = 1 * GIB  # Docker's default is 64 MB; one 256 MB batch needs more
NOFILE_WARN = 4096  # file_descriptor sharing keeps one fd per shared tensor


def _cuda_driver_api_version() -> int | None:
    """cuDriverGetVersion() from libcuda, e.g. 12040; None without a driver."""
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            return version.value
    return None


def _nvidia_kernel_driver() -> str | None:
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
    except OSError:
        return None
    # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..."
    words = first.split()
    for word in words:
        if word[:1].isdigit() and "." in word:
            return word
    return first.strip() or None


def _cuda() -> dict[str, Any]:
    info: dict[str, Any] = {
        "available": False,
        "runtime": torch.version.cuda,  # CUDA version torch was built with
        "hip": getattr(torch.version, "hip", None),
        "driver_api": None,
        "driver": _nvidia_kernel_driver(),
        "cudnn": None,
        "gpus": [],
    }
    api = _cuda_driver_api_version()
    if api:
        info["driver_api"] = f"{api // 1000}.{(api % 1000) // 10}"
    try:
        info["available"] = bool(torch.cuda.is_available())
    except Exception as exc:  # a broken driver raises here on some versions
        info["error"] = f"{type(exc).__name__}: {exc}"[:300]
    if not info["available"]:
        return info
    try:
        info["cudnn"] = torch.backends.cudnn.version()
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["gpus"].append(
                {
                    "index": i,
                    "name": p.name,
                    "capability": f"{p.major}.{p.minor}",
                    "memory_gib": round(p.total_memory / GIB, 1),
                    "multiprocessors": p.multi_processor_count,
                }
            )
    except Exception as exc:
        info["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return info


def _shm() -> dict[str, Any] | None:
    if not os.path.isdir("/dev/shm") or not hasattr(os, "statvfs"):
        return None
    st = os.statvfs("/dev/shm")
    return {
        "size_mib": round(st.f_blocks * st.f_frsize / MIB),
        "free_mib": round(st.f_bavail * st.f_frsize / MIB),
    }


def _nofile() -> dict[str, Any] | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"soft": soft, "hard": None if hard == resource.RLIM_INFINITY else hard}


def _cpus() -> dict[str, Any]:
    usable = None
    if hasattr(os, "sched_getaffinity"):
        usable = len(os.sched_getaffinity(0))
    return {"count": os.cpu_count(), "usable": usable}


def _numpy() -> str | None:
    try:
        import numpy
    except ImportError:
        return None
    return str(numpy.__version__)


def main() -> dict[str, Any]:
    import torch.multiprocessing as tmp

    start_method = multiprocessing.get_start_method()
    evidence: dict[str, Any] = {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "os": {
            "platform": platform.platform(),
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
        },
        "torch": {"version": torch.__version__, "debug": bool(torch.version.debug)},
        "numpy": _numpy(),
        "cuda": _cuda(),
        "multiprocessing": {
            "default_start_method": start_method,
            "start_methods": multiprocessing.get_all_start_methods(),
            "torch_sharing_strategy": tmp.get_sharing_strategy(),
            "torch_sharing_strategies": sorted(tmp.get_all_sharing_strategies()),
        },
        "shm": _shm(),
        "cpus": _cpus(),
        "ulimit_nofile": _nofile(),
    }

    hazards = []
    shm = evidence["shm"]
    if shm is not None and shm["size_mib"] * MIB < SHM_WARN_BYTES:
        hazards.append(
            f"/dev/shm is only {shm['size_mib']} MiB (Docker's default is 64 MB):"
            " workers die with a bus error on big batches; run with --shm-size or --ipc=host"
        )
    nofile = evidence["ulimit_nofile"]
    strategy = evidence["multiprocessing"]["torch_sharing_strategy"]
    if nofile is not None and nofile["soft"] < NOFILE_WARN and strategy == "file_descriptor":
        hazards.append(
            f"ulimit -n is {nofile['soft']} with the file_descriptor sharing strategy:"
            " many shared tensors raise 'Too many open files'"
        )
    evidence["hazards"] = hazards
    if start_method != "fork":
        # Not a hazard by itself, but it is the path TT103 and the torch.Generator crash take.
        evidence["note"] = (
            f"default start method is {start_method}: Dataset, collate_fn and worker_init_fn"
            " are pickled into every worker"
        )

    cuda = evidence["cuda"]
    if cuda["available"]:
        names = sorted({g["name"] for g in cuda["gpus"]})
        gpu = f"{len(cuda['gpus'])}x {', '.join(names)}, CUDA {cuda['runtime']}"
        if cuda["driver"]:
            gpu += f", driver {cuda['driver']}"
    else:
        gpu = "no CUDA"
    shm_text = f"/dev/shm {shm['free_mib'] / 1024:.1f} GiB free" if shm else "no /dev/shm"
    nofile_text = f"ulimit -n {nofile['soft']}" if nofile else "no ulimit"
    summary = (
        f"Python {evidence['python']['version']}, torch {torch.__version__}, {gpu},"
        f" start method {start_method}, {shm_text}, {nofile_text},"
        f" {evidence['cpus']['usable'] or evidence['cpus']['count']} CPUs"
    )
    if hazards:
        summary += f"; {len(hazards)} hazard(s): " + "; ".join(h.split(":")[0] for h in hazards)
    return {
        "verdict": "confirmed" if hazards else "not-reproduced",
        "summary": summary,
        "rules": {},
        "evidence": evidence,
    }


if __name__ == "__main__":
    print(json.dumps(main()), flush=True)
