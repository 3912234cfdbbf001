import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  fixAllMessage,
  labelTableCells,
  orderRules,
  parseProbeResult,
  parseRuleDoc,
  parseRuleList,
  PercentTracker,
  plainMarkdownHtml,
  probeArguments,
  restOffer,
  probeFailure,
  reportPage,
  ruleFileName,
  parseRunResult,
  runArguments,
  runOutputText,
} from '../../src/report';
import { describeState, shortPath } from '../../src/status';
import { classifyStderrLine, traceEnabled } from '../../src/logs';

describe('probe result', () => {
  it('takes {json, markdown}', () => {
    assert.deepEqual(parseProbeResult({ json: { a: 1 }, markdown: '# r' }), { json: { a: 1 }, markdown: '# r' });
    assert.throws(() => parseProbeResult(null), /unexpected/);
    assert.throws(() => parseProbeResult({ json: {} }), /unexpected/);
  });
  it('passes the timeout', () => {
    assert.deepEqual(probeArguments(30), [{ timeout: 30 }]);
    assert.deepEqual(probeArguments(240, true), [{ timeout: 240, rest: true }]);
  });
  it('progress increments', () => {
    const t = new PercentTracker();
    assert.equal(t.increment(undefined), undefined);
    assert.equal(t.increment(10), 10);
    assert.equal(t.increment(10), undefined);
    assert.equal(t.increment(35), 25);
    assert.equal(t.increment(150), 65);
  });
});

describe('rules', () => {
  const rules = parseRuleList([
    { code: 'TT201', name: 'log-of-softmax', summary: 's' },
    { code: 'TT101', name: 'stored-rng', summary: 's' },
    { code: 'TT202', name: 'discarded-clamp' },
    'junk',
  ]);
  it('parses the list', () => {
    assert.equal(rules.length, 3);
    assert.equal(rules[2]?.summary, '');
  });
  it('codes under the cursor first, then by code', () => {
    assert.deepEqual(
      orderRules(rules, ['TT202']).map((r) => r.code),
      ['TT202', 'TT101', 'TT201'],
    );
  });
  it('rule docs', () => {
    assert.deepEqual(parseRuleDoc({ code: 'TT101', name: 'x', markdown: '# TT101' }), { code: 'TT101', markdown: '# TT101' });
    assert.throws(() => parseRuleDoc([]), /unexpected/);
    assert.equal(ruleFileName('TT101'), 'TT101.md');
    assert.equal(ruleFileName('../x'), '___x.md');
  });
});

describe('status item', () => {
  it('running shows the interpreter', () => {
    const v = describeState({
      phase: 'running',
      interpreter: { executable: '/usr/bin/python3', version: '3.11.2', source: 'path' },
      strategy: 'useBundled',
    });
    assert.equal(v.severity, 'information');
    assert.match(v.text, /TorchTrap/);
    assert.equal(v.detail, 'Python 3.11.2 (/usr/bin/python3) · bundled');
    assert.match(v.tooltip, /\/usr\/bin\/python3 \(from PATH\)/);
  });
  it('keeps the pop-up line short; the tooltip has it all', () => {
    const exe = '/root/.cache/torchtrap-e2e/py-torch-2.13.0/bin/python';
    const message = `TorchTrap could not run ${exe} (from torchtrap.interpreter): no such file. Set torchtrap.interpreter to a Python 3.10 or newer.`;
    const v = describeState({ phase: 'error', message, interpreter: { executable: exe, source: 'setting' }, strategy: 'useBundled' });
    assert.ok(v.detail.length <= 90, v.detail);
    assert.match(v.detail, /Python \(py-torch-2\.13\.0\) · bundled$/);
    assert.ok(v.tooltip.includes(message) && v.tooltip.includes(exe));
  });
  it('shortens paths: the venv folder, else the end', () => {
    assert.equal(shortPath('/usr/bin/python3'), '/usr/bin/python3');
    assert.equal(shortPath('/home/me/projects/vision/.venv/bin/python'), '.venv');
    assert.equal(shortPath('C:\\Users\\me\\envs\\torch\\Scripts\\python.exe'), 'torch');
    assert.equal(shortPath('/opt/very/long/install/prefix/python3.11'), '…/prefix/python3.11');
    assert.equal(shortPath(`/x/${'y'.repeat(50)}`), `…/${'y'.repeat(50)}`);
  });
});

describe('server stderr levels', () => {
  it('classifies Python logging lines', () => {
    assert.equal(classifyStderrLine('ERROR:torchtrap.lsp:lint failed'), 'error');
    assert.equal(classifyStderrLine('Traceback (most recent call last):'), 'error');
    assert.equal(classifyStderrLine('ValueError: bad'), 'error');
    assert.equal(classifyStderrLine('2026-01-01 12:00:00 WARNING torchtrap: slow'), 'warn');
    assert.equal(classifyStderrLine('DEBUG:pygls:sending'), 'debug');
    assert.equal(classifyStderrLine('INFO:torchtrap.lsp:ready'), 'info');
    assert.equal(classifyStderrLine('Starting TorchTrap server'), 'info');
  });
  it('trace setting', () => {
    assert.equal(traceEnabled('off'), false);
    assert.equal(traceEnabled('messages'), true);
    assert.equal(traceEnabled('verbose'), true);
    assert.equal(traceEnabled(undefined), false);
  });
});

describe('fix all message', () => {
  it('counts the fixes and the skipped unsafe ones', () => {
    assert.equal(fixAllMessage({ fixed: 3, skippedUnsafe: 1 }), 'Fixed 3 findings (1 unsafe fix skipped)');
    assert.equal(fixAllMessage({ fixed: 1, skippedUnsafe: 0 }), 'Fixed 1 finding');
    assert.equal(fixAllMessage({ fixed: 0, skippedUnsafe: 2 }), 'Nothing to fix (2 unsafe fixes skipped)');
  });
  it('reads older servers and no result at all', () => {
    assert.equal(fixAllMessage({ applied: true, fixes: 2 }), 'Fixed 2 findings');
    assert.equal(fixAllMessage({ applied: false, fixes: 0 }), 'Nothing to fix');
    assert.equal(fixAllMessage({ applied: false, fixes: 4 }), 'Nothing to fix');
    assert.equal(fixAllMessage(null), 'Nothing to fix');
    assert.equal(fixAllMessage({ fixed: -1, fixes: 'x' }), 'Nothing to fix');
  });
  it("prefers the server's own message", () => {
    assert.equal(fixAllMessage({ fixed: 1, message: ' Fixed 1 finding in 2 cells ' }), 'Fixed 1 finding in 2 cells');
  });
});

describe('probe failure', () => {
  it('turns missing torch into a choice, without CLI flags', () => {
    const f = probeFailure(
      'torch is not installed in /usr/bin/python3 (Python 3.11.2).\nInstall it with: /usr/bin/python3 -m pip install torch\n' +
        'or point the probe at the interpreter that has it: --python PATH',
    );
    assert.equal(f.needsTorch, true);
    assert.ok(!f.message.includes('--python'));
    assert.match(f.message, /^torch is not installed in \/usr\/bin\/python3 \(Python 3\.11\.2\)\. Install it with: /);
  });
  it('leaves other failures alone', () => {
    assert.deepEqual(probeFailure('the timeout must be positive, got 0'), { needsTorch: false, message: 'the timeout must be positive, got 0' });
  });
});

describe('report page', () => {
  const table =
    '<table>\n<thead>\n<tr>\n<th>Experiment</th>\n<th style="text-align:right">Time</th>\n</tr>\n</thead>\n' +
    '<tbody>\n<tr>\n<td><code>worker-rng</code></td>\n<td style="text-align:right">1.9 s</td>\n</tr>\n</tbody>\n</table>';
  it('labels each cell with its column header (cards in a narrow panel)', () => {
    const out = labelTableCells(table);
    assert.match(out, /<td data-label="Experiment"><code>worker-rng<\/code><\/td>/);
    assert.match(out, /<td style="text-align:right" data-label="Time">1\.9 s<\/td>/);
  });
  it("reads the markdown extension's tables (attributes on every tag)", () => {
    const html =
      '<table data-line="3" class="code-line" dir="auto">\n<thead data-line="3" class="code-line" dir="auto">\n<tr data-line="3" class="code-line" dir="auto">\n' +
      '<th>Rule</th>\n<th>Verdict</th>\n</tr>\n</thead>\n<tbody data-line="5" class="code-line" dir="auto">\n<tr data-line="5" class="code-line" dir="auto">\n' +
      '<td>TT101</td>\n<td><strong>confirmed</strong></td>\n</tr>\n</tbody>\n</table>';
    const out = labelTableCells(html);
    assert.match(out, /<td data-label="Rule">TT101<\/td>/);
    assert.match(out, /<td data-label="Verdict"><strong>confirmed<\/strong><\/td>/);
  });
  it('is a page without scripts, with a narrow layout', () => {
    const page = reportPage(table, 'A <b>', 'n0nce', 'vscode-resource:');
    assert.match(page, /default-src 'none'/);
    assert.ok(!/<script/i.test(page));
    assert.match(page, /@media \(max-width: 560px\)/);
    assert.match(page, /<title>A &lt;b&gt;<\/title>/);
    assert.match(page, /data-label="Time"/);
  });
  it('escapes plain markdown', () => {
    assert.equal(plainMarkdownHtml('<x> & y'), '<pre>&lt;x&gt; &amp; y</pre>');
  });
});

describe('run with checks', () => {
  it('takes {json, summary, findings}', () => {
    assert.deepEqual(parseRunResult({ json: { a: 1 }, summary: 'torchtrap run: 1 finding', findings: 1 }), {
      json: { a: 1 },
      summary: 'torchtrap run: 1 finding',
      findings: 1,
    });
    assert.throws(() => parseRunResult({ summary: 'x' }), /unexpected/);
    assert.throws(() => parseRunResult(undefined), /unexpected/);
  });
  it('sends the file and the run id', () => {
    assert.deepEqual(runArguments('file:///a.py', 'r1'), [{ uri: 'file:///a.py', id: 'r1' }]);
  });
  it('shows only its own run output', () => {
    assert.equal(runOutputText({ id: 'r1', stream: 'stdout', text: 'loss 1\n' }, 'r1'), 'loss 1\n');
    assert.equal(runOutputText({ id: 'r0', stream: 'stdout', text: 'old' }, 'r1'), undefined);
    assert.equal(runOutputText(null, 'r1'), undefined);
  });
});

describe('probe: the rest after the time limit (issue 35 item 5)', () => {
  it('reads what was left', () => {
    assert.deepEqual(parseProbeResult({ json: {}, markdown: '# r', unfinished: ['worker-rng', 3] }).unfinished, ['worker-rng']);
    assert.equal(parseProbeResult({ json: {}, markdown: '# r', unfinished: [] }).unfinished, undefined);
  });
  it('offers to run the rest, with twice the time', () => {
    assert.equal(restOffer([], 120), undefined);
    assert.deepEqual(restOffer(['worker-rng'], 120), {
      message: "TorchTrap: the probe's 120 s limit ran out: 1 experiment left (worker-rng). Run the rest?",
      timeout: 240,
    });
    assert.match(restOffer(['a', 'b', 'c', 'd', 'e'], 60)!.message, /5 experiments left \(a, b, c, \+2\)/);
  });
});
