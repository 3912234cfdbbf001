// The palette commands. Their IDs differ from the server's executeCommand IDs
// (`torchtrap.runProbe`, ...), which vscode-languageclient registers by itself.

import * as vscode from 'vscode';
import { WorkDoneProgress, type WorkspaceEdit as LspWorkspaceEdit } from 'vscode-languageclient/node';
import { selectInterpreter } from './interpreterPicker';
import {
  applyFixArguments,
  applyTextEdits,
  unsafeFixConfirmation,
  unsafeFixItem,
  type UnsafeFix,
  checkWorkspaceMessage,
  fileFindingsSection,
  fixAllMessage,
  insertAfterTitle,
  parseUnsafeFixes,
  ruleVerdicts,
  skippedUnsafe,
  orderRules,
  parseProbeResult,
  restOffer,
  probeFailure,
  parseRuleDoc,
  parseRuleList,
  PercentTracker,
  probeArguments,
  ruleFileName,
} from './report';
import { showProbeReport } from './reportView';
import { runFileWithChecks, showRunReport } from './runFile';
import type { TorchTrapServer } from './server';

export const COMMANDS = {
  runProbe: 'torchtrap.vscode.runProbe',
  restart: 'torchtrap.vscode.restart',
  showLogs: 'torchtrap.vscode.showLogs',
  explainRule: 'torchtrap.vscode.explainRule',
  fixAll: 'torchtrap.vscode.fixAll',
  runFile: 'torchtrap.vscode.runFile',
  showRunReport: 'torchtrap.vscode.showRunReport',
  reviewUnsafeFixes: 'torchtrap.vscode.reviewUnsafeFixes',
  checkWorkspace: 'torchtrap.vscode.checkWorkspace',
  selectInterpreter: 'torchtrap.vscode.selectInterpreter',
} as const;

export const SERVER_COMMANDS = {
  runProbe: 'torchtrap.runProbe',
  fixAll: 'torchtrap.fixAll',
  applyFix: 'torchtrap.applyFix',
  unsafeFixes: 'torchtrap.unsafeFixes',
  explainRule: 'torchtrap.explainRule',
  checkWorkspace: 'torchtrap.checkWorkspace',
} as const;

export const PROBE_REPORT_NAME = 'torchtrap-probe-report';

async function writeReport(dir: vscode.Uri, name: string, text: string): Promise<vscode.Uri> {
  await vscode.workspace.fs.createDirectory(dir);
  const uri = vscode.Uri.joinPath(dir, name);
  await vscode.workspace.fs.writeFile(uri, Buffer.from(text, 'utf8'));
  return uri;
}

/** Rendered markdown beside the editor; the raw text if the markdown extension is missing. */
async function showMarkdownBeside(uri: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
  } catch {
    await vscode.window.showTextDocument(uri, { viewColumn: vscode.ViewColumn.Beside, preview: true });
  }
}

function isCancellation(err: unknown, token: vscode.CancellationToken): boolean {
  if (token.isCancellationRequested) {
    return true;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === -32800; // LSP RequestCancelled
}

function showError(server: TorchTrapServer, what: string, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  server.log.error(`${what}: ${message}`);
  void vscode.window.showErrorMessage(`TorchTrap: ${what}: ${message}`, 'Show Logs').then((c) => {
    if (c) {
      server.log.show();
    }
  });
}

/**
 * Select Interpreter (interpreterPicker.ts), wait for the server to run on it, and with
 * `probe` run the probe again there.
 */
async function selectInterpreterAndProbe(server: TorchTrapServer, storage: vscode.Uri, probe: boolean): Promise<void> {
  const exe = await selectInterpreter();
  if (!exe) {
    return;
  }
  server.log.info(`Interpreter selected: ${exe}`);
  await server.ensureLaunchCurrent('interpreter selected');
  if (probe) {
    await runProbe(server, storage);
  }
}

/** A probe without torch gets buttons to pick another interpreter, not CLI advice. */
function showProbeError(server: TorchTrapServer, storage: vscode.Uri, err: unknown): void {
  const failure = probeFailure(err instanceof Error ? err.message : String(err));
  if (!failure.needsTorch) {
    showError(server, 'the probe failed', err);
    return;
  }
  server.log.error(`the probe failed: ${failure.message}`);
  const message = `TorchTrap: the probe needs torch. ${failure.message} Or select the interpreter that has torch.`;
  void vscode.window.showErrorMessage(message, 'Select Interpreter', 'Open Settings', 'Show Logs').then((choice) => {
    if (choice === 'Select Interpreter') {
      void selectInterpreterAndProbe(server, storage, true);
    } else if (choice === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'torchtrap.interpreter');
    } else if (choice === 'Show Logs') {
      server.log.show();
    }
  });
}

/** The file the report speaks of: the active Python editor's (a notebook's cells together). */
function probedDocument(): vscode.Uri | undefined {
  const notebook = vscode.window.activeNotebookEditor?.notebook;
  if (notebook) {
    return notebook.uri;
  }
  const doc = vscode.window.activeTextEditor?.document;
  return doc && doc.languageId === 'python' ? doc.uri : undefined;
}

/** The open file's TorchTrap findings (a notebook: each cell's, on cell lines). */
function findingsOf(target: vscode.Uri): { code: string; line: number; message: string }[] {
  const notebook = vscode.workspace.notebookDocuments.find((n) => n.uri.toString() === target.toString());
  const uris = notebook ? notebook.getCells().map((c) => c.document.uri) : [target];
  return uris.flatMap((uri) =>
    vscode.languages
      .getDiagnostics(uri)
      .filter((d) => d.source === 'torchtrap')
      .map((d) => ({
        code: typeof d.code === 'object' ? String(d.code.value) : String(d.code ?? ''),
        line: d.range.start.line + 1,
        message: d.message,
      })),
  );
}

function baseName(uri: vscode.Uri): string {
  return uri.path.split('/').pop() || uri.path;
}

async function runProbe(server: TorchTrapServer, storage: vscode.Uri, rest?: { timeout: number }): Promise<void> {
  const timeout = rest?.timeout ?? server.serverSettings().probe.timeout;
  const target = probedDocument();
  let cancelled = false;
  let result: unknown;
  try {
    result = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: rest ? 'TorchTrap: probing this machine (the rest)' : 'TorchTrap: probing this machine',
        cancellable: true,
      },
      async (progress, token) => {
        const client = await server.runningClient();
        const workDoneToken = `torchtrap-probe-${Date.now()}`;
        const tracker = new PercentTracker();
        const sub = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
          if (value.kind === 'end') {
            return;
          }
          const increment = tracker.increment(value.percentage);
          // Only the step ("worker-rng (2/6)"): the server's begin title repeats ours.
          progress.report({
            message: value.message,
            ...(increment !== undefined ? { increment } : {}),
          });
        });
        try {
          return await server.executeCommand(SERVER_COMMANDS.runProbe, probeArguments(timeout, rest !== undefined), token, workDoneToken);
        } catch (err) {
          if (isCancellation(err, token)) {
            cancelled = true;
            return undefined;
          }
          throw err;
        } finally {
          sub.dispose();
        }
      },
    );
  } catch (err) {
    showProbeError(server, storage, err);
    return;
  }
  if (cancelled) {
    server.log.info('Probe cancelled.');
    void vscode.window.showInformationMessage('TorchTrap: probe cancelled.');
    return;
  }
  try {
    const report = parseProbeResult(result);
    // The open file's findings the probe answered, marked so (a section of ours).
    const section = target ? fileFindingsSection(baseName(target), findingsOf(target), ruleVerdicts(report.json)) : '';
    const markdown = insertAfterTitle(report.markdown, section);
    const dir = vscode.Uri.joinPath(storage, 'probe');
    await writeReport(dir, `${PROBE_REPORT_NAME}.json`, JSON.stringify(report.json, null, 2));
    const uri = await writeReport(dir, `${PROBE_REPORT_NAME}.md`, markdown);
    server.log.info(`Probe report: ${uri.fsPath}`);
    await showProbeReport(markdown);
    const offer = restOffer(report.unfinished ?? [], timeout);
    if (offer) {
      const again = 'Run the Rest';
      void vscode.window.showWarningMessage(offer.message, again).then((choice) => {
        if (choice === again) {
          void runProbe(server, storage, { timeout: offer.timeout });
        }
      });
    }
  } catch (err) {
    showError(server, 'the probe report', err);
  }
}

function codesAtCursor(): string[] {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return [];
  }
  const pos = editor.selection.active;
  return vscode.languages
    .getDiagnostics(editor.document.uri)
    .filter((d) => d.source === 'torchtrap' && d.range.start.line <= pos.line && pos.line <= d.range.end.line)
    .map((d) => (typeof d.code === 'object' ? String(d.code.value) : String(d.code ?? '')))
    .filter((c) => c !== '');
}

async function explainRule(server: TorchTrapServer, storage: vscode.Uri, code?: unknown): Promise<void> {
  try {
    let chosen = typeof code === 'string' && code !== '' ? code : undefined;
    if (!chosen) {
      const rules = parseRuleList(await server.executeCommand(SERVER_COMMANDS.explainRule, []));
      const pick = await vscode.window.showQuickPick(
        orderRules(rules, codesAtCursor()).map((r) => ({ label: r.code, description: r.name, detail: r.summary })),
        { title: 'TorchTrap: Explain Rule', placeHolder: 'Rule code or name', matchOnDescription: true, matchOnDetail: true },
      );
      if (!pick) {
        return;
      }
      chosen = pick.label;
    }
    const doc = parseRuleDoc(await server.executeCommand(SERVER_COMMANDS.explainRule, [chosen]));
    const uri = await writeReport(vscode.Uri.joinPath(storage, 'rules'), ruleFileName(doc.code), doc.markdown);
    await showMarkdownBeside(uri);
  } catch (err) {
    showError(server, 'Explain Rule failed', err);
  }
}

/** The document Fix All works on: the Python file, or the whole notebook (not one cell). */
function fixAllTarget(): vscode.Uri | undefined {
  const text = vscode.window.activeTextEditor;
  if (text && text.document.uri.scheme !== 'vscode-notebook-cell') {
    return text.document.languageId === 'python' ? text.document.uri : undefined;
  }
  return vscode.window.activeNotebookEditor?.notebook.uri ?? text?.document.uri;
}

async function fixAll(server: TorchTrapServer, uri?: unknown): Promise<void> {
  const target = uri instanceof vscode.Uri ? uri : fixAllTarget();
  if (!target) {
    void vscode.window.showInformationMessage('TorchTrap: open a Python file or notebook to fix.');
    return;
  }
  try {
    const result = await server.executeCommand(SERVER_COMMANDS.fixAll, [target.toString()]);
    const message = `TorchTrap: ${fixAllMessage(result)}.`.replace(/\.\.$/, '.');
    server.log.info(`Fix All ${target.toString()}: ${message}`);
    if (server.serverSettings(target).showNotifications === 'off') {
      vscode.window.setStatusBarMessage(message, 5000);
    } else if (skippedUnsafe(result) > 0) {
      const review = 'Review Unsafe Fixes…';
      void vscode.window.showInformationMessage(message, review).then((choice) => {
        if (choice === review) {
          void reviewUnsafeFixes(server, target);
        }
      });
    } else {
      void vscode.window.showInformationMessage(message);
    }
  } catch (err) {
    showError(server, 'Fix All failed', err);
  }
}

interface UnsafeItem extends vscode.QuickPickItem {
  all?: boolean;
  fix?: UnsafeFix;
}

/** The fixes Fix All skipped as unsafe: apply one, or all of them. */
async function reviewUnsafeFixes(server: TorchTrapServer, uri?: unknown): Promise<void> {
  const target = uri instanceof vscode.Uri ? uri : fixAllTarget();
  if (!target) {
    void vscode.window.showInformationMessage('TorchTrap: open a Python file or notebook to review its unsafe fixes.');
    return;
  }
  try {
    const fixes = parseUnsafeFixes(await server.executeCommand(SERVER_COMMANDS.unsafeFixes, [target.toString()]));
    if (fixes.length === 0) {
      void vscode.window.showInformationMessage('TorchTrap: no unsafe fixes left in this file.');
      return;
    }
    const items: UnsafeItem[] = [
      {
        label: `$(check-all) Apply all ${fixes.length === 1 ? 'of them' : `${fixes.length} unsafe fixes`}`,
        detail: 'Unsafe: each may change what the code does; review the diff before saving.',
        all: true,
      },
      { label: '', kind: vscode.QuickPickItemKind.Separator },
      ...fixes.map((f) => ({ ...unsafeFixItem(f), fix: f })),
    ];
    const pick = await vscode.window.showQuickPick(items, {
      title: 'TorchTrap: unsafe fixes Fix All skipped',
      placeHolder: 'Apply one, or all of them',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!pick) {
      return;
    }
    if (pick.all) {
      const result = await server.executeCommand(SERVER_COMMANDS.fixAll, [{ uri: target.toString(), unsafe: true }]);
      void vscode.window.showInformationMessage(`TorchTrap: ${fixAllMessage(result)}.`.replace(/\.\.$/, '.'));
    } else if (pick.fix) {
      await reviewOneFix(server, pick.fix);
    }
  } catch (err) {
    showError(server, 'Review Unsafe Fixes failed', err);
  }
}

/** Fixed texts shown on the right of the review's diff, by URI (`torchtrap-fix:` scheme). */
const previews = new Map<string, string>();
export const PREVIEW_SCHEME = 'torchtrap-fix';
export const previewProvider: vscode.TextDocumentContentProvider = {
  provideTextDocumentContent: (uri) => previews.get(uri.toString()) ?? '',
};

/**
 * One unsafe fix, reviewed: the diff of the file with the fix (not applied yet), then a modal
 * with its full title, the finding and the line (a modal wraps; a list row is cut off); only
 * "Apply" applies it.
 */
async function reviewOneFix(server: TorchTrapServer, fix: UnsafeFix): Promise<void> {
  const shown = (await server.executeCommand(SERVER_COMMANDS.applyFix, applyFixArguments(fix))) as { edit?: unknown } | undefined;
  const client = await server.runningClient();
  const edit = await client.protocol2CodeConverter.asWorkspaceEdit(shown?.edit as LspWorkspaceEdit);
  const entries = edit?.entries() ?? [];
  const first = entries[0];
  if (!edit || !first) {
    void vscode.window.showWarningMessage('TorchTrap: that fix is no longer current; run Review Unsafe Fixes again.');
    return;
  }
  const [uri, edits] = first;
  const doc = await vscode.workspace.openTextDocument(uri);
  const fixed = applyTextEdits(
    doc.getText(),
    edits.map((e) => ({ start: doc.offsetAt(e.range.start), end: doc.offsetAt(e.range.end), newText: e.newText })),
  );
  const right = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: uri.path, query: `v${Date.now()}` });
  previews.set(right.toString(), fixed);
  const ask = unsafeFixConfirmation(fix);
  try {
    await vscode.commands.executeCommand('vscode.diff', uri, right, `${baseName(uri)} ↔ with the fix (${fix.code}, not applied)`, { preview: true });
    const choice = await vscode.window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, ask.button);
    if (choice !== ask.button) {
      return;
    }
    if (!(await vscode.workspace.applyEdit(edit))) {
      void vscode.window.showWarningMessage('TorchTrap: the editor did not apply the fix.');
    }
  } finally {
    previews.delete(right.toString());
    const diffTab = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === right.toString());
    if (diffTab) {
      await vscode.window.tabGroups.close(diffTab);
    }
  }
}

async function checkWorkspace(server: TorchTrapServer): Promise<void> {
  try {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'TorchTrap: checking the workspace' },
      () => server.executeCommand(SERVER_COMMANDS.checkWorkspace, []),
    );
    const message = `TorchTrap: ${checkWorkspaceMessage(result)}.`;
    server.log.info(message);
    await vscode.commands.executeCommand('workbench.actions.view.problems');
    void vscode.window.showInformationMessage(message);
  } catch (err) {
    showError(server, 'Check Workspace failed', err);
  }
}

export function registerCommands(context: vscode.ExtensionContext, server: TorchTrapServer): void {
  const storage = context.globalStorageUri;
  context.subscriptions.push(
    vscode.commands.registerCommand(COMMANDS.runProbe, () => runProbe(server, storage)),
    vscode.commands.registerCommand(COMMANDS.restart, () => server.restart('Restart Server command')),
    vscode.commands.registerCommand(COMMANDS.showLogs, () => server.log.show()),
    vscode.commands.registerCommand(COMMANDS.explainRule, (code?: unknown) => explainRule(server, storage, code)),
    vscode.commands.registerCommand(COMMANDS.fixAll, (uri?: unknown) => fixAll(server, uri)),
    vscode.commands.registerCommand(COMMANDS.runFile, (uri?: unknown) => runFileWithChecks(server, uri)),
    vscode.commands.registerCommand(COMMANDS.showRunReport, (uri?: unknown) => showRunReport(server, uri)),
    vscode.commands.registerCommand(COMMANDS.reviewUnsafeFixes, (uri?: unknown) => reviewUnsafeFixes(server, uri)),
    vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, previewProvider),
    vscode.commands.registerCommand(COMMANDS.checkWorkspace, () => checkWorkspace(server)),
    vscode.commands.registerCommand(COMMANDS.selectInterpreter, (options?: { probe?: unknown }) =>
      selectInterpreterAndProbe(server, storage, options?.probe === true),
    ),
  );
}
