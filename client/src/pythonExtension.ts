// The Python extension (ms-python.python) is optional: it is absent offline and in many
// editors. When present, its active environment is the second choice of interpreter.

import * as vscode from 'vscode';

const PYTHON_EXTENSION_ID = 'ms-python.python';

interface EnvironmentPath {
  id: string;
  path: string;
}
interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
  };
}

async function api(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext) {
    return undefined;
  }
  return ext.isActive ? ext.exports : await ext.activate();
}

export function isInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

/** The active interpreter's executable, or undefined (no extension, no environment). */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const python = await api();
  if (!python) {
    return undefined;
  }
  if (python.environments) {
    const envPath = python.environments.getActiveEnvironmentPath(resource);
    const resolved = await python.environments.resolveEnvironment(envPath);
    const exe = resolved?.executable.uri?.fsPath;
    if (exe) {
      return exe;
    }
  }
  const cmd = python.settings?.getExecutionDetails(resource).execCommand;
  return cmd && cmd.length === 1 ? cmd[0] : undefined;
}

/** Calls `listener` when the user picks another interpreter in the Python extension. */
export async function onDidChangeInterpreter(listener: () => void): Promise<vscode.Disposable | undefined> {
  try {
    const python = await api();
    return python?.environments?.onDidChangeActiveEnvironmentPath(() => listener());
  } catch {
    return undefined;
  }
}

/**
 * "Select Interpreter": the Python extension's picker when it is installed, else a file
 * dialog whose choice becomes `torchtrap.interpreter` (of the workspace when one is open).
 */
export async function selectInterpreter(): Promise<void> {
  if (isInstalled()) {
    await vscode.commands.executeCommand('python.setInterpreter');
    return;
  }
  const picked = await vscode.window.showOpenDialog({
    title: 'TorchTrap: choose the Python interpreter (with torch for the GPU probe)',
    openLabel: 'Use this Python',
    canSelectFiles: true,
    canSelectFolders: false,
    canSelectMany: false,
  });
  const exe = picked?.[0]?.fsPath;
  if (exe) {
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration('torchtrap').update('interpreter', exe, target);
  }
}
