// Pure logic for the TorchTrap log: the server's stderr lines get their own level
// (languageclient would log every stderr line as an error), and `torchtrap.trace.server`
// maps to the level the trace channel reports.

export type Level = 'error' | 'warn' | 'info' | 'debug' | 'trace';

/** Python logging and tracebacks: `ERROR:torchtrap.lsp:...`, `... WARNING ...`, `Traceback`. */
export function classifyStderrLine(line: string): Level {
  const head = line.slice(0, 120);
  if (/\b(CRITICAL|FATAL|ERROR)\b|^Traceback \(most recent call last\)|^\w*(Error|Exception)\b/.test(head)) {
    return 'error';
  }
  if (/\bWARN(ING)?\b/.test(head)) {
    return 'warn';
  }
  if (/\bDEBUG\b/.test(head)) {
    return 'debug';
  }
  return 'info';
}

/** Whether LSP message tracing is on for a `torchtrap.trace.server` value. */
export function traceEnabled(setting: unknown): boolean {
  return setting === 'messages' || setting === 'verbose';
}
