// "TorchTrap: Run File with Checks" and "TorchTrap: Show Run Report". The language server
// runs the file (`torchtrap run`'s launcher and checks) and publishes what it saw as
// diagnostics with the source `torchtrap-run`; this side only shows the script's output in
// an output channel, with a cancellable progress notification.

import * as path from 'node:path';
import * as vscode from 'vscode';
import { parseRunResult, runArguments, runOutputText } from './report';
import type { TorchTrapServer } from './server';

export const RUN_OUTPUT = 'torchtrap/runOutput';
export const SERVER_RUN_COMMANDS = {
  runFile: 'torchtrap.runFile',
  showRunReport: 'torchtrap.showRunReport',
} as const;

let channel: vscode.OutputChannel | undefined;
let running = false;

function outputChannel(): vscode.OutputChannel {
  channel ??= vscode.window.createOutputChannel('TorchTrap Run');
  return channel;
}

function isCancellation(err: unknown, token: vscode.CancellationToken): boolean {
  if (token.isCancellationRequested) {
    return true;
  }
  return (err as { code?: unknown } | undefined)?.code === -32800; // LSP RequestCancelled
}

function fail(server: TorchTrapServer, what: string, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  server.log.error(`${what}: ${message}`);
  void vscode.window.showErrorMessage(`TorchTrap: ${what}: ${message}`);
}

export async function runFileWithChecks(server: TorchTrapServer, arg?: unknown): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('TorchTrap: Run File with Checks runs your code; trust this workspace first.');
    return;
  }
  const target = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
  if (!target || target.scheme !== 'file' || !/\.pyw?$/.test(target.fsPath)) {
    void vscode.window.showInformationMessage('TorchTrap: open a Python file (saved on disk) to run it with checks.');
    return;
  }
  if (running) {
    void vscode.window.showInformationMessage('TorchTrap: a run is in progress; cancel it first.');
    return;
  }
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString());
  if (doc?.isDirty) {
    await doc.save(); // the run reads the file from disk
  }
  running = true;
  const out = outputChannel();
  out.clear();
  out.show(true);
  out.appendLine(`torchtrap run ${target.fsPath}`);
  const id = `run-${Date.now()}`;
  let cancelled = false;
  let result: unknown;
  try {
    const client = await server.runningClient();
    const sub = client.onNotification(RUN_OUTPUT, (params: unknown) => {
      const text = runOutputText(params, id);
      if (text !== undefined) {
        out.append(text);
      }
    });
    try {
      result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `TorchTrap: running ${path.basename(target.fsPath)} with checks`, cancellable: true },
        async (_progress, token) => {
          try {
            return await server.executeCommand(SERVER_RUN_COMMANDS.runFile, runArguments(target.toString(), id), token);
          } catch (err) {
            if (isCancellation(err, token)) {
              cancelled = true;
              return undefined;
            }
            throw err;
          }
        },
      );
    } finally {
      sub.dispose();
    }
  } catch (err) {
    out.appendLine(`\n${err instanceof Error ? err.message : String(err)}`);
    fail(server, 'the run failed', err);
    return;
  } finally {
    running = false;
  }
  if (cancelled) {
    out.appendLine('\ntorchtrap run: cancelled');
    void vscode.window.showInformationMessage('TorchTrap: run cancelled.');
    return;
  }
  try {
    const run = parseRunResult(result);
    out.appendLine(`\n${run.summary}`);
    server.log.info(run.summary);
    void vscode.window.showInformationMessage(`TorchTrap: ${run.summary.replace(/^torchtrap run: /, '')}.`);
  } catch (err) {
    fail(server, 'the run', err);
  }
}

export async function showRunReport(server: TorchTrapServer, arg?: unknown): Promise<void> {
  let file = arg instanceof vscode.Uri ? arg : undefined;
  if (!file) {
    const picked = await vscode.window.showOpenDialog({
      title: 'TorchTrap: a report written by `torchtrap run --format json --output FILE`',
      canSelectMany: false,
      filters: { 'TorchTrap run report': ['json'] },
    });
    file = picked?.[0];
  }
  if (!file) {
    return;
  }
  try {
    const run = parseRunResult(await server.executeCommand(SERVER_RUN_COMMANDS.showRunReport, [file.fsPath]));
    void vscode.window.showInformationMessage(`TorchTrap: ${run.summary.replace(/^torchtrap run: /, '')}.`);
  } catch (err) {
    fail(server, 'Show Run Report failed', err);
  }
}
