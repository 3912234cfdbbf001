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
