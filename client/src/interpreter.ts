// Pure logic: which Python runs the server, and is it good enough.
// Order: `torchtrap.interpreter` -> the Python extension's active environment (when
// ms-python.python is installed) -> `python3` / `python` on PATH.

import * as path from 'node:path';
import { isInside, mayRunDiscovered } from './trust';

export type InterpreterSource = 'setting' | 'pythonExtension' | 'path';

export interface Candidate {
  executable: string;
  source: InterpreterSource;
}

export interface ResolveInputs {
  /** The effective (trust-filtered) `torchtrap.interpreter`, '' when unset. */
  setting: string;
  /** The Python extension's active interpreter; undefined when it is absent or has none. */
  pythonExtension: () => Promise<string | undefined>;
  /** process.env.PATH */
  pathEnv: string | undefined;
  platform: NodeJS.Platform;
  isExecutable: (file: string) => boolean;
  trusted: boolean;
  workspaceFolders: readonly string[];
  homeDir: string;
}

export interface Resolution {
  candidate?: Candidate;
  /** Why sources were passed over, for the log. */
  notes: string[];
}

export const MIN_VERSION: readonly [number, number] = [3, 10];

/** `${workspaceFolder}`, `${userHome}`, `~` in the setting. */
export function expandSetting(value: string, workspaceFolders: readonly string[], homeDir: string): string {
  let out = value.trim();
  if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) {
    out = homeDir + out.slice(1);
  }
  out = out.replace(/\$\{userHome\}/g, homeDir);
  const first = workspaceFolders[0];
  if (first !== undefined) {
    out = out.replace(/\$\{workspaceFolder\}/g, first);
  }
  return out;
}

/** Candidate names on PATH, in order. */
export function pathNames(platform: NodeJS.Platform): string[] {
  return platform === 'win32' ? ['python3.exe', 'python.exe'] : ['python3', 'python'];
}

/** The first `python3`/`python` on PATH. Relative PATH entries are never searched. */
export function findOnPath(
  pathEnv: string | undefined,
  platform: NodeJS.Platform,
  isExecutable: (file: string) => boolean,
  accept: (file: string) => boolean = () => true,
): string | undefined {
  const impl = platform === 'win32' ? path.win32 : path.posix;
  const dirs = (pathEnv ?? '').split(platform === 'win32' ? ';' : ':').filter((d) => d !== '' && impl.isAbsolute(d));
  for (const name of pathNames(platform)) {
    for (const dir of dirs) {
      const file = impl.join(dir, name);
      if (isExecutable(file) && accept(file)) {
        return file;
      }
    }
  }
  return undefined;
}

export async function resolveInterpreter(inputs: ResolveInputs): Promise<Resolution> {
  const notes: string[] = [];
  if (inputs.setting !== '') {
    // An explicit setting is authoritative: if it is wrong, say so instead of silently
    // running another Python.
    return {
      candidate: { executable: expandSetting(inputs.setting, inputs.workspaceFolders, inputs.homeDir), source: 'setting' },
      notes,
    };
  }
  let fromExtension: string | undefined;
  try {
    fromExtension = await inputs.pythonExtension();
  } catch (err) {
    notes.push(`Python extension: ${String(err)}`);
  }
  if (fromExtension) {
    if (mayRunDiscovered(fromExtension, inputs.trusted, inputs.workspaceFolders, inputs.platform)) {
      return { candidate: { executable: fromExtension, source: 'pythonExtension' }, notes };
    }
    notes.push(`Not running ${fromExtension} (the Python extension's choice): it lies inside this untrusted workspace.`);
  }
  const onPath = findOnPath(inputs.pathEnv, inputs.platform, inputs.isExecutable, (file) =>
    mayRunDiscovered(file, inputs.trusted, inputs.workspaceFolders, inputs.platform),
  );
  if (onPath) {
    return { candidate: { executable: onPath, source: 'path' }, notes };
  }
  notes.push(`No ${pathNames(inputs.platform).join(' or ')} on PATH.`);
  return { notes };
}

// ---------------------------------------------------------------- the interpreter check

/**
 * Run with `<python> -c CHECK_SCRIPT` in the server's environment (same PYTHONPATH). Prints one
 * JSON line. `find_spec` does not import torchtrap, so the check stays fast and side-effect free.
 */
export const CHECK_SCRIPT = [
  'import json, sys',
  'try:',
  '    import importlib.util as u',
  '    s = u.find_spec("torchtrap")',
  '    loc = s.origin if s else None',
  'except Exception:',
  '    loc = None',
  'print(json.dumps({"version": list(sys.version_info[:3]), "executable": sys.executable, "torchtrap": loc}))',
].join('\n');

export interface CheckResult {
  version: [number, number, number];
  executable: string;
  /** Where `import torchtrap` would load from, or null. */
  torchtrap: string | null;
}

export function parseCheckOutput(stdout: string): CheckResult | undefined {
  for (const line of stdout.split(/\r?\n/).reverse()) {
    const text = line.trim();
    if (!text.startsWith('{')) {
      continue;
    }
    try {
      const data = JSON.parse(text) as Partial<CheckResult>;
      if (Array.isArray(data.version) && data.version.length >= 2 && typeof data.executable === 'string') {
        const [a, b, c] = data.version;
        return {
          version: [Number(a), Number(b), Number(c ?? 0)],
          executable: data.executable,
          torchtrap: typeof data.torchtrap === 'string' ? data.torchtrap : null,
        };
      }
    } catch {
      // not our line
    }
  }
  return undefined;
}

export function versionOk(version: readonly number[], min: readonly [number, number] = MIN_VERSION): boolean {
  const [major = 0, minor = 0] = version;
  return major > min[0] || (major === min[0] && minor >= min[1]);
}

export function formatVersion(version: readonly number[]): string {
  return version.join('.');
}

export type ProblemKind = 'missing' | 'notRunnable' | 'tooOld' | 'noTorchtrap' | 'bundleMissing';

export interface InterpreterProblem {
  kind: ProblemKind;
  message: string;
}

function describeSource(c: Candidate): string {
  switch (c.source) {
    case 'setting':
      return `torchtrap.interpreter (${c.executable})`;
    case 'pythonExtension':
      return `${c.executable} (the Python extension's active environment)`;
    case 'path':
      return `${c.executable} (from PATH)`;
  }
}

/**
 * Decide whether the server can start. `check` is undefined when the interpreter could not be
 * run at all. `bundleDir` is the bundled libs folder (useBundled) or undefined (fromEnvironment).
 */
export function assess(
  candidate: Candidate | undefined,
  check: CheckResult | undefined,
  strategy: 'useBundled' | 'fromEnvironment',
  bundleDir: string | undefined,
  runError?: string,
): InterpreterProblem | undefined {
  if (!candidate) {
    return {
      kind: 'missing',
      message:
        'TorchTrap needs Python 3.10 or newer and found none: install Python, select an interpreter in the Python extension, or set torchtrap.interpreter.',
    };
  }
  if (!check) {
    return {
      kind: 'notRunnable',
      message: `TorchTrap could not run ${describeSource(candidate)}${runError ? `: ${runError}` : ''}. Set torchtrap.interpreter to a Python 3.10 or newer.`,
    };
  }
  if (!versionOk(check.version)) {
    return {
      kind: 'tooOld',
      message: `TorchTrap needs Python 3.10 or newer, but ${describeSource(candidate)} is Python ${formatVersion(check.version)}. Set torchtrap.interpreter to a newer Python or select one in the Python extension.`,
    };
  }
  if (strategy === 'fromEnvironment' && !check.torchtrap) {
    return {
      kind: 'noTorchtrap',
      message: `torchtrap.importStrategy is fromEnvironment, but torchtrap is not installed in ${check.executable}. Run \`${check.executable} -m pip install torchtrap\`, or set torchtrap.importStrategy to useBundled.`,
    };
  }
  if (strategy === 'useBundled' && bundleDir !== undefined && !(check.torchtrap && isInside(check.torchtrap, [bundleDir]))) {
    return {
      kind: 'bundleMissing',
      message: `The TorchTrap server bundled with this extension was not found in ${bundleDir} (this build of the extension has no bundled server). Reinstall the extension, or set torchtrap.importStrategy to fromEnvironment and pip install torchtrap.`,
    };
  }
  return undefined;
}
