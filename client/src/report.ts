// Pure logic for the probe and rule reports the server returns.

export interface ProbeResult {
  markdown: string;
  json: unknown;
  /** Experiments the time limit left no time for, or cut short (older servers: absent). */
  unfinished?: string[];
}

/** `torchtrap.runProbe` returns `{json, markdown}`; anything else is a server error. */
export function parseProbeResult(value: unknown): ProbeResult {
  if (value && typeof value === 'object') {
    const v = value as { markdown?: unknown; json?: unknown };
    if (typeof v.markdown === 'string') {
      const rest = (value as { unfinished?: unknown }).unfinished;
      const unfinished = Array.isArray(rest) ? rest.filter((r): r is string => typeof r === 'string') : [];
      return unfinished.length > 0 ? { markdown: v.markdown, json: v.json ?? null, unfinished } : { markdown: v.markdown, json: v.json ?? null };
    }
  }
  throw new Error(`unexpected torchtrap.runProbe result: ${JSON.stringify(value)?.slice(0, 200)}`);
}

export function probeArguments(timeoutSeconds: number, rest = false): [{ timeout: number; rest?: true }] {
  return [rest ? { timeout: timeoutSeconds, rest: true } : { timeout: timeoutSeconds }];
}

/**
 * When the probe's time limit ran out: what to tell the user, and the limit "Run the Rest"
 * uses (the same, or twice it when an experiment was cut short: it needed more).
 */
export function restOffer(unfinished: readonly string[], timeoutSeconds: number): { message: string; timeout: number } | undefined {
  if (unfinished.length === 0) {
    return undefined;
  }
  const n = unfinished.length;
  const names = unfinished.slice(0, 3).join(', ') + (n > 3 ? `, +${n - 3}` : '');
  return {
    message: `TorchTrap: the probe's ${timeoutSeconds} s limit ran out: ${n} ${n === 1 ? 'experiment' : 'experiments'} left (${names}). Run the rest?`,
    timeout: timeoutSeconds * 2,
  };
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
details.raw { margin: 4px 0 12px; }
details.raw > summary { cursor: pointer; color: var(--vscode-textLink-foreground); }
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

/**
 * The probe report's raw JSON blocks, collapsed: each becomes a `<details>` the reader
 * opens when they want the numbers (the verdicts and summaries stay in view).
 */
export function collapseJsonBlocks(html: string): string {
  return html.replace(
    /<pre\b[^>]*>\s*<code\b[^>]*\blanguage-json\b[^>]*>[\s\S]*?<\/code>\s*<\/pre>/g,
    (block: string) => `<details class="raw"><summary>Raw data (JSON)</summary>${block}</details>`,
  );
}

/** rule code -> verdict (`confirmed`, `not-reproduced`, ...) from the probe's JSON. */
export function ruleVerdicts(json: unknown): Record<string, string> {
  const rules = json && typeof json === 'object' ? (json as { rules?: unknown }).rules : undefined;
  const out: Record<string, string> = {};
  if (rules && typeof rules === 'object') {
    for (const [code, entry] of Object.entries(rules as Record<string, unknown>)) {
      const verdict = entry && typeof entry === 'object' ? (entry as { verdict?: unknown }).verdict : undefined;
      if (typeof verdict === 'string') {
        out[code] = verdict;
      }
    }
  }
  return out;
}

export interface FileFinding {
  code: string;
  /** 1-based */
  line: number;
  message: string;
}

const ON_THIS_MACHINE: Record<string, string> = {
  confirmed: '**confirmed on this machine**',
  'not-reproduced': 'not reproduced on this machine',
};

/**
 * The open file's findings whose rule the probe answered, as a report section: each
 * "Line 12, TT101: … — **confirmed on this machine**". Empty when none matches.
 */
export function fileFindingsSection(fileName: string, findings: readonly FileFinding[], verdicts: Readonly<Record<string, string>>): string {
  const lines = [...findings]
    .sort((a, b) => a.line - b.line || a.code.localeCompare(b.code))
    .filter((f) => ON_THIS_MACHINE[verdicts[f.code] ?? ''] !== undefined)
    .map((f) => {
      const message = f.message.replace(/\s*\(confirmed on this machine\)$/, '').replace(/\s+/g, ' ').trim();
      return `- Line ${f.line}, ${f.code}: ${message} — ${ON_THIS_MACHINE[verdicts[f.code] ?? '']}`;
    });
  if (lines.length === 0) {
    return '';
  }
  return [`## In \`${fileName.replace(/`/g, '')}\``, '', ...lines, ''].join('\n');
}

/** Put `section` right below the report's title line. */
export function insertAfterTitle(markdown: string, section: string): string {
  if (section === '') {
    return markdown;
  }
  const lines = markdown.split('\n');
  const title = lines.findIndex((l) => l.startsWith('# '));
  if (title === -1) {
    return `${section}\n${markdown}`;
  }
  lines.splice(title + 1, 0, '', section.trimEnd());
  return lines.join('\n');
}

/** Skipped unsafe fixes as the server lists them (`torchtrap.unsafeFixes`). */
export interface UnsafeFix {
  uri: string;
  version: number | null;
  code: string;
  /** 0-based */
  line: number;
  fix: number;
  title: string;
  message: string;
}

export function parseUnsafeFixes(value: unknown): UnsafeFix[] {
  if (!Array.isArray(value)) {
    throw new Error(`unexpected torchtrap.unsafeFixes result: ${JSON.stringify(value)?.slice(0, 200)}`);
  }
  return value
    .filter((v): v is Record<string, unknown> => !!v && typeof v === 'object')
    .filter((v) => typeof v.uri === 'string' && typeof v.code === 'string' && typeof v.line === 'number')
    .map((v) => ({
      uri: String(v.uri),
      version: typeof v.version === 'number' ? v.version : null,
      code: String(v.code),
      line: Number(v.line),
      fix: typeof v.fix === 'number' ? v.fix : 0,
      title: typeof v.title === 'string' ? v.title : String(v.code),
      message: typeof v.message === 'string' ? v.message : '',
    }));
}

/**
 * The `torchtrap.applyFix` arguments of one skipped fix, asking for its edit unapplied
 * (`preview`): the review shows it as a diff, and applies it only on the user's Apply.
 */
export function applyFixArguments(f: UnsafeFix): [{ uri: string; version: number | null; code: string; line: number; fix: number; preview: true }] {
  return [{ uri: f.uri, version: f.version, code: f.code, line: f.line, fix: f.fix, preview: true }];
}

/** The modal beside a reviewed fix's diff: its full title, the finding, and Apply. */
export function unsafeFixConfirmation(f: UnsafeFix): { message: string; detail: string; button: string } {
  return {
    message: f.title,
    detail: `${f.code} on line ${f.line + 1}: ${f.message}\n\nThe diff beside shows the change; nothing is applied until you choose Apply.`,
    button: 'Apply',
  };
}

/** `text` with non-overlapping edits (offsets into `text`) applied. */
export function applyTextEdits(text: string, edits: readonly { start: number; end: number; newText: string }[]): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start || b.end - a.end)) {
    out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  }
  return out;
}

/**
 * One skipped fix as a quick pick row, with nothing cut off that matters: a row shows one line
 * of each part, so the title is split: what the fix does as the label ("TorchTrap (TT207): "
 * dropped: the rule code is in the description), why it is unsafe as the detail, with the
 * finding's message after it. The full title comes again in the diff before applying.
 */
export function unsafeFixItem(f: UnsafeFix): { label: string; description: string; detail: string } {
  const title = f.title.replace(/^TorchTrap \(TT\d{3}\): /, '');
  const marked = /^(.*?) \(unsafe: (.*)\)$/s.exec(title);
  const action = marked ? marked[1]! : title;
  const why = marked ? `Unsafe: ${marked[2]!}` : 'Unsafe';
  return {
    label: action,
    description: `${f.code} · line ${f.line + 1}`,
    detail: f.message ? `${why}. ${f.message}` : why,
  };
}

/** The number of skipped unsafe fixes in a `torchtrap.fixAll` result. */
export function skippedUnsafe(result: unknown): number {
  const r = result && typeof result === 'object' ? (result as Record<string, unknown>) : {};
  return count(r.skippedUnsafe) ?? count(r.skipped_unsafe) ?? count(r.skipped) ?? 0;
}

/** What Check Workspace tells the user. */
export function checkWorkspaceMessage(result: unknown): string {
  const r = result && typeof result === 'object' ? (result as Record<string, unknown>) : {};
  const files = count(r.files) ?? 0;
  const findings = count(r.findings) ?? 0;
  const withFindings = count(r.filesWithFindings) ?? 0;
  const truncated = count(r.truncated) ?? 0;
  const head = `Checked ${plural(files, 'file', 'files')}: ${findings === 0 ? 'no findings' : `${plural(findings, 'finding', 'findings')} in ${plural(withFindings, 'file', 'files')}`}`;
  return truncated > 0 ? `${head} (${truncated} more files not checked)` : head;
}

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
${collapseJsonBlocks(labelTableCells(bodyHtml))}
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
