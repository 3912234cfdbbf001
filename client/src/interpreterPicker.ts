// "TorchTrap: Select Interpreter…": a quick pick of the interpreters the Python extension
// knows and those found the usual ways (interpreters.ts), or Browse…; then where to save
// torchtrap.interpreter (user or workspace). The server restarts on the new interpreter.
// Each offered interpreter is asked its version and whether torch is installed (one short
// `python -c`, in parallel): those the server cannot run (Python older than MIN_VERSION)
// are listed apart, saying why, and refused when picked.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import { MIN_VERSION } from './interpreter';
import {
  discoverInterpreters,
  parseProbe,
  pickerEntries,
  PROBE_SCRIPT,
  tildify,
  type FoundInterpreter,
  type ProbeResult,
} from './interpreters';
import * as pythonExtension from './pythonExtension';

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function listDirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() || e.isSymbolicLink())
      .map((e) => e.name);
  } catch {
    return [];
  }
}

interface InterpreterItem extends vscode.QuickPickItem {
  executable?: string;
  browse?: boolean;
  /** Why the server cannot run on it. */
  refused?: string;
}

const PROBE_TIMEOUT_MS = 5_000;

function probe(python: string): Promise<ProbeResult | undefined> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE_SCRIPT], { timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (err, stdout) => {
      resolve(err ? undefined : parseProbe(String(stdout)));
    });
  });
}

async function pickerItems(current: string, home: string): Promise<InterpreterItem[]> {
  const found = await findInterpreters();
  const results = await Promise.all(found.map(async (f) => [f.executable, await probe(f.executable)] as const));
  const entries = pickerEntries(found, new Map(results), current, home, MIN_VERSION);
  const items: InterpreterItem[] = [];
  let apart = false;
  for (const e of entries) {
    if (!e.usable && !apart) {
      apart = true;
      items.push({ label: `Cannot run TorchTrap (needs Python ${MIN_VERSION.join('.')}+)`, kind: vscode.QuickPickItemKind.Separator });
    }
    const item: InterpreterItem = { label: e.label, description: e.description, detail: e.detail, executable: e.executable };
    if (!e.usable) {
      item.refused = e.reason ?? 'it cannot run the server';
    }
    items.push(item);
  }
  items.push({ label: '', kind: vscode.QuickPickItemKind.Separator });
  items.push({ label: '$(folder-opened) Browse…', detail: 'Choose a Python executable from the file system', browse: true });
  return items;
}

interface TargetItem extends vscode.QuickPickItem {
  target: vscode.ConfigurationTarget;
}

export async function findInterpreters(): Promise<FoundInterpreter[]> {
  const known = await pythonExtension.knownInterpreters();
  return discoverInterpreters({
    known,
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    homeDir: os.homedir(),
    env: process.env,
    platform: process.platform,
    trusted: vscode.workspace.isTrusted,
    isExecutable,
    listDirs,
  });
}

/**
 * Ask for an interpreter and where to save it; returns the chosen executable once
 * `torchtrap.interpreter` holds it, undefined when the user cancelled.
 */
export async function selectInterpreter(): Promise<string | undefined> {
  const home = os.homedir();
  const current = vscode.workspace.getConfiguration('torchtrap').get<string>('interpreter') ?? '';
  // A promise of items: the picker opens at once, busy while the interpreters are asked.
  const pick = await vscode.window.showQuickPick(pickerItems(current, home), {
    title: 'TorchTrap: Select Interpreter',
    placeHolder: `The Python that runs TorchTrap (${MIN_VERSION.join('.')}+); the probe and Run need torch in it`,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (!pick) {
    return undefined;
  }
  if (pick.refused !== undefined) {
    void vscode.window.showErrorMessage(`TorchTrap cannot run on ${tildify(pick.executable ?? '', home)}: ${pick.refused}.`);
    return undefined;
  }
  let exe = pick.executable;
  if (pick.browse) {
    const picked = await vscode.window.showOpenDialog({
      title: 'TorchTrap: choose the Python interpreter',
      openLabel: 'Use this Python',
      canSelectFiles: true,
      canSelectFolders: false,
      canSelectMany: false,
    });
    exe = picked?.[0]?.fsPath;
  }
  if (!exe) {
    return undefined;
  }
  const target = await askTarget(exe, home);
  if (target === undefined) {
    return undefined;
  }
  const config = vscode.workspace.getConfiguration('torchtrap');
  await config.update('interpreter', exe, target);
  const inspected = config.inspect<string>('interpreter');
  if (target === vscode.ConfigurationTarget.Global && (inspected?.workspaceValue || inspected?.workspaceFolderValue)) {
    void vscode.window.showWarningMessage(
      'TorchTrap: saved for the user, but this workspace sets its own torchtrap.interpreter, which wins here.',
    );
  }
  return exe;
}

/** Save for the user or the workspace (asked only when both are possible). */
async function askTarget(exe: string, home: string): Promise<vscode.ConfigurationTarget | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  // An untrusted workspace's torchtrap.interpreter is ignored: only the user's counts.
  if (folders.length === 0 || !vscode.workspace.isTrusted) {
    return vscode.ConfigurationTarget.Global;
  }
  const where = vscode.workspace.workspaceFile ? 'the .code-workspace file' : `${folders[0]?.name ?? 'the folder'}/.vscode/settings.json`;
  const targets: TargetItem[] = [
    { label: 'Save for this workspace', detail: `In ${where}`, target: vscode.ConfigurationTarget.Workspace },
    { label: 'Save for the user', detail: 'In your user settings: every workspace without its own', target: vscode.ConfigurationTarget.Global },
  ];
  const choice = await vscode.window.showQuickPick(targets, {
    title: `TorchTrap: use ${tildify(exe, home)}`,
    placeHolder: 'Where to save torchtrap.interpreter',
  });
  return choice?.target;
}
