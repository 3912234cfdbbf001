"""``workspace/executeCommand`` handlers (IDs are a contract with the VS
Code client; see docs/editors.md for the arguments)."""

from __future__ import annotations

import asyncio
import functools
import platform
import sys
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

import torchtrap
from torchtrap.lsp import actions

# At run time, not only for type checkers: pygls reads the handlers' type
# hints when it prepares command arguments.
from torchtrap.lsp.server import WORK_DONE_TOKEN, TorchTrapServer

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed

RUN_PROBE = "torchtrap.runProbe"
FIX_ALL = "torchtrap.fixAll"
APPLY_FIX = "torchtrap.applyFix"
EXPLAIN_RULE = "torchtrap.explainRule"
DEBUG_INFO = "torchtrap.debugInfo"
RUN_FILE = "torchtrap.runFile"
SHOW_RUN_REPORT = "torchtrap.showRunReport"
RUN_OUTPUT = "torchtrap/runOutput"  # notification: {id, stream, text}
CHECK_WORKSPACE = "torchtrap.checkWorkspace"
UNSAFE_FIXES = "torchtrap.unsafeFixes"


def failed(message: str) -> JsonRpcException:
    return JsonRpcException(message=message, code=REQUEST_FAILED)


def register_commands(server: TorchTrapServer) -> None:
    # Handlers take *args: the arguments arrive as plain JSON values.
    server.command(RUN_PROBE)(run_probe)
    server.command(FIX_ALL)(fix_all)
    server.command(APPLY_FIX)(apply_fix)
    server.command(EXPLAIN_RULE)(explain_rule)
    server.command(DEBUG_INFO)(debug_info)
    server.command(RUN_FILE)(run_file)
    server.command(SHOW_RUN_REPORT)(show_run_report)
    server.command(CHECK_WORKSPACE)(check_workspace)
    server.command(UNSAFE_FIXES)(unsafe_fixes)


# -- the probe ----------------------------------------------------------------
class _Progress:
    """Work-done progress for a command: the request's token if it sent one,
    else a server-created one if the client supports that, else nothing."""

    def __init__(self, ls: TorchTrapServer, token: types.ProgressToken | None) -> None:
        self.ls = ls
        self.token = token
        self.loop = asyncio.get_running_loop()

    async def begin(self, title: str, cancel: threading.Event) -> None:
        if self.token is None and self.ls.supports("window.work_done_progress"):
            token = f"torchtrap-{uuid.uuid4()}"
            try:
                await self.ls.work_done_progress.create_async(token)
                self.token = token
            except Exception:  # the client refused: run without progress
                self.token = None
        if self.token is None:
            return
        self.ls.work_done_progress.begin(
            self.token, types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0)
        )
        # window/workDoneProgress/cancel cancels this future (pygls).
        future = self.ls.work_done_progress.tokens.get(self.token)
        if future is not None:
            future.add_done_callback(lambda _: cancel.set())

    def report(self, message: str, done: int, total: int) -> None:
        """Called from the probe's thread."""
        if self.token is None or self.ls.closing:
            return
        percentage = int(100 * done / total) if total else None
        value = types.WorkDoneProgressReport(message=message, percentage=percentage)
        self.loop.call_soon_threadsafe(self.ls.work_done_progress.report, self.token, value)

    def end(self, message: str) -> None:
        if self.token is None or self.ls.closing:
            return
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)


async def run_probe(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """``[{timeout?, python?, only?, rest?}]`` -> ``{json, markdown, unfinished}``.
    Progress names each experiment as it starts and says each one's verdict
    as it ends. ``unfinished``: the experiments the time limit left no time
    for (or cut short); ``rest: true`` runs those of this interpreter's last
    probe and merges them into its report."""
    options = args[0] if args and isinstance(args[0], Mapping) else {}
    timeout = options.get("timeout")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        timeout = ls.settings.probe_timeout
    python = options.get("python") or ls.settings.interpreter
    only = options.get("only") if isinstance(options.get("only"), list) else None
    earlier = ls.probe_reports.get(python) if options.get("rest") is True else None
    if options.get("rest") is True:
        if earlier is None or not earlier.unfinished():
            raise failed("nothing left to run: the last probe of this interpreter finished")
        only = earlier.unfinished()
    try:
        from torchtrap.probe import ProbeError, render_markdown
        from torchtrap.probe import run_probe as probe
    except ImportError as err:
        raise failed(f"the GPU probe is not available: {err}") from err

    cancel = threading.Event()
    msg_id = ls.protocol.msg_id
    ls.probe_cancels[msg_id] = cancel
    progress = _Progress(ls, WORK_DONE_TOKEN.get())
    await progress.begin("TorchTrap: GPU probe", cancel)

    def work() -> Any:
        last = ""

        def on_progress(name: str, done: int, total: int) -> None:
            if name != "done":
                running = f"{done + 1}/{total}: {name}"
                progress.report(f"{last}{running}" if last else running, done, total)

        def on_finished(result: Any, done: int, total: int) -> None:
            nonlocal last
            last = f"{result.id} {result.verdict} ({result.duration_s:.0f} s) · "
            progress.report(f"{done}/{total} done: {last.rstrip(' ·')}", done, total)

        return probe(
            python=python,
            timeout=float(timeout),
            only=only,
            progress=on_progress,
            cancel=cancel,
            finished=on_finished,
        )

    loop = asyncio.get_running_loop()
    try:
        # Not the lint pool: a probe runs for minutes and must not block linting.
        report = await loop.run_in_executor(None, work)
    except ProbeError as err:  # a message meant for the user (e.g. no torch)
        progress.end(f"failed: {err}")
        raise failed(str(err)) from err
    except (ValueError, OSError) as err:  # bad arguments, interpreter not found
        progress.end(f"failed: {err}")
        raise failed(f"the GPU probe could not run: {err}") from err
    except asyncio.CancelledError:
        cancel.set()  # kills the probe's subprocess
        progress.end("cancelled")
        raise
    finally:
        ls.probe_cancels.pop(msg_id, None)
    if earlier is not None:
        report = report.merged_into(earlier)
    data = report.to_json()
    cancelled = bool(data.get("cancelled")) or cancel.is_set()
    unfinished = [] if cancelled else report.unfinished()
    progress.end(
        "cancelled"
        if cancelled
        else f"{len(unfinished)} left: the time limit ran out"
        if unfinished
        else "done"
    )
    if not cancelled:
        ls.probe_results[python] = data
        ls.probe_reports[python] = report
        ls.relint_all()  # confirmed findings get the probe's evidence
    return {"json": data, "markdown": render_markdown(data), "unfinished": unfinished}


# -- torchtrap run ---------------------------------------------------------------
def _run_result(report: Any) -> dict[str, Any]:
    return {
        "json": report.to_json(),
        "summary": report.summary(),
        "findings": len(report.findings),
    }


def _folder_of(ls: TorchTrapServer, path: str) -> str:
    """The innermost workspace folder holding `path`, else its own folder."""
    import os

    holding = [f for f in ls.workspace_folders if path.startswith(f.rstrip(os.sep) + os.sep)]
    return max(holding, key=len) if holding else os.path.dirname(path)


async def run_file(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """``[{uri, args?, stopAfterSteps?, python?, id?}]``: run the file with
    `torchtrap run`'s checks in the user's interpreter (from the file's
    workspace folder); its output streams as ``torchtrap/runOutput``
    notifications ``{id, stream, text}``; what it found is published as
    diagnostics (source ``torchtrap-run``) -> ``{json, summary, findings}``.
    The client offers this only in a trusted workspace."""
    from pygls.uris import to_fs_path

    from torchtrap.probe.errors import ProbeError
    from torchtrap.run import Target, run_checked

    options = args[0] if args and isinstance(args[0], Mapping) else {}
    uri = options.get("uri")
    path = to_fs_path(uri) if isinstance(uri, str) else None
    if not path:
        raise failed("torchtrap.runFile expects [{uri}] of a file on disk")
    script_args = [str(a) for a in options.get("args") or () if isinstance(a, (str, int, float))]
    steps = options.get("stopAfterSteps")
    steps = steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else 0
    python = options.get("python") or ls.settings.interpreter
    run_id = options.get("id") or str(uuid.uuid4())
    loop = asyncio.get_running_loop()

    def sink(stream: str, text: str) -> None:
        if not ls.closing:
            loop.call_soon_threadsafe(
                ls.protocol.notify, RUN_OUTPUT, {"id": run_id, "stream": stream, "text": text}
            )

    cancel = threading.Event()
    msg_id = ls.protocol.msg_id
    ls.probe_cancels[msg_id] = cancel
    progress = _Progress(ls, WORK_DONE_TOKEN.get())
    await progress.begin("TorchTrap: run with checks", cancel)

    def work() -> Any:
        return run_checked(
            Target(path),
            script_args,
            python=python,
            cwd=_folder_of(ls, path),
            stop_after_steps=steps,
            sink=sink,
            cancel=cancel,
        )

    try:
        report = await loop.run_in_executor(None, work)
    except ProbeError as err:  # no torch, no such interpreter or file
        progress.end(f"failed: {err}")
        raise failed(str(err)) from err
    except OSError as err:
        progress.end(f"failed: {err}")
        raise failed(f"the run could not start: {err}") from err
    except asyncio.CancelledError:
        cancel.set()
        progress.end("cancelled")
        raise
    finally:
        ls.probe_cancels.pop(msg_id, None)
    progress.end(report.summary())
    ls.publish_run(ls.runs.replace(report))
    return _run_result(report)


def show_run_report(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """``[path]`` of a JSON report written by ``torchtrap run --output``:
    publish its findings as the run's diagnostics -> ``{json, summary, findings}``."""
    from torchtrap.run import load_report

    path = args[0] if args else None
    if isinstance(path, Mapping):
        path = path.get("path")
    if not isinstance(path, str) or not path:
        raise failed("torchtrap.showRunReport expects [path]")
    try:
        report = load_report(path)
    except ValueError as err:
        raise failed(str(err)) from err
    ls.publish_run(ls.runs.replace(report))
    return _run_result(report)


# -- fixes ----------------------------------------------------------------------
async def _apply(ls: TorchTrapServer, edit: types.WorkspaceEdit, label: str) -> bool:
    response = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=label)
    )
    return bool(getattr(response, "applied", False))


async def fix_all(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """``[uri]`` or ``[{uri, unsafe?, code?}]``: apply every safe fix of the
    document (or notebook), and the unsafe ones too with ``unsafe-fixes`` or
    ``unsafe: true``; only rule ``code``'s fixes when given -> ``{applied,
    fixes, skipped, message}``: ``fixes`` applied, ``skipped`` findings left
    with only unsafe fixes, and ``message`` for the user ("Fixed 2 findings
    (1 unsafe fix skipped)", "Nothing to fix")."""
    uri = args[0] if args else None
    unsafe: bool | None = None
    code: str | None = None
    if isinstance(uri, Mapping):
        unsafe = uri.get("unsafe") if isinstance(uri.get("unsafe"), bool) else None
        given = uri.get("code")
        code = given.upper() if isinstance(given, str) and given else None
        uri = uri.get("uri")
    if not isinstance(uri, str):
        raise failed("torchtrap.fixAll expects [uri] or [{uri, unsafe?, code?}]")
    key = ls.unit_key(uri)
    result = await ls.current_result(key) if key else None
    if result is None:
        raise failed(f"{uri} is not open in the TorchTrap server")
    loop = asyncio.get_running_loop()
    outcome = await loop.run_in_executor(
        ls.lint_pool,
        functools.partial(
            actions.fix_all_edit,
            result,
            ls.encoding,
            ls.document_changes,
            unsafe=unsafe,
            code=code,
        ),
    )
    applied = outcome.edit is not None and await _apply(ls, outcome.edit, "TorchTrap: fix all")
    if outcome.edit is not None and not applied:
        message = "The editor did not apply the fixes"
        return {"applied": False, "fixes": 0, "skipped": outcome.skipped, "message": message}
    fixes = outcome.fixed if applied else 0
    return {
        "applied": applied,
        "fixes": fixes,
        "skipped": outcome.skipped,
        "message": outcome._replace(fixed=fixes).message(),
    }


async def unsafe_fixes(ls: TorchTrapServer, *args: Any) -> list[dict[str, Any]]:
    """``[uri]`` -> the findings Fix All leaves because their only fixes are
    unsafe: ``[{uri, version, code, line, fix, title, message}]`` (``line``
    0-based; ``[uri, version, code, line, fix]`` are ``torchtrap.applyFix``'s
    arguments)."""
    uri = args[0] if args else None
    if isinstance(uri, Mapping):
        uri = uri.get("uri")
    if not isinstance(uri, str):
        raise failed("torchtrap.unsafeFixes expects [uri]")
    key = ls.unit_key(uri)
    result = await ls.current_result(key) if key else None
    if result is None:
        raise failed(f"{uri} is not open in the TorchTrap server")
    return [item._asdict() for item in actions.unsafe_fixes(result)]


def _fix_arguments(args: tuple[Any, ...]) -> tuple[str, int | None, str, int, int]:
    if len(args) == 1 and isinstance(args[0], Mapping):
        d = args[0]
        values = [d.get("uri"), d.get("version"), d.get("code"), d.get("line"), d.get("fix", 0)]
    else:
        values = list(args) + [None] * (5 - len(args))
    uri, version, code, line, fix = values[:5]
    fix = 0 if fix is None else fix
    if not (isinstance(uri, str) and isinstance(code, str) and isinstance(line, int)):
        raise failed("torchtrap.applyFix expects [uri, version, code, line, fixIndex]")
    if not isinstance(fix, int) or (version is not None and not isinstance(version, int)):
        raise failed("torchtrap.applyFix: version and fixIndex must be integers")
    return uri, version, code, line, fix


async def apply_fix(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """``[uri, version, code, line, fixIndex]`` (line 0-based, as in LSP;
    version may be null) or one object with those keys (``fix`` for the index)
    and ``preview: true`` -> ``{applied: false, edit, title}``: the edit, not
    applied, for the client to show as a diff first ("Review Unsafe Fixes");
    or ``review: true``: the edit is applied marked as needing confirmation
    (an editor with change annotations asks before applying it)."""
    options = args[0] if len(args) == 1 and isinstance(args[0], Mapping) else {}
    review = options.get("review") is True
    preview = options.get("preview") is True
    uri, version, code, line, fix_index = _fix_arguments(args)
    key = ls.unit_key(uri)
    result = await ls.current_result(key) if key else None
    if result is None:
        raise failed(f"{uri} is not open in the TorchTrap server")
    if version is not None and result.doc_version(uri) != version:
        raise failed(f"{uri} changed since version {version}; ask for the fixes again")
    index = actions.find_by_line(result, uri, code, line, ls.encoding)
    if index is None:
        raise failed(f"no {code} finding on line {line + 1} of {uri}")
    finding = result.findings[index]
    if not 0 <= fix_index < len(finding.fixes):
        raise failed(f"{code} on line {line + 1} has no fix number {fix_index}")
    loop = asyncio.get_running_loop()
    edit = await loop.run_in_executor(
        ls.lint_pool,
        actions.fix_workspace_edit,
        result,
        finding.fixes[fix_index],
        ls.encoding,
        ls.document_changes,
    )
    if edit is None:
        raise failed("this fix spans notebook cells and cannot be applied")
    title = actions.fix_title(finding, finding.fixes[fix_index])
    if preview:
        return {"applied": False, "edit": edit, "title": title}
    if review and ls.change_annotations:
        edit = actions.for_review(edit, title, finding.message)
    applied = await _apply(ls, edit, title)
    return {"applied": applied}


async def check_workspace(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """``[]``: lint every indexed file of the workspace and publish the
    findings (in either ``diagnosticMode``; they are then kept current until
    the mode is switched to ``openFilesOnly``) -> ``{files,
    filesWithFindings, findings, truncated}``."""
    try:
        return await ls.workspace_diags.check()
    except (TimeoutError, ValueError) as err:
        raise failed(f"Check Workspace: {err}") from err


# -- information ------------------------------------------------------------------
def explain_rule(ls: TorchTrapServer, *args: Any) -> Any:
    """``[]`` -> ``[{code, name, summary}]``; ``[code]`` -> ``{code, name, markdown}``."""
    from torchtrap.rules import ALL_RULES, get_rule

    if not args or args[0] in (None, ""):
        return [{"code": r.code, "name": r.name, "summary": r.summary} for r in ALL_RULES]
    if not isinstance(args[0], str):
        raise failed("torchtrap.explainRule expects [] or [code]")
    rule = get_rule(args[0])
    if rule is None:
        raise failed(f"unknown rule {args[0]!r}")
    return {"code": rule.code, "name": rule.name, "markdown": rule.markdown()}


def _version(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def debug_info(ls: TorchTrapServer, *args: Any) -> dict[str, Any]:
    """Versions, interpreter, settings and the config in force per open unit."""
    from torchtrap.lsp.project_index import describe
    from torchtrap.rules import ALL_RULES

    configs = {}
    for key, state in ls.units.items():
        result = state.result
        if result is None:
            continue
        config = result.config
        configs[key] = {
            "pyproject": str(config.source) if config.source else None,
            "select": list(config.select) if config.select is not None else None,
            "ignore": list(config.ignore),
            "severity": {k: v.value for k, v in config.severity},
            "torchVersion": config.torch_version,
            "excluded": result.excluded,
            "version": result.version,
        }
    info: dict[str, Any] = {
        "torchtrap": torchtrap.__version__,
        "python": sys.version.split()[0],
        "interpreter": sys.executable,
        "platform": platform.platform(),
        "pygls": _version("pygls"),
        "lsprotocol": _version("lsprotocol"),
        "torch": _version("torch"),
        "positionEncoding": ls.encoding,
        "settings": ls.settings.to_json(),
        "rules": [r.code for r in ALL_RULES],
        "openDocuments": len(ls.docs),
        "openNotebooks": len(ls.notebooks),
        "lints": ls.lint_count,
        # What the server holds: all of it is freed when documents close.
        "state": {
            "units": len(ls.units),
            "cachedResults": len(ls.hot),
            "carried": len(ls.carry),
            "cellTexts": len(ls.good_cell_texts),
            "probesRunning": len(ls.probe_cancels),
        },
        "probeResults": sorted(ls.probe_results),
        "projectIndex": describe(ls.index),
        "configs": configs,
    }
    lines = ["# TorchTrap debug info", ""]
    for key in ("torchtrap", "python", "interpreter", "platform", "pygls", "lsprotocol", "torch"):
        lines.append(f"- **{key}**: `{info[key]}`")
    lines.append(f"- **position encoding**: `{ls.encoding}`")
    lines.append(f"- **rules**: {', '.join(info['rules']) or 'none'}")
    lines.append(
        f"- **open**: {info['openDocuments']} documents, {info['openNotebooks']} notebooks"
    )
    lines += ["", "## Settings", "", "```json", _json(info["settings"]), "```"]
    if configs:
        lines += ["", "## Config in force", "", "```json", _json(configs), "```"]
    info["markdown"] = "\n".join(lines) + "\n"
    return info


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2, sort_keys=True)
