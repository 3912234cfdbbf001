// The probe report's client-side parts (collapsed JSON, the open file's findings) and the
// messages of Fix All's unsafe-fix review and Check Workspace.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyFixArguments,
  checkWorkspaceMessage,
  collapseJsonBlocks,
  fileFindingsSection,
  insertAfterTitle,
  parseUnsafeFixes,
  reportPage,
  ruleVerdicts,
  skippedUnsafe,
  applyTextEdits,
  unsafeFixConfirmation,
  unsafeFixItem,
} from '../../src/report';

describe('probe report: raw JSON collapsed', () => {
  it('wraps each JSON block, and nothing else, in a closed <details>', () => {
    const html =
      '<p>Ran in 2.0 s</p><pre><code class="language-json">{"a": 1}</code></pre>' +
      '<pre data-line="3"><code class="hljs language-json">{"b": [1]}</code></pre><pre><code class="language-python">x = 1</code></pre>';
    const out = collapseJsonBlocks(html);
    assert.equal(out.match(/<details class="raw"><summary>Raw data \(JSON\)<\/summary><pre/g)?.length, 2);
    assert.ok(!/<details[^>]*\bopen\b/.test(out), 'collapsed by default');
    assert.ok(out.includes('<pre><code class="language-python">x = 1</code></pre>') && !/<details[^>]*>(?:(?!<\/details>)[\s\S])*language-python/.test(out));
    assert.ok(out.startsWith('<p>Ran in 2.0 s</p>'));
    // The page does it (no scripts needed: <details> opens by itself).
    assert.ok(reportPage(html, 't', 'n', 'c').includes('<details class="raw">'));
  });
});

describe("probe report: the open file's findings", () => {
  const json = { rules: { TT101: { verdict: 'confirmed' }, TT102: { verdict: 'not-reproduced' }, TT103: { verdict: 'skipped' } } };
  it('reads one verdict per rule', () => {
    assert.deepEqual(ruleVerdicts(json), { TT101: 'confirmed', TT102: 'not-reproduced', TT103: 'skipped' });
    assert.deepEqual(ruleVerdicts({ rules: [1] }), {});
    assert.deepEqual(ruleVerdicts(null), {});
  });
  it('marks each matching finding with its own rule verdict, and leaves the rest out', () => {
    const section = fileFindingsSection(
      'train.py',
      [
        { code: 'TT102', line: 20, message: 'np.random in a Dataset' },
        { code: 'TT101', line: 12, message: 'workers draw the same numbers (confirmed on this machine)' },
        { code: 'TT103', line: 30, message: 'a CUDA tensor' }, // not tested: nothing to say
        { code: 'TT201', line: 40, message: 'log of softmax' }, // not a probe rule
      ],
      ruleVerdicts(json),
    );
    assert.equal(
      section,
      [
        '## In `train.py`',
        '',
        '- Line 12, TT101: workers draw the same numbers — **confirmed on this machine**',
        '- Line 20, TT102: np.random in a Dataset — not reproduced on this machine',
        '',
      ].join('\n'),
    );
    assert.equal(fileFindingsSection('a.py', [{ code: 'TT201', line: 1, message: 'x' }], ruleVerdicts(json)), '');
  });
  it('goes right below the title', () => {
    assert.equal(insertAfterTitle('# TorchTrap probe\n\n- **TT101**: confirmed here\n', '## In `a.py`\n\n- x\n'), '# TorchTrap probe\n\n## In `a.py`\n\n- x\n\n- **TT101**: confirmed here\n');
    assert.equal(insertAfterTitle('# T\n', ''), '# T\n');
  });
});

describe('unsafe fixes review', () => {
  it('reads the server list and gives applyFix its arguments', () => {
    const fixes = parseUnsafeFixes([
      { uri: 'file:///a.py', version: 3, code: 'TT202', line: 4, fix: 0, title: 'TorchTrap (TT202): Use masked_fill_', message: 'discarded' },
      { uri: 'file:///a.py', code: 'TT203' }, // no line: dropped
      null,
    ]);
    assert.equal(fixes.length, 1);
    // preview: the edit comes back unapplied, shown as a diff before the user's Apply.
    assert.deepEqual(applyFixArguments(fixes[0]!), [{ uri: 'file:///a.py', version: 3, code: 'TT202', line: 4, fix: 0, preview: true }]);
    assert.throws(() => parseUnsafeFixes({}), /unexpected/);
  });
  it('shows each fix whole: what it does as the label, why it is unsafe as the detail (issue 35 item 11)', () => {
    const title =
      'TorchTrap (TT207): Call `model.eval()` before it, and `model.train(was_training)` after (unsafe: code after it may rely on training mode)';
    const [fix] = parseUnsafeFixes([
      { uri: 'file:///a.py', version: 1, code: 'TT207', line: 11, fix: 1, title, message: '`model` is run in training mode under `no_grad`' },
    ]);
    const item = unsafeFixItem(fix!);
    assert.equal(item.label, 'Call `model.eval()` before it, and `model.train(was_training)` after');
    assert.equal(item.description, 'TT207 · line 12');
    assert.equal(item.detail, 'Unsafe: code after it may rely on training mode. `model` is run in training mode under `no_grad`');
    // Nothing of the title is lost between the label and the detail.
    assert.ok(title.endsWith(`${item.label} (unsafe: code after it may rely on training mode)`));
    // Before applying: the whole title in a modal (it wraps), then the diff.
    const ask = unsafeFixConfirmation(fix!);
    assert.equal(ask.message, title);
    assert.match(ask.detail, /^TT207 on line 12: `model` is run in training mode under `no_grad`\n\nThe diff beside shows the change/);
    assert.equal(ask.button, 'Apply');
    // The diff's right side: the text with the fix's edits, applied back to front.
    assert.equal(
      applyTextEdits('a.masked_fill(m, 0)\nb = 1\n', [
        { start: 13, end: 13, newText: '_' },
        { start: 20, end: 21, newText: 'c' },
      ]),
      'a.masked_fill_(m, 0)\nc = 1\n',
    );
    // A title without the unsafe mark stays whole.
    assert.equal(unsafeFixItem({ ...fix!, title: 'TorchTrap (TT207): Do it', message: '' }).label, 'Do it');
  });
  it('knows when Fix All skipped some', () => {
    assert.equal(skippedUnsafe({ applied: true, fixes: 1, skipped: 2, message: 'Fixed 1 finding (2 unsafe fixes skipped)' }), 2);
    assert.equal(skippedUnsafe({ fixes: 1, skipped: 0 }), 0);
    assert.equal(skippedUnsafe(undefined), 0);
  });
});

describe('check workspace message', () => {
  it('counts files and findings', () => {
    assert.equal(checkWorkspaceMessage({ files: 12, filesWithFindings: 3, findings: 7, truncated: 0 }), 'Checked 12 files: 7 findings in 3 files');
    assert.equal(checkWorkspaceMessage({ files: 1, filesWithFindings: 1, findings: 1 }), 'Checked 1 file: 1 finding in 1 file');
    assert.equal(checkWorkspaceMessage({ files: 4, findings: 0 }), 'Checked 4 files: no findings');
    assert.equal(checkWorkspaceMessage({ files: 2000, filesWithFindings: 1, findings: 2, truncated: 5 }), 'Checked 2,000 files: 2 findings in 1 file (5 more files not checked)'.replace('2,000', '2000'));
  });
});
