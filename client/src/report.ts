// Pure logic for the probe and rule reports the server returns.

export interface ProbeResult {
  markdown: string;
  json: unknown;
}

/** `torchtrap.runProbe` returns `{json, markdown}`; anything else is a server error. */
export function parseProbeResult(value: unknown): ProbeResult {
  if (value && typeof value === 'object') {
    const v = value as { markdown?: unknown; json?: unknown };
    if (typeof v.markdown === 'string') {
      return { markdown: v.markdown, json: v.json ?? null };
    }
  }
  throw new Error(`unexpected torchtrap.runProbe result: ${JSON.stringify(value)?.slice(0, 200)}`);
}

export function probeArguments(timeoutSeconds: number): [{ timeout: number }] {
  return [{ timeout: timeoutSeconds }];
}

export interface RuleSummary {
  code: string;
  name: string;
  summary: string;
}

export function parseRuleList(value: unknown): RuleSummary[] {
  if (!Array.isArray(value)) {
    throw new Error(`unexpected torchtrap.explainRule result: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return value
    .filter((r): r is Record<string, unknown> => !!r && typeof r === 'object' && typeof (r as { code?: unknown }).code === 'string')
    .map((r) => ({
      code: String(r.code),
      name: typeof r.name === 'string' ? r.name : '',
      summary: typeof r.summary === 'string' ? r.summary : '',
    }));
}

export function parseRuleDoc(value: unknown): { code: string; markdown: string } {
  if (value && typeof value === 'object') {
    const v = value as { code?: unknown; markdown?: unknown; name?: unknown };
    if (typeof v.markdown === 'string') {
      return { code: typeof v.code === 'string' ? v.code : 'rule', markdown: v.markdown };
    }
  }
  throw new Error(`unexpected torchtrap.explainRule result: ${JSON.stringify(value)?.slice(0, 200)}`);
}

/** Rules whose codes are under the cursor come first in the picker, then by code. */
export function orderRules(rules: readonly RuleSummary[], preferred: readonly string[]): RuleSummary[] {
  const rank = (code: string) => {
    const i = preferred.indexOf(code);
    return i === -1 ? preferred.length : i;
  };
  return [...rules].sort((a, b) => rank(a.code) - rank(b.code) || a.code.localeCompare(b.code));
}

/** A safe file name for a rule code (`TT101` -> `TT101.md`). */
export function ruleFileName(code: string): string {
  return `${code.replace(/[^A-Za-z0-9_-]/g, '_') || 'rule'}.md`;
}

/** Map work-done percentages to the increments `Progress.report` wants. */
export class PercentTracker {
  private last = 0;
  increment(percentage: number | undefined): number | undefined {
    if (percentage === undefined || !Number.isFinite(percentage)) {
      return undefined;
    }
    const p = Math.max(0, Math.min(100, percentage));
    const inc = p - this.last;
    if (inc <= 0) {
      return undefined;
    }
    this.last = p;
    return inc;
  }
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * What "TorchTrap: Fix All" tells the user. The server's `torchtrap.fixAll` answers
 * `{fixed, skippedUnsafe, message?}` (older servers: `{applied, fixes}`, or nothing);
 * its own message wins when it sends one.
 */
export function fixAllMessage(result: unknown): string {
  const r = result && typeof result === 'object' ? (result as Record<string, unknown>) : {};
  if (typeof r.message === 'string' && r.message.trim() !== '') {
    return r.message.trim();
  }
  const fixed = count(r.fixed) ?? (r.applied === false ? 0 : count(r.fixes)) ?? 0;
  const skipped = count(r.skippedUnsafe) ?? count(r.skipped_unsafe) ?? 0;
  const note = skipped > 0 ? ` (${plural(skipped, 'unsafe fix', 'unsafe fixes')} skipped)` : '';
  return fixed > 0 ? `Fixed ${plural(fixed, 'finding', 'findings')}${note}` : `Nothing to fix${note}`;
}

export interface ProbeFailure {
  /** The interpreter has no torch (or a broken one): offer to pick another. */
  needsTorch: boolean;
  /** The server's message without its command-line advice (`--python PATH`). */
  message: string;
}

/** The probe's error as VS Code shows it: no CLI flags, which mean nothing there. */
export function probeFailure(message: string): ProbeFailure {
  const needsTorch = /\btorch (is not installed|fails to import)\b/.test(message);
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/--python\b/.test(l));
  return { needsTorch, message: lines.join(' ') };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/**
 * Give each table cell the text of its column header (`data-label`), so that in a narrow
 * panel the stylesheet can show every row as a card of "Header: value" lines.
 */
export function labelTableCells(html: string): string {
  return html.replace(/<table\b[^>]*>[\s\S]*?<\/table>/g, (table: string) => {
    const head = /<thead\b[^>]*>([\s\S]*?)<\/thead>/.exec(table)?.[1] ?? '';
    const labels = Array.from(head.matchAll(/<th\b[^>]*>([\s\S]*?)<\/th>/g), (m) =>
      escapeHtml((m[1] ?? '').replace(/<[^>]*>/g, '').trim()),
    );
    return table.replace(/<tr\b[^>]*>[\s\S]*?<\/tr>/g, (row: string) => {
      let i = 0;
      return row.replace(/<td(\s[^>]*)?>/g, (_td: string, attrs?: string) => `<td${attrs ?? ''} data-label="${labels[i++] ?? ''}">`);
    });
  });
}

const REPORT_CSS = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground);
  line-height: 1.5; padding: 0 16px 16px; max-width: 60em; overflow-wrap: anywhere; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; } h3 { font-size: 1.1em; }
a { color: var(--vscode-textLink-foreground); }
code { font-family: var(--vscode-editor-font-family); font-size: 0.95em; }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 8px 0; max-width: 100%; }
th, td { border: 1px solid var(--vscode-panel-border, rgba(128,128,128,0.35)); padding: 4px 8px; text-align: left; vertical-align: top; }
@media (max-width: 560px) {
  table, thead, tbody, tr, td { display: block; width: auto; }
  thead { display: none; }
  tr { border: 1px solid var(--vscode-panel-border, rgba(128,128,128,0.35)); margin: 0 0 8px; padding: 4px 0; }
  td { border: none; padding: 2px 8px; }
  td::before { content: attr(data-label) ": "; font-weight: 600; }
  td[data-label=""]::before { content: none; }
}`;

/** The whole page of a report webview: rendered markdown, no scripts, theme colours. */
export function reportPage(bodyHtml: string, title: string, nonce: string, cspSource: string): string {
  const csp = `default-src 'none'; img-src ${cspSource} https: data:; style-src 'nonce-${nonce}';`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${REPORT_CSS}</style>
</head><body>
${labelTableCells(bodyHtml)}
</body></html>`;
}

/** Without the markdown extension: the markdown as preformatted text. */
export function plainMarkdownHtml(markdown: string): string {
  return `<pre>${escapeHtml(markdown)}</pre>`;
}

// -- torchtrap run ---------------------------------------------------------------

export interface RunResult {
  summary: string;
  findings: number;
  json: unknown;
}

/** `torchtrap.runFile` / `torchtrap.showRunReport` return `{json, summary, findings}`. */
export function parseRunResult(value: unknown): RunResult {
  if (value && typeof value === 'object') {
    const v = value as { summary?: unknown; findings?: unknown; json?: unknown };
    if (typeof v.summary === 'string' && typeof v.findings === 'number') {
      return { summary: v.summary, findings: v.findings, json: v.json ?? null };
    }
  }
  throw new Error(`unexpected torchtrap run result: ${JSON.stringify(value)?.slice(0, 200)}`);
}

export function runArguments(uri: string, id: string): [{ uri: string; id: string }] {
  return [{ uri, id }];
}

/** A `torchtrap/runOutput` notification's text, if it belongs to run `id`. */
export function runOutputText(params: unknown, id: string): string | undefined {
  if (params && typeof params === 'object') {
    const p = params as { id?: unknown; text?: unknown };
    if (p.id === id && typeof p.text === 'string') {
      return p.text;
    }
  }
  return undefined;
}
