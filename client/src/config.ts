// Reads `torchtrap.*` from VS Code, honouring workspace trust.

import * as vscode from 'vscode';
import { readSettings, type Settings } from './settings';
import { trustedGetter, type Inspected } from './trust';

export interface EffectiveSettings extends Settings {
  /** Restricted keys whose workspace values were ignored (untrusted workspace). */
  ignoredWorkspaceKeys: string[];
}

export function defaultScope(): vscode.Uri | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri;
}

export function effectiveSettings(scope: vscode.Uri | undefined = defaultScope()): EffectiveSettings {
  const cfg = vscode.workspace.getConfiguration('torchtrap', scope);
  const ignored: string[] = [];
  const get = trustedGetter(
    (key) => cfg.inspect(key) as Inspected<unknown> | undefined,
    (key) => cfg.get(key),
    vscode.workspace.isTrusted,
    ignored,
  );
  return { ...readSettings(get), ignoredWorkspaceKeys: ignored };
}
