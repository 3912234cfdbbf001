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
interface KnownEnvironment {
  path: string;
  executable?: { uri?: vscode.Uri };
}
interface PythonApi {
  environments?: {
    known?: readonly KnownEnvironment[];
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

/** The executables of the environments the Python extension knows ([] without it). */
export async function knownInterpreters(): Promise<string[]> {
  try {
    const python = await api();
    return (python?.environments?.known ?? [])
      .map((env) => env.executable?.uri?.fsPath ?? env.path)
      .filter((exe): exe is string => typeof exe === 'string' && exe !== '');
  } catch {
    return [];
  }
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
