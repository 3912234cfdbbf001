"""Probe preflight: which Python and torch is this, and is CUDA usable?

Runs before the experiments, in the user's interpreter; stdlib only until it
tries `import torch`. Never imports torchtrap. Prints one JSON object on its
last stdout line.
"""

import json
import platform
import sys


def main() -> dict:
    info: dict = {
        "python_version": platform.python_version(),
        "executable": sys.executable,
    }
    try:
        import torch
    except ImportError as exc:
        # Missing torch, or a torch whose native libraries fail to load.
        missing = getattr(exc, "name", None) == "torch"
        info["torch_error"] = "missing" if missing else "broken"
        info["detail"] = f"{type(exc).__name__}: {exc}"
        return info
    except Exception as exc:
        info["torch_error"] = "broken"
        info["detail"] = f"{type(exc).__name__}: {exc}"
        return info
    info["torch_version"] = str(torch.__version__)
    info["cuda_build"] = torch.version.cuda
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
        info["cuda_devices"] = torch.cuda.device_count() if info["cuda_available"] else 0
    except Exception as exc:
        info["cuda_available"] = False
        info["cuda_error"] = f"{type(exc).__name__}: {exc}"
    return info


if __name__ == "__main__":
    print(json.dumps(main()))
    sys.stdout.flush()
