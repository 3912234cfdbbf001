"""Entry point in the user's interpreter: `python -c BOOT hooks_parent
result_dir options_json (file|module) target [args...]`.

Installs the hooks the moment the script imports torch (so that what the
script does before that, e.g. setting environment variables, stays as it
was), then runs the script as `python script.py args` or `python -m module
args` would: same `sys.argv`, `sys.path[0]`, `__main__`, traceback and exit
status."""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.util
import json
import os
import runpy
import signal
import sys
import traceback
import types
from typing import Any, Dict

from . import events

TORCH_MISSING_EXIT = 97
_INSTALLED = [False]


def _install(options: dict[str, Any]) -> None:
    if _INSTALLED[0]:
        return
    _INSTALLED[0] = True
    torch = sys.modules["torch"]
    events.add_skip_dir(os.path.dirname(os.path.abspath(str(torch.__file__))))
    from . import loaders, losses, training

    for name, install in (
        ("loaders", lambda: loaders.install(torch)),
        ("training", lambda: training.install(torch, int(options.get("stop_after_steps") or 0))),
        ("losses", lambda: losses.install(torch)),
    ):
        try:
            install()
        except Exception as exc:  # an unusual torch: run without these checks
            events.emit({"kind": "hook_error", "hooks": name, "error": repr(exc)[:300]})
    events.emit({"kind": "hooks", "torch": getattr(torch, "__version__", "?")})


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Installs the hooks right after `import torch` finishes."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.busy = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "torch" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec("torch")
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        original_exec = loader.exec_module
        options = self.options
        watcher = self

        def exec_module(module: Any) -> None:
            original_exec(module)
            try:
                sys.meta_path.remove(watcher)
            except ValueError:
                pass
            _install(options)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _die_with_launcher(parent: Any) -> None:
    """Linux: SIGKILL when the launcher (`torchtrap run`) dies, so that the
    script never outlives it (its watchdog kills the workers and the rest of
    the group). The launcher may have died before the request: check."""
    if not sys.platform.startswith("linux") or not isinstance(parent, int):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except Exception:
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def _finish(status: dict[str, Any]) -> None:
    if os.getpid() != events.STATE.main_pid:
        return  # a forked child of the script: the parent reports
    losses = sys.modules.get(__package__ + ".losses")
    if losses is not None:
        try:
            losses.finish()
        except Exception:
            pass
    training = sys.modules.get(__package__ + ".training")
    if training is not None:
        try:
            training.finish()
            status["steps"] = training.STATE.steps
            status["stopped_after_steps"] = training.STATE.stopped
        except Exception:
            pass
    status["kind"] = "exit"
    events.emit(status)


def _innermost_user_frame(tb: Any) -> Dict[str, Any] | None:
    where = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if events._is_user_file(code.co_filename):
            where = {"file": code.co_filename, "line": tb.tb_lineno, "function": code.co_name}
        tb = tb.tb_next
    return where


def _trimmed(tb: Any) -> Any:
    """The traceback without this bootstrap's and runpy's frames."""
    skip = ("runpy", __name__)  # runpy's frames read "<frozen runpy>" on 3.11+
    while tb is not None and tb.tb_frame.f_globals.get("__name__") in skip:
        tb = tb.tb_next
    return tb


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    hooks_parent, result_dir, options_text, mode, target = args[:5]
    rest = args[5:]
    options = json.loads(options_text)
    _die_with_launcher(options.get("parent"))
    events.configure(result_dir)
    if importlib.util.find_spec("torch") is None:
        events.emit({"kind": "torch_missing", "python": sys.version.split()[0]})
        sys.exit(TORCH_MISSING_EXIT)
    # The hooks stay importable (a spawned DataLoader worker unpickles them)
    # but last on the path, so that they never shadow the script's modules.
    sys.path[:] = [p for p in sys.path if p != hooks_parent] + [hooks_parent]
    if "torch" in sys.modules:
        _install(options)
    else:
        sys.meta_path.insert(0, _TorchWatcher(options))
    if sys.path and sys.path[0] == "":
        del sys.path[0]  # `python -c` put the working folder first; a script run has its own
    status: Dict[str, Any] = {}
    code = 0
    try:
        if mode == "module":
            sys.argv[:] = [target, *rest]  # runpy puts the module's path in argv[0]
            sys.path[0:0] = [os.getcwd()]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv[:] = [target, *rest]
            sys.path[0:0] = [os.path.dirname(os.path.abspath(target))]
            _run_file(target)
    except SystemExit as exc:
        training = sys.modules.get(__package__ + ".training")
        if training is not None and isinstance(exc, training.StopRun):
            status["stopped"] = True
            code = 0
        else:
            status["code"] = _exit_code(exc.code)
            _finish(status)
            raise  # Python prints a message and exits with its status
    except KeyboardInterrupt as exc:
        status["interrupted"] = True
        where = _innermost_user_frame(exc.__traceback__)
        if where is not None:
            status["interrupted_at"] = where
        _finish(status)
        _print_exception(exc)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # exit as Python does: killed by SIGINT
        sys.exit(130)
    except BaseException as exc:  # the script crashed: its traceback, as Python prints it
        status["crashed"] = type(exc).__name__
        _finish(status)
        _print_exception(exc)
        sys.exit(1)
    status["code"] = code
    _finish(status)
    sys.exit(code)


def _run_file(target: str) -> None:
    """As `python target`: argv[0] as typed, `__file__` and tracebacks with the
    absolute path (Python 3.9+), a fresh `__main__` (runpy.run_path would
    rewrite argv[0])."""
    path = os.path.abspath(target)
    if os.path.isdir(path) or not path.endswith((".py", ".pyw")) and _is_zip(path):
        runpy.run_path(path, run_name="__main__")
        sys.argv[0] = target
        return
    with open(path, "rb") as fh:
        source = fh.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __builtins__=builtins, __cached__=None, __loader__=None)
    main.__spec__ = None
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _is_zip(path: str) -> bool:
    import zipfile

    return zipfile.is_zipfile(path)


def _print_exception(exc: BaseException) -> None:
    _flush()
    tb = _trimmed(exc.__traceback__)
    exc.__traceback__ = tb  # the hook prints the exception's own traceback
    try:
        sys.excepthook(type(exc), exc, tb)
    except Exception:
        traceback.print_exception(type(exc), exc, tb)
    _flush()


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1
