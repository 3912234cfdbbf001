// Pure logic: the Python interpreters "TorchTrap: Select Interpreter" offers. The Python
// extension's known environments first (when it is installed), then those found the usual
// ways: the active virtualenv/conda env, venvs in the workspace folders, virtualenvwrapper,
// conda (base and envs), pyenv, and python3/python on PATH. No interpreter is run here.

import * as path from 'node:path';
import { pathNames } from './interpreter';
import { mayRunDiscovered } from './trust';

export type FoundSource = 'Python extension' | 'active environment' | 'workspace' | 'virtualenv' | 'conda' | 'pyenv' | 'PATH';

export interface FoundInterpreter {
  executable: string;
  source: FoundSource;
  /** A short name: the environment's folder (`.venv`, `envs/torch`, `3.11.9`). */
  name: string;
}

export interface DiscoverInputs {
  /** Executables the Python extension knows (empty without it). */
  known: readonly string[];
  workspaceFolders: readonly string[];
  homeDir: string;
  env: Readonly<Record<string, string | undefined>>;
  platform: NodeJS.Platform;
  trusted: boolean;
  isExecutable: (file: string) => boolean;
  /** Sub-folder names of `dir` ([] when it does not exist). */
  listDirs: (dir: string) => string[];
}

/** Folder names of a project's own virtual environments. */
export const WORKSPACE_VENVS = ['.venv', 'venv', 'env', '.env', '.conda'];
/** Where conda installs usually live, below the home folder. */
export const CONDA_ROOTS = ['miniconda3', 'anaconda3', 'miniforge3', 'mambaforge', '.conda', 'micromamba'];

/** The interpreter of an environment folder (`bin/python`, `Scripts\python.exe`). */
export function envPython(envDir: string, platform: NodeJS.Platform): string[] {
  const impl = platform === 'win32' ? path.win32 : path.posix;
  return platform === 'win32'
    ? [impl.join(envDir, 'Scripts', 'python.exe'), impl.join(envDir, 'python.exe')]
    : [impl.join(envDir, 'bin', 'python3'), impl.join(envDir, 'bin', 'python')];
}

/** `3.9.1` before `3.10.2`: folder names in version order. */
const natural = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });

export function discoverInterpreters(inputs: DiscoverInputs): FoundInterpreter[] {
  const impl = inputs.platform === 'win32' ? path.win32 : path.posix;
  const out: FoundInterpreter[] = [];
  const seen = new Set<string>();
  const add = (executable: string, source: FoundSource, name: string): boolean => {
    const key = inputs.platform === 'win32' ? executable.toLowerCase() : executable;
    if (seen.has(key) || !inputs.isExecutable(executable)) {
      return false;
    }
    // In an untrusted workspace nothing inside it is offered (it could be anything).
    if (!mayRunDiscovered(executable, inputs.trusted, inputs.workspaceFolders, inputs.platform)) {
      return false;
    }
    seen.add(key);
    out.push({ executable, source, name });
    return true;
  };
  const addEnv = (envDir: string, source: FoundSource, name: string): void => {
    const exes = envPython(envDir, inputs.platform);
    if (exes.some((exe) => seen.has(inputs.platform === 'win32' ? exe.toLowerCase() : exe))) {
      return; // offered already (by the Python extension, or as the active environment)
    }
    for (const exe of exes) {
      if (add(exe, source, name)) {
        return; // one per environment
      }
    }
  };
  for (const exe of inputs.known) {
    add(exe, 'Python extension', impl.basename(impl.dirname(impl.dirname(exe))) || exe);
  }
  for (const key of ['VIRTUAL_ENV', 'CONDA_PREFIX']) {
    const dir = inputs.env[key];
    if (dir && impl.isAbsolute(dir)) {
      addEnv(dir, 'active environment', impl.basename(dir));
    }
  }
  for (const folder of inputs.workspaceFolders) {
    for (const name of WORKSPACE_VENVS) {
      addEnv(impl.join(folder, name), 'workspace', name);
    }
  }
  const workon = inputs.env.WORKON_HOME || impl.join(inputs.homeDir, '.virtualenvs');
  for (const name of inputs.listDirs(workon).sort(natural)) {
    addEnv(impl.join(workon, name), 'virtualenv', name);
  }
  const condaRoots = CONDA_ROOTS.map((r) => impl.join(inputs.homeDir, r));
  if (inputs.platform !== 'win32') {
    condaRoots.push('/opt/conda');
  }
  for (const root of condaRoots) {
    addEnv(root, 'conda', `${impl.basename(root)} (base)`);
    const envs = impl.join(root, 'envs');
    for (const name of inputs.listDirs(envs).sort(natural)) {
      addEnv(impl.join(envs, name), 'conda', name);
    }
  }
  const pyenv = inputs.env.PYENV_ROOT || impl.join(inputs.homeDir, '.pyenv');
  const versions = impl.join(pyenv, 'versions');
  for (const name of inputs.listDirs(versions).sort(natural)) {
    addEnv(impl.join(versions, name), 'pyenv', name);
  }
  const dirs = (inputs.env.PATH ?? '').split(inputs.platform === 'win32' ? ';' : ':').filter((d) => d !== '' && impl.isAbsolute(d));
  for (const dir of dirs) {
    for (const name of pathNames(inputs.platform)) {
      add(impl.join(dir, name), 'PATH', impl.join(dir, name));
    }
  }
  return out;
}

/** `/home/me/x` -> `~/x` for display. */
export function tildify(file: string, homeDir: string): string {
  if (homeDir && (file === homeDir || file.startsWith(`${homeDir}/`))) {
    return `~${file.slice(homeDir.length)}`;
  }
  return file;
}

// ---------------------------------------------------------------- what each one can do

/**
 * Run as `<python> -c PROBE_SCRIPT` on each offered interpreter: its version and torch's
 * (from the installed metadata: torch is never imported, so this stays fast). Written to run
 * on Python 2.7 too, so that an interpreter too old for the server says so instead of failing.
 */
export const PROBE_SCRIPT = [
  'import json, sys',
  'torch = None',
  'try:',
  '    from importlib.metadata import version',
  '    torch = version("torch")',
  'except Exception:',
  '    try:',
  '        import importlib.util as u',
  '        torch = "" if u.find_spec("torch") else None',
  '    except Exception:',
  '        torch = None',
  'print(json.dumps({"version": list(sys.version_info[:3]), "torch": torch}))',
].join('\n');

export interface ProbeResult {
  version: [number, number, number];
  /** torch's version, '' when installed but its version is unknown, null when absent. */
  torch: string | null;
}

export function parseProbe(stdout: string): ProbeResult | undefined {
  for (const line of stdout.split(/\r?\n/).reverse()) {
    try {
      const data = JSON.parse(line) as { version?: unknown; torch?: unknown };
      if (Array.isArray(data.version) && data.version.length >= 2) {
        const [a, b, c] = data.version as number[];
        return { version: [Number(a), Number(b), Number(c ?? 0)], torch: typeof data.torch === 'string' ? data.torch : null };
      }
    } catch {
      // not the JSON line
    }
  }
  return undefined;
}

export interface PickerEntry {
  executable: string;
  label: string;
  description: string;
  detail: string;
  /** The server can run on it (Python >= min). */
  usable: boolean;
  /** Why not, when it cannot: said when it is picked anyway. */
  reason?: string;
}

/**
 * The picker's rows: interpreters the server can run first (those with torch before those
 * without, otherwise in discovery order), each saying its Python and whether torch is there
 * (the probe and `torchtrap run` need it); then those it cannot run (too old, or not runnable),
 * saying why. `probes` maps an executable to its probe result (undefined: it did not run).
 */
export function pickerEntries(
  found: readonly FoundInterpreter[],
  probes: ReadonlyMap<string, ProbeResult | undefined>,
  current: string,
  homeDir: string,
  min: readonly [number, number],
): PickerEntry[] {
  const need = `${min[0]}.${min[1]}`;
  const rows = found.map((f, order) => {
    const probe = probes.get(f.executable);
    const marks: string[] = [f.source];
    let usable = false;
    let reason: string | undefined;
    let torch = false;
    if (!probe) {
      reason = 'it did not run';
      marks.push('could not run it');
    } else {
      const [major, minor] = probe.version;
      const py = `Python ${probe.version.join('.')}`;
      usable = major > min[0] || (major === min[0] && minor >= min[1]);
      if (!usable) {
        reason = `it is ${py}; TorchTrap needs ${need} or newer`;
        marks.push(`${py}: too old (needs ${need}+)`);
      } else {
        torch = probe.torch !== null;
        marks.push(py, torch ? `torch ${probe.torch || '(version unknown)'}` : 'no torch (the probe and Run need it)');
      }
    }
    if (f.executable === current) {
      marks.push('current');
    }
    const entry: PickerEntry = {
      executable: f.executable,
      label: f.name,
      description: marks.join(' · '),
      detail: tildify(f.executable, homeDir),
      usable,
    };
    if (reason !== undefined) {
      entry.reason = reason;
    }
    return { entry, rank: usable ? (torch ? 0 : 1) : 2, order };
  });
  rows.sort((a, b) => a.rank - b.rank || a.order - b.order);
  return rows.map((r) => r.entry);
}
