// vscode-languageclient traces LSP messages only when its trace channel's log level is
// Trace. This wrapper reports Trace while `torchtrap.trace.server` is messages/verbose and
// writes the trace into the TorchTrap log, so the setting works on its own and takes effect
// without a reload (changing it fires onDidChangeLogLevel, and languageclient re-sends $/setTrace).

import * as vscode from 'vscode';
import { traceEnabled } from './logs';

export class TraceChannel implements vscode.LogOutputChannel, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.LogLevel>();
  private enabled = false;
  private readonly sub: vscode.Disposable;
  readonly onDidChangeLogLevel = this.emitter.event;

  constructor(private readonly target: vscode.LogOutputChannel) {
    this.enabled = traceEnabled(vscode.workspace.getConfiguration('torchtrap').get('trace.server'));
    this.sub = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('torchtrap.trace.server')) {
        this.enabled = traceEnabled(vscode.workspace.getConfiguration('torchtrap').get('trace.server'));
        this.emitter.fire(this.logLevel);
      }
    });
  }

  get name(): string {
    return this.target.name;
  }
  get logLevel(): vscode.LogLevel {
    return this.enabled ? vscode.LogLevel.Trace : this.target.logLevel;
  }
  trace(message: string, ...args: unknown[]): void {
    if (this.enabled && this.target.logLevel > vscode.LogLevel.Trace) {
      this.target.info(message, ...args);
    } else {
      this.target.trace(message, ...args);
    }
  }
  debug(message: string, ...args: unknown[]): void {
    this.target.debug(message, ...args);
  }
  info(message: string, ...args: unknown[]): void {
    this.target.info(message, ...args);
  }
  warn(message: string, ...args: unknown[]): void {
    this.target.warn(message, ...args);
  }
  error(error: string | Error, ...args: unknown[]): void {
    this.target.error(error, ...args);
  }
  append(value: string): void {
    this.target.append(value);
  }
  appendLine(value: string): void {
    this.target.appendLine(value);
  }
  replace(value: string): void {
    this.target.replace(value);
  }
  clear(): void {
    this.target.clear();
  }
  show(columnOrPreserveFocus?: vscode.ViewColumn | boolean, preserveFocus?: boolean): void {
    if (typeof columnOrPreserveFocus === 'boolean' || columnOrPreserveFocus === undefined) {
      this.target.show(columnOrPreserveFocus);
    } else {
      this.target.show(columnOrPreserveFocus, preserveFocus);
    }
  }
  hide(): void {
    this.target.hide();
  }
  dispose(): void {
    this.sub.dispose();
    this.emitter.dispose();
  }
}
