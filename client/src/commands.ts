// The palette commands. Their IDs differ from the server's executeCommand IDs
// (`torchtrap.runProbe`, ...), which vscode-languageclient registers by itself.

import * as vscode from 'vscode';
import { WorkDoneProgress } from 'vscode-languageclient/node';
import * as pythonExtension from './pythonExtension';
import {
  fixAllMessage,
  orderRules,
  parseProbeResult,
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
} as const;

export const SERVER_COMMANDS = {
  runProbe: 'torchtrap.runProbe',
  fixAll: 'torchtrap.fixAll',
  explainRule: 'torchtrap.explainRule',
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

/** A probe without torch gets buttons to pick another interpreter, not CLI advice. */
function showProbeError(server: TorchTrapServer, err: unknown): void {
  const failure = probeFailure(err instanceof Error ? err.message : String(err));
  if (!failure.needsTorch) {
    showError(server, 'the GPU probe failed', err);
    return;
  }
  server.log.error(`the GPU probe failed: ${failure.message}`);
  const message = `TorchTrap: the GPU probe needs torch. ${failure.message} Or select the interpreter that has torch.`;
  void vscode.window.showErrorMessage(message, 'Select Interpreter', 'Open Settings', 'Show Logs').then((choice) => {
    if (choice === 'Select Interpreter') {
      void pythonExtension.selectInterpreter();
    } else if (choice === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'torchtrap.interpreter');
    } else if (choice === 'Show Logs') {
      server.log.show();
    }
  });
}

async function runProbe(server: TorchTrapServer, storage: vscode.Uri): Promise<void> {
  const timeout = server.serverSettings().probe.timeout;
  let cancelled = false;
  let result: unknown;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'TorchTrap: GPU probe', cancellable: true },
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
          return await server.executeCommand(SERVER_COMMANDS.runProbe, probeArguments(timeout), token, workDoneToken);
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
    showProbeError(server, err);
    return;
  }
  if (cancelled) {
    server.log.info('GPU probe cancelled.');
    void vscode.window.showInformationMessage('TorchTrap: GPU probe cancelled.');
    return;
  }
  try {
    const report = parseProbeResult(result);
    const dir = vscode.Uri.joinPath(storage, 'probe');
    await writeReport(dir, `${PROBE_REPORT_NAME}.json`, JSON.stringify(report.json, null, 2));
    const uri = await writeReport(dir, `${PROBE_REPORT_NAME}.md`, report.markdown);
    server.log.info(`GPU probe report: ${uri.fsPath}`);
    await showProbeReport(report.markdown);
  } catch (err) {
    showError(server, 'the GPU probe report', err);
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
    } else {
      void vscode.window.showInformationMessage(message);
    }
  } catch (err) {
    showError(server, 'Fix All failed', err);
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
  );
}
