// The language status item (the `{}` in the status bar, like Pylance and ruff).

import * as vscode from 'vscode';
import { describeState, type ServerState } from './status';

const SEVERITY = {
  information: vscode.LanguageStatusSeverity.Information,
  warning: vscode.LanguageStatusSeverity.Warning,
  error: vscode.LanguageStatusSeverity.Error,
} as const;

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem('torchtrap.status', [
      { language: 'python' },
      { notebookType: 'jupyter-notebook', language: 'python' },
    ]);
    this.item.name = 'TorchTrap';
    this.item.command = { title: 'Show Logs', command: 'torchtrap.vscode.showLogs' };
    this.update({ phase: 'starting' });
  }

  update(state: ServerState): void {
    const view = describeState(state);
    this.item.text = view.text;
    this.item.detail = view.detail;
    this.item.severity = SEVERITY[view.severity];
    this.item.busy = view.busy;
    this.item.accessibilityInformation = { label: `TorchTrap: ${view.tooltip}` };
    this.item.command =
      state.phase === 'error' || state.phase === 'stopped'
        ? { title: 'Restart', command: 'torchtrap.vscode.restart', tooltip: view.tooltip }
        : { title: 'Show Logs', command: 'torchtrap.vscode.showLogs', tooltip: view.tooltip };
  }

  dispose(): void {
    this.item.dispose();
  }
}
