// Pure logic for workspace trust. In an untrusted workspace (limited mode) a cloned
// repository must not be able to make TorchTrap execute a binary of its choosing:
// - `torchtrap.interpreter` and `torchtrap.importStrategy` from workspace (or folder)
//   settings are ignored (package.json also lists them in `restrictedConfigurations`,
//   so VS Code itself hides them; this is the belt to those braces);
// - an interpreter that lives inside a workspace folder (say `.venv/bin/python`
//   picked by the Python extension) is not used;
// - relative PATH entries are never searched.

import * as path from 'node:path';

/** The shape of `WorkspaceConfiguration.inspect()` that matters here. */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/** Keys that a workspace may not set while it is untrusted. */
export const RESTRICTED_KEYS: readonly string[] = ['interpreter', 'importStrategy'];

export interface TrustedValue<T> {
  value: T | undefined;
  /** A workspace value existed but was ignored because the workspace is untrusted. */
  ignoredWorkspaceValue: boolean;
}

/** The effective value of a setting given the workspace's trust. */
export function effectiveValue<T>(inspected: Inspected<T> | undefined, trusted: boolean): TrustedValue<T> {
  if (!inspected) {
    return { value: undefined, ignoredWorkspaceValue: false };
  }
  if (trusted) {
    return {
      value: inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue,
      ignoredWorkspaceValue: false,
    };
  }
  const fromWorkspace = inspected.workspaceFolderValue !== undefined || inspected.workspaceValue !== undefined;
  return { value: inspected.globalValue ?? inspected.defaultValue, ignoredWorkspaceValue: fromWorkspace };
}

/** A getter over `inspect()` that drops workspace values of restricted keys when untrusted. */
export function trustedGetter(
  inspect: (key: string) => Inspected<unknown> | undefined,
  get: (key: string) => unknown,
  trusted: boolean,
  ignored: string[] = [],
): (key: string) => unknown {
  return (key: string) => {
    if (trusted || !RESTRICTED_KEYS.includes(key)) {
      return get(key);
    }
    const result = effectiveValue(inspect(key), false);
    if (result.ignoredWorkspaceValue && !ignored.includes(key)) {
      ignored.push(key);
    }
    return result.value;
  };
}

function normalize(p: string, platform: NodeJS.Platform): string {
  const impl = platform === 'win32' ? path.win32 : path.posix;
  let out = impl.resolve(p);
  if (platform === 'win32' || platform === 'darwin') {
    out = out.toLowerCase(); // case-insensitive file systems by default
  }
  return out;
}

/** True when `file` is inside (or is) one of `folders`. */
export function isInside(file: string, folders: readonly string[], platform: NodeJS.Platform = process.platform): boolean {
  const impl = platform === 'win32' ? path.win32 : path.posix;
  const f = normalize(file, platform);
  return folders.some((folder) => {
    const d = normalize(folder, platform);
    const rel = impl.relative(d, f);
    return rel === '' || (!rel.startsWith('..') && !impl.isAbsolute(rel));
  });
}

/**
 * Whether an interpreter found by some automatic means may be run. A path the user set in
 * their own (user-level) settings is always allowed; this guards the automatic sources.
 */
export function mayRunDiscovered(
  executable: string,
  trusted: boolean,
  workspaceFolders: readonly string[],
  platform: NodeJS.Platform = process.platform,
): boolean {
  return trusted || !isInside(executable, workspaceFolders, platform);
}
