// Pure logic: what the language status item shows.

import type { InterpreterSource } from './interpreter';
import type { ImportStrategy } from './settings';

export type Phase = 'starting' | 'running' | 'stopped' | 'error' | 'disabled';

export interface ServerState {
  phase: Phase;
  interpreter?: { executable: string; version?: string; source: InterpreterSource };
  strategy?: ImportStrategy;
  message?: string;
  /** The workspace is untrusted (limited mode). */
  restricted?: boolean;
}

export interface StatusView {
  text: string;
  /** One short line: the pop-up sits at the window's right edge and does not wrap. */
  detail: string;
  /** Everything, unshortened (the full path, the whole message). */
  tooltip: string;
  severity: 'information' | 'warning' | 'error';
  busy: boolean;
}

const SOURCE_LABEL: Record<InterpreterSource, string> = {
  setting: 'torchtrap.interpreter',
  pythonExtension: 'Python extension',
  path: 'PATH',
};

const MAX_PATH = 24;
const MAX_MESSAGE = 48;

/**
 * The interpreter in a few characters: a short path as it is; in a virtual environment the
 * environment's folder (`…/py-torch/bin/python` -> `py-torch`, as the Python extension
 * shows it); else the end of the path.
 */
export function shortPath(file: string, max = MAX_PATH): string {
  if (file.length <= max) {
    return file;
  }
  const parts = file.split(/[\\/]/);
  const bin = parts.length - 2;
  if (bin > 0 && /^(bin|Scripts)$/.test(parts[bin] ?? '') && parts[bin - 1]) {
    return parts[bin - 1] ?? file;
  }
  let tail = parts.pop() ?? file;
  while (parts.length > 0 && tail.length + 1 + (parts[parts.length - 1] ?? '').length + 2 <= max) {
    tail = `${parts.pop()}/${tail}`;
  }
  return `…/${tail}`;
}

function shorten(text: string, max = MAX_MESSAGE): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length <= max ? one : `${one.slice(0, max - 1).trimEnd()}…`;
}

export function describeState(state: ServerState): StatusView {
  const short: string[] = [];
  const full: string[] = [];
  if (state.message) {
    short.push(shorten(state.message));
    full.push(state.message);
  }
  if (state.interpreter) {
    const version = state.interpreter.version ? `Python ${state.interpreter.version}` : 'Python';
    short.push(`${version} (${shortPath(state.interpreter.executable)})`);
    full.push(`${version} · ${state.interpreter.executable} (from ${SOURCE_LABEL[state.interpreter.source]})`);
  }
  if (state.strategy) {
    short.push(state.strategy === 'useBundled' ? 'bundled' : 'from environment');
    full.push(state.strategy === 'useBundled' ? 'bundled server' : 'server from the environment');
  }
  if (state.restricted) {
    short.push('restricted mode'); // the e2e looks for these words
    full.push('restricted mode (untrusted workspace)');
  }
  const detail = short.join(' · ');
  const tooltip = full.join('\n');
  const view = (text: string, fallback: string, severity: StatusView['severity'], busy = false): StatusView => ({
    text,
    detail: detail || fallback,
    tooltip: tooltip || fallback,
    severity,
    busy,
  });
  switch (state.phase) {
    case 'starting':
      return view('$(sync~spin) TorchTrap', 'Starting…', 'information', true);
    case 'running':
      return view('$(check) TorchTrap', 'Running', 'information');
    case 'disabled':
      return view('$(circle-slash) TorchTrap', 'Disabled (torchtrap.enable)', 'information');
    case 'stopped':
      return view('$(debug-stop) TorchTrap', 'Stopped', 'warning');
    case 'error':
      return view('$(error) TorchTrap', 'Failed to start', 'error');
  }
}
