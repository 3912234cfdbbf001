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
  detail: string;
  severity: 'information' | 'warning' | 'error';
  busy: boolean;
}

const SOURCE_LABEL: Record<InterpreterSource, string> = {
  setting: 'torchtrap.interpreter',
  pythonExtension: 'Python extension',
  path: 'PATH',
};

export function describeState(state: ServerState): StatusView {
  const parts: string[] = [];
  if (state.interpreter) {
    const version = state.interpreter.version ? `Python ${state.interpreter.version}` : 'Python';
    parts.push(`${version} · ${state.interpreter.executable} (${SOURCE_LABEL[state.interpreter.source]})`);
  }
  if (state.strategy) {
    parts.push(state.strategy === 'useBundled' ? 'bundled server' : 'server from environment');
  }
  if (state.restricted) {
    parts.push('restricted mode');
  }
  if (state.message) {
    parts.unshift(state.message);
  }
  const detail = parts.join(' — ');
  switch (state.phase) {
    case 'starting':
      return { text: '$(sync~spin) TorchTrap', detail: detail || 'Starting…', severity: 'information', busy: true };
    case 'running':
      return { text: '$(check) TorchTrap', detail, severity: 'information', busy: false };
    case 'disabled':
      return { text: '$(circle-slash) TorchTrap', detail: detail || 'Disabled (torchtrap.enable)', severity: 'information', busy: false };
    case 'stopped':
      return { text: '$(debug-stop) TorchTrap', detail: detail || 'Stopped', severity: 'warning', busy: false };
    case 'error':
      return { text: '$(error) TorchTrap', detail: detail || 'Failed to start', severity: 'error', busy: false };
  }
}
