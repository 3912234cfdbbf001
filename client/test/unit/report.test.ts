import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orderRules, parseProbeResult, parseRuleDoc, parseRuleList, PercentTracker, probeArguments, ruleFileName } from '../../src/report';
import { describeState } from '../../src/status';
import { classifyStderrLine, traceEnabled } from '../../src/logs';

describe('probe result', () => {
  it('takes {json, markdown}', () => {
    assert.deepEqual(parseProbeResult({ json: { a: 1 }, markdown: '# r' }), { json: { a: 1 }, markdown: '# r' });
    assert.throws(() => parseProbeResult(null), /unexpected/);
    assert.throws(() => parseProbeResult({ json: {} }), /unexpected/);
  });
  it('passes the timeout', () => {
    assert.deepEqual(probeArguments(30), [{ timeout: 30 }]);
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
    assert.match(v.detail, /Python 3\.11\.2 · \/usr\/bin\/python3 \(PATH\)/);
    assert.match(v.detail, /bundled/);
  });
  it('error is an error and carries the message', () => {
    const v = describeState({ phase: 'error', message: 'needs Python 3.10' });
    assert.equal(v.severity, 'error');
    assert.match(v.detail, /needs Python 3\.10/);
  });
  it('starting is busy; restricted mode is shown', () => {
    const v = describeState({ phase: 'starting', restricted: true });
    assert.equal(v.busy, true);
    assert.match(v.detail, /restricted/);
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
