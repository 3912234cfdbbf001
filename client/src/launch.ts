// Pure logic: the command line and environment of the server process.

import * as path from 'node:path';
import type { ImportStrategy } from './settings';

export interface LaunchInputs {
  python: string;
  strategy: ImportStrategy;
  /** <extension>/bundled/libs */
  bundledLibs: string;
  /** A directory with no Python packages in it (the extension's own folder). */
  safeCwd: string;
  baseEnv: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
}

export interface Launch {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export const SERVER_ARGS: readonly string[] = ['-m', 'torchtrap', 'lsp'];

/**
 * useBundled prepends the bundled libs to PYTHONPATH; fromEnvironment leaves PYTHONPATH alone.
 * Either way the process starts in a folder of ours, never the workspace: `python -m` puts the
 * current directory first on sys.path, and a cloned repo with a `torchtrap/` or `pygls/` folder
 * must not shadow the server. PYTHONSAFEPATH (3.11+) says the same to newer Pythons.
 */
export function buildLaunch(inputs: LaunchInputs, args: readonly string[] = SERVER_ARGS): Launch {
  const env: NodeJS.ProcessEnv = { ...inputs.baseEnv, PYTHONSAFEPATH: '1', PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' };
  if (inputs.strategy === 'useBundled') {
    const sep = inputs.platform === 'win32' ? ';' : ':';
    const existing = inputs.baseEnv.PYTHONPATH;
    env.PYTHONPATH = existing ? `${inputs.bundledLibs}${sep}${existing}` : inputs.bundledLibs;
  }
  return { command: inputs.python, args: [...args], cwd: inputs.safeCwd, env };
}

export function bundledLibsDir(extensionPath: string): string {
  return path.join(extensionPath, 'bundled', 'libs');
}
