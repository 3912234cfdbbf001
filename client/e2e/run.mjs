// @ts-check
// End-to-end test of the TorchTrap extension in real VS Code: code-server (VS Code 1.139)
// driven by Playwright in Debian's headless Chromium.
//
//   eval "$(bash scripts/client-e2e-setup.sh)"    # Node 24, code-server, chromium, playwright, Python
//   E2E_VSIX=torchtrap-linux-x64-0.1.0.vsix node client/e2e/run.mjs
//
// Installs the .vsix, opens a workspace with the examples/ files and a notebook, with
// torchtrap.interpreter set to a Python that has torch but NO torchtrap (so only the bundled
// server can lint), and checks, each flow as a user does it:
//   diagnostics     TT101 and TT201 in the Problems panel on the lines the CLI reports;
//   run-file        "TorchTrap: Run File with Checks" on the stored-RNG example: the
//                   run's TT101 is folded into the static TT101 on the RNG line the CLI reports (one
//                   row, saying "confirmed when run"), the script's output is in the
//                   "TorchTrap Run" channel; an edit clears the run's diagnostic;
//   quickfix        Ctrl+. on a TT202 line applies the fix: the file becomes the expected text; the
//                   Ignore action is titled "TorchTrap (TT202): ..."; with a DistributedSampler
//                   TT211's quick fix divides by len(loader.sampler);
//   fix-all         "TorchTrap: Fix All" from the palette gives the CLI's `--fix` text and says
//                   "Fixed N finding(s)", then "Nothing to fix"; TT103's num_workers=0 fix is
//                   titled unsafe and Fix All leaves it ("1 unsafe fix skipped");
//   notebook        a Jupyter notebook's cells get squiggles on cell-relative lines, each row
//                   naming its cell; Ctrl+. fixes one, "TorchTrap: Fix All" (notebook focused)
//                   fixes the rest: saved cells = CLI;
//   notebook-magics a notebook with IPython syntax (`!pip install \` continued, a `%%bash` cell, a
//                   cell whose first line is indented) gets the CLI's findings and no more: TT201
//                   at the dedented cell's own column, no TT202 on a cell's last expression (Jupyter
//                   displays it), TT202 where a trailing `;` hides it; the CLI reports no TT000;
//   status-explain  the language status pop-up shows the interpreter and fits the window;
//                   "TorchTrap: Explain Rule…" opens a rule rendered;
//   probe           "TorchTrap: Probe This Machine": its progress names the step; cancel works;
//   probe-interpreter with an interpreter without torch the probe offers Select Interpreter
//                   (not CLI flags); the picker lists the workspace .venv (the torch venv), saves
//                   it for the user, the server restarts on it and the probe re-runs: TT101
//                   confirmed, "TT101 confirmed, TT102 not reproduced" per rule, raw JSON
//                   collapsed, the open file's TT101 "confirmed on this machine", no overflow;
//   workspace-diagnostics a never-opened file's TT106: absent in openFilesOnly, listed by
//                   Check Workspace (with counts) and in diagnosticMode "workspace", following the
//                   file on disk, gone again in openFilesOnly; in workspace mode num_workers=0
//                   typed in train.py clears the TT101 of the closed data/jitter.py, the revert
//                   brings it back; no .torchtrap_cache/ in the folder;
//   unsafe-fix-review Fix All says "1 unsafe fix skipped", Review Unsafe Fixes… lists it; picked,
//                   its diff opens and a modal shows its full title, Apply applies it: the
//                   CLI's --fix --unsafe-fixes text;
//   editor-round-3  issue 35: TT201's message in an evaluation, keystroke to squiggle, carried
//                   findings on their moved lines during a syntax error, the interpreter picker,
//                   the extension's page, the probe's "Run the Rest";
//   settings-ui     torchtrap.severity edited in the Settings UI (key and value dropdowns):
//                   settings.json gets {"TT201": "error"} and TT201 shows as an error;
//   restart         "TorchTrap: Restart Server" brings a new server that lints again;
//   settings-live   "torchtrap.ignore" changed in settings.json applies without a reload;
//   multi-root      a two-folder workspace: each folder's pyproject.toml applies to its files, and
//                   `editor.codeActionsOnSave: {"source.fixAll.torchtrap": "explicit"}` in one
//                   folder fixes the file on save (the CLI's `--fix` text);
//   untrusted       a second code-server with workspace trust on: the untrusted workspace's own
//                   torchtrap.interpreter (a script that would leave a mark) is never run, and
//                   diagnostics still come from the user's interpreter.
// Expected lines and texts come from `python -m torchtrap check` run on the same files (the CLI,
// not the language server). Screenshots of every test, the TorchTrap log (client + server
// stderr) and, on failure, code-server's logs go to $E2E_ARTIFACTS (default .e2e-artifacts/).
// Prints `e2e: N passed, M failed` and exits non-zero on any failure. E2E_ONLY=name,name runs only
// those flows (the others are reported as skipped, never as passed).

import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.resolve(process.env.E2E_ARTIFACTS || path.join(REPO, '.e2e-artifacts'));
const TOTAL_BUDGET_MS = Number(process.env.E2E_BUDGET_S || 900) * 1000;
const PROBE_WAIT_MS = Number(process.env.E2E_PROBE_WAIT_S || 240) * 1000;
const EXAMPLES = {
  tt101: 'tt101_stored_rng.py',
  tt201: 'tt201_log_of_softmax.py',
  tt202: 'tt202_discarded_clamp.py',
};
// One finding with a safe fix (TT211's len(loader.dataset)). Not TT103's example: its
// num_workers=0 fix is unsafe (a worker count is never changed by --fix or Fix All).
const FIX_ALL_FILE = 'tt211_len_loader_accuracy.py';
// TT103's example: both fixes unsafe, num_workers=0 among them (issue 35 item 2).
const NO_WORKERS_FILE = 'tt103_cuda_tensor_in_dataset.py';

const t0 = Date.now();
const log = (/** @type {string} */ msg) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

function need(/** @type {string} */ name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set; run: eval "$(bash scripts/client-e2e-setup.sh)"`);
  }
  return v;
}

const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Poll `fn` until it returns a truthy value.
 * @template T
 * @param {() => Promise<T> | T} fn
 * @param {number} timeoutMs
 * @param {string | (() => string)} what
 * @returns {Promise<T>}
 */
async function waitFor(fn, timeoutMs, what, intervalMs = 250) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) {
        return v;
      }
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) {
      const desc = typeof what === 'function' ? what() : what;
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${desc}${last ? ` (${String(last)})` : ''}`);
    }
    await sleep(intervalMs);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

// ------------------------------------------------------------------ expectations (CLI)

/**
 * @typedef {{code: string, line: number, column: number, endLine: number, endColumn: number,
 *   message: string, fixes: {title: string, applicability: string, edits: any[]}[], cell?: number}} Finding
 */

/** Findings of the CLI (bundled torchtrap, run by the e2e interpreter) for each file. */
function cliFindings(/** @type {string} */ python, /** @type {string} */ libs, /** @type {string[]} */ files) {
  let out;
  try {
    out = execFileSync(python, ['-m', 'torchtrap', 'check', '--format', 'json', '--exit-zero', ...files], {
      env: { ...process.env, PYTHONPATH: libs, PYTHONSAFEPATH: '1' },
      cwd: os.tmpdir(),
      encoding: 'utf8',
    });
  } catch (err) {
    // exit code 1 = findings, with --exit-zero unknown to an older CLI
    out = /** @type {{stdout?: string}} */ (err).stdout ?? '';
    if (!out) {
      throw err;
    }
  }
  const doc = JSON.parse(out);
  /** @type {Record<string, Finding[]>} */
  const byFile = {};
  for (const f of doc.findings ?? []) {
    const key = path.basename(f.path);
    (byFile[key] ??= []).push({
      code: f.code,
      line: f.range.start.line,
      column: f.range.start.column,
      endLine: f.range.end.line,
      endColumn: f.range.end.column,
      message: f.message,
      fixes: f.fixes ?? [],
      cell: f.cell,
    });
  }
  return byFile;
}

/** Apply the CLI's edits (1-based lines, 0-based code-point columns) to a text. */
function applyEdits(/** @type {string} */ text, /** @type {any[]} */ edits) {
  const lines = text.split('\n');
  const lineStart = [];
  let acc = 0;
  for (const l of lines) {
    lineStart.push(acc);
    acc += Array.from(l).length + 1;
  }
  const cps = Array.from(text);
  const offset = (/** @type {{line: number, column: number}} */ p) => (lineStart[p.line - 1] ?? cps.length) + p.column;
  const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
  for (const e of sorted) {
    cps.splice(offset(e.range.start), offset(e.range.end) - offset(e.range.start), ...Array.from(e.new_text));
  }
  return cps.join('');
}

/** The text the CLI's `check --fix` (safe fixes only, unless `unsafe`) makes of `text`, as file `name`. */
function cliFixed(/** @type {string} */ python, /** @type {string} */ libs, /** @type {string} */ name, /** @type {string} */ text, unsafe = false) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'torchtrap-e2e-fix-'));
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  try {
    execFileSync(python, ['-m', 'torchtrap', 'check', '--fix', ...(unsafe ? ['--unsafe-fixes'] : []), '--exit-zero', file], {
      env: { ...process.env, PYTHONPATH: libs, PYTHONSAFEPATH: '1' },
      cwd: os.tmpdir(),
      stdio: 'ignore',
    });
  } catch {
    // exit code 1: findings left; the file is fixed all the same
  }
  const out = fs.readFileSync(file, 'utf8');
  fs.rmSync(dir, { recursive: true, force: true });
  return out;
}

/** The code cells' sources of a notebook file, each as one string. */
function codeCells(/** @type {string} */ ipynbText) {
  return JSON.parse(ipynbText)
    .cells.filter((/** @type {any} */ c) => c.cell_type === 'code')
    .map((/** @type {any} */ c) => (Array.isArray(c.source) ? c.source.join('') : String(c.source)));
}

// ------------------------------------------------------------------ VS Code UI helpers

/** @param {import('playwright-core').Page} page */
function ui(page) {
  const focusWorkbench = async () => {
    await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
  };

  /** Rows of the Problems panel as {file, code, line, col, text}. */
  const problems = async () =>
    page.evaluate(() => {
      const out = [];
      let file = '';
      for (const row of Array.from(document.querySelectorAll('.markers-panel .monaco-list-row'))) {
        const text = /** @type {HTMLElement} */ (row).innerText.replace(/\s+/g, ' ').trim();
        const pos = /\[Ln (\d+), Col (\d+)\]/.exec(text);
        if (!pos) {
          // "name.py" (+ the folder's name, glued on, in a multi-root workspace) + count
          file = /^(.+?\.(?:ipynb|pyi|py))/.exec(text)?.[1] ?? text.split(' ')[0] ?? '';
          continue;
        }
        const codes = text.match(/\bTT\d{3}\b/g) ?? [];
        const sourced = /torchtrap\s*\(\s*(TT\d{3})\s*\)/.exec(text);
        if (!sourced && codes.length === 0) {
          continue; // a related-information child row ("file[Ln 42, Col 14]: ...")
        }
        out.push({
          file,
          code: sourced ? sourced[1] : (codes[codes.length - 1] ?? ''),
          line: Number(pos[1]),
          col: Number(pos[2]),
          text,
        });
      }
      return out;
    });

  const openProblems = async () => {
    if (!(await page.locator('.markers-panel').first().isVisible().catch(() => false))) {
      await page.keyboard.press('Control+Shift+M');
      await page.locator('.markers-panel').first().waitFor({ state: 'visible', timeout: 15_000 });
    }
  };

  /** Quick Open a file by name and wait for its editor tab to be active. */
  const openFile = async (/** @type {string} */ name) => {
    const active = page.locator('.tabs-container .tab.active', { hasText: name }).first();
    await waitFor(
      async () => {
        await focusWorkbench();
        await page.keyboard.press('Control+P');
        const input = page.locator('.quick-input-widget input').first();
        await input.waitFor({ state: 'visible', timeout: 10_000 });
        await input.fill(name);
        const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
        await row.waitFor({ timeout: 10_000 });
        await row.click();
        try {
          await active.waitFor({ timeout: 5000 });
          return true;
        } catch (err) {
          await page.keyboard.press('Escape');
          throw err;
        }
      },
      45_000,
      `${name} to open`,
    );
    if (!name.endsWith('.ipynb')) {
      await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor({ timeout: 15_000 });
    }
  };

  /** Ctrl+G `line:col` (both 1-based). */
  const goTo = async (/** @type {number} */ line, /** @type {number} */ col) => {
    await page.keyboard.press('Control+G');
    const input = page.locator('.quick-input-widget input').first();
    await input.waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(`:${line}:${col}`);
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget').first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
  };

  /** Run a command by its palette title (retrying while the extension registers it). */
  const runCommand = async (/** @type {string} */ title) => {
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    await waitFor(
      async () => {
        await focusWorkbench();
        await page.keyboard.press('Control+Shift+P');
        const input = page.locator('.quick-input-widget input').first();
        await input.waitFor({ state: 'visible', timeout: 10_000 });
        await input.fill(`>${title}`);
        try {
          await row.waitFor({ timeout: 3000 });
          return true;
        } catch (err) {
          await page.keyboard.press('Escape');
          throw err;
        }
      },
      45_000,
      `"${title}" in the command palette`,
    );
    await page.keyboard.press('Enter');
  };

  /** The first notification toast whose text matches, once it shows; its text. */
  const toast = async (/** @type {RegExp} */ re, timeoutMs = 30_000) => {
    let seen = '';
    return waitFor(
      async () => {
        const texts = await page.locator('.notifications-toasts .notification-toast').allInnerTexts();
        seen = texts.join(' | ').replace(/\s+/g, ' ');
        return texts.map((t) => t.replace(/\s+/g, ' ')).find((t) => re.test(t));
      },
      timeoutMs,
      () => `a notification matching ${re} (shown: ${seen || 'none'})`,
      200,
    );
  };

  /** Close every notification toast (their close button shows on hover). */
  const clearToasts = async () => {
    for (let i = 0; i < 5; i++) {
      const toast = page.locator('.notifications-toasts .notification-toast').first();
      if (!(await toast.isVisible().catch(() => false))) return;
      await toast.hover({ timeout: 2000 }).catch(() => undefined);
      await toast.locator('.codicon-notifications-clear').first().click({ timeout: 2000 }).catch(() => undefined);
    }
  };

  /** Ctrl+. at the cursor (moved there by `place`) until the quick fix `title` shows; apply it. */
  const applyQuickFix = async (/** @type {string} */ title, /** @type {() => Promise<void>} */ place) => {
    const item = page.locator('.action-widget .monaco-list-row', { hasText: title }).first();
    await waitFor(
      async () => {
        if (await item.isVisible().catch(() => false)) return true;
        await page.keyboard.press('Escape');
        await place();
        await page.keyboard.press('Control+.');
        await item.waitFor({ state: 'visible', timeout: 4000 });
        return true;
      },
      45_000,
      `the quick fix "${title}" after Ctrl+.`,
      100,
    );
    return item;
  };

  /** Type `text` into the Problems panel's filter box ('' clears it). */
  const filterProblems = async (/** @type {string} */ text) => {
    const input = page.locator('.markers-panel-container .viewpane-filter input, .pane-header .viewpane-filter input, .viewpane-filter input').first();
    await input.waitFor({ state: 'visible', timeout: 10_000 });
    await input.fill(text);
    await sleep(500);
  };

  return { problems, openProblems, openFile, goTo, runCommand, focusWorkbench, toast, clearToasts, applyQuickFix, filterProblems };
}

// ------------------------------------------------------------------ workspaces

const NOTEBOOK = 'pitfalls.ipynb';
// Never opened before the workspace-diagnostics flow: its TT106 shows only in workspace mode.
const CLOSED_FILE = 'tt106_main_guard.py';
// A safe TT201 fix and a TT202 whose only fix is unsafe (its in-place twin).
const UNSAFE_FILE = 'unsafe_review.py';
const UNSAFE_TEXT = 'import torch\n\n\ndef masked_log_probs(logits, scores, mask):\n    scores.masked_fill(mask, 0)\n    return torch.log(torch.softmax(logits, dim=-1))\n';

// Issue 35's walkthrough: an evaluation function (model.eval(), no backward): TT201 names the
// metric, not a gradient.
const EVAL_FILE = 'eval_metric.py';
const EVAL_TEXT =
  'import torch\n\n\ndef validate(model, x, y):\n    model.eval()\n    probs = torch.softmax(model(x), dim=-1)\n' +
  '    nll = -torch.log(probs).gather(1, y[:, None]).mean()\n    return nll.item()\n';

// Issue 35 item 1: a closed data/jitter.py whose TT101 rests on train.py's num_workers=4.
const TRAIN_FILE = 'train.py';
const TRAIN_TEXT =
  'import torch\nfrom torch.utils.data import DataLoader\n\nfrom data.jitter import Jitter\n\n\ndef main():\n' +
  '    loader = DataLoader(Jitter(torch.randn(64, 3)), batch_size=8, num_workers=4)\n    for batch in loader:\n' +
  '        print(batch.mean())\n\n\nif __name__ == "__main__":\n    main()\n';
const JITTER_FILE = path.join('data', 'jitter.py');
const JITTER_TEXT =
  'import numpy as np\nfrom torch.utils.data import Dataset\n\n\nclass Jitter(Dataset):\n' +
  '    """Images with a little noise added on each read."""\n\n    def __init__(self, images):\n' +
  '        self.images = images\n        self.rng = np.random.default_rng(0)\n\n    def __len__(self):\n' +
  '        return len(self.images)\n\n    def __getitem__(self, index):\n' +
  '        return self.images[index] + self.rng.normal(scale=0.1)\n';
// Issue 35 item 4: TT211 with a DistributedSampler: the fix divides by len(loader.sampler).
const SAMPLER_FILE = 'tt211_sampler.py';
const SAMPLER_TEXT =
  'import torch\nfrom torch.utils.data import DataLoader\nfrom torch.utils.data.distributed import DistributedSampler\n\n\n' +
  'def evaluate(model, dataset):\n    loader = DataLoader(dataset, batch_size=64, sampler=DistributedSampler(dataset))\n' +
  '    correct = 0\n    with torch.no_grad():\n        for x, y in loader:\n' +
  '            correct += (model(x).argmax(1) == y).sum().item()\n    return correct / len(loader)\n';

/** A notebook with a markdown cell and three code cells: two safe TT201 fixes, one TT202. */
function notebookText() {
  const code = (/** @type {string[]} */ lines) => ({
    cell_type: 'code',
    execution_count: null,
    metadata: {},
    outputs: [],
    source: lines.map((l, i) => (i < lines.length - 1 ? `${l}\n` : l)),
  });
  const cells = [
    { cell_type: 'markdown', metadata: {}, source: ['# TorchTrap in a notebook'] },
    code(['import torch', 'import torch.nn.functional as F']),
    code(['logits = torch.randn(4, 10)', 'prob = F.softmax(logits, dim=-1)', 'prob.clamp(min=1e-4)', 'loss = torch.log(F.softmax(logits, dim=-1)).mean()']),
    code(['nll = -torch.log(torch.softmax(logits, dim=1))']),
  ].map((c, i) => ({ id: `cell-${i}`, ...c }));
  return `${JSON.stringify(
    {
      cells,
      metadata: { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }, language_info: { name: 'python' } },
      nbformat: 4,
      nbformat_minor: 5,
    },
    null,
    1,
  )}\n`;
}

const MAGICS = 'magics.ipynb';

/** A notebook of valid IPython that is not Python: none of it is a syntax error. */
function magicsNotebookText() {
  const code = (/** @type {string[]} */ lines) => ({
    cell_type: 'code',
    execution_count: null,
    metadata: {},
    outputs: [],
    source: lines.map((l, i) => (i < lines.length - 1 ? `${l}\n` : l)),
  });
  const cells = [
    code(['!pip install -q \\', '    torch \\', '    torchvision']),
    code(['%%bash', 'echo "not python: $HOME"', 'for x in 1 2; do echo $x; done']),
    code(['  import torch', '  x = torch.randn(4)', '  y = torch.log(torch.softmax(x, dim=0))']),
    code(['x.clamp(min=0.1)']),
    code(['x.clamp(max=1.0);']),
  ].map((c, i) => ({ id: `magic-${i}`, ...c }));
  return `${JSON.stringify(
    {
      cells,
      metadata: { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' }, language_info: { name: 'python' } },
      nbformat: 4,
      nbformat_minor: 5,
    },
    null,
    1,
  )}\n`;
}

/** User settings shared by both code-server instances. */
function userSettings(/** @type {string} */ python, /** @type {Record<string, unknown>} */ extra = {}) {
  return {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'chat.disableAIFeatures': true,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'editor.minimap.enabled': false,
    'files.autoSave': 'off',
    'window.restoreWindows': 'none',
    'notebook.experimental.openGettingStarted': false,
    // A trusted user setting: the Python with torch but without torchtrap.
    'torchtrap.interpreter': python,
    'torchtrap.probe.timeout': Math.round(PROBE_WAIT_MS / 1000) - 20,
    'torchtrap.trace.server': 'messages',
    ...extra,
  };
}

/** The TorchTrap log files (client messages + server stderr + trace) under a user-data dir. */
function torchtrapLogs(/** @type {string} */ udd) {
  const found = [];
  const walk = (/** @type {string} */ d) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/TorchTrap/i.test(e.name)) found.push(p);
    }
  };
  walk(path.join(udd, 'logs'));
  return found;
}

const logText = (/** @type {string} */ udd) => torchtrapLogs(udd).map((p) => fs.readFileSync(p, 'utf8')).join('\n');

// ------------------------------------------------------------------ main

async function main() {
  const codeServer = need('E2E_CODE_SERVER');
  const nodeBin = need('E2E_NODE_BIN');
  const playwrightDir = need('E2E_PLAYWRIGHT_DIR');
  const chromiumPath = need('E2E_CHROMIUM');
  const python = need('E2E_PYTHON');
  const vsix = path.resolve(REPO, need('E2E_VSIX'));
  const screenshotOut = process.env.E2E_SCREENSHOT ? path.resolve(REPO, process.env.E2E_SCREENSHOT) : undefined;
  const require = createRequire(import.meta.url);
  /** @type {typeof import('playwright-core')} */
  const { chromium } = require(playwrightDir);

  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });

  // The workspace interpreter must not have torchtrap: only the bundled server may lint.
  try {
    execFileSync(python, ['-c', 'import torchtrap'], { stdio: 'ignore', cwd: os.tmpdir() });
    throw new Error(`${python} can import torchtrap; the e2e needs an interpreter without it`);
  } catch (err) {
    if (String(err).includes('can import torchtrap')) {
      throw err;
    }
  }
  // A Python >= 3.10 without torch, for the probe's "no torch" flow (optional).
  const noTorchPython = [process.env.E2E_PYTHON_NO_TORCH, '/usr/bin/python3', '/usr/bin/python3.11'].find((p) => {
    if (!p || !fs.existsSync(p)) return false;
    try {
      execFileSync(p, ['-c', 'import sys; assert sys.version_info >= (3, 10)\ntry:\n import torch\nexcept ImportError: pass\nelse: raise SystemExit(1)'], { stdio: 'ignore', cwd: os.tmpdir() });
      return true;
    } catch {
      return false;
    }
  });

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'torchtrap-e2e-'));
  const ws = path.join(tmp, 'workspace');
  const extDir = path.join(tmp, 'extensions');
  const udd = path.join(tmp, 'user-data');
  fs.mkdirSync(ws, { recursive: true });
  const examplesDir = path.resolve(REPO, process.env.E2E_EXAMPLES || 'examples');
  for (const name of fs.readdirSync(examplesDir)) {
    if (name.endsWith('.py')) {
      fs.copyFileSync(path.join(examplesDir, name), path.join(ws, name));
    }
  }
  for (const name of Object.values(EXAMPLES)) {
    if (!fs.existsSync(path.join(ws, name))) {
      throw new Error(`examples/${name} is missing`);
    }
  }
  fs.writeFileSync(path.join(ws, NOTEBOOK), notebookText());
  fs.writeFileSync(path.join(ws, MAGICS), magicsNotebookText());
  fs.writeFileSync(path.join(ws, UNSAFE_FILE), UNSAFE_TEXT);
  fs.writeFileSync(path.join(ws, EVAL_FILE), EVAL_TEXT);
  fs.writeFileSync(path.join(ws, TRAIN_FILE), TRAIN_TEXT);
  fs.mkdirSync(path.join(ws, path.dirname(JITTER_FILE)), { recursive: true });
  fs.writeFileSync(path.join(ws, JITTER_FILE), JITTER_TEXT);
  fs.writeFileSync(path.join(ws, SAMPLER_FILE), SAMPLER_TEXT);
  // The torch venv as the workspace's own .venv: "Select Interpreter" finds it the usual way.
  fs.symlinkSync(path.dirname(path.dirname(python)), path.join(ws, '.venv'));
  fs.mkdirSync(path.join(udd, 'User'), { recursive: true });
  const settingsFile = path.join(udd, 'User', 'settings.json');
  fs.writeFileSync(settingsFile, JSON.stringify(userSettings(python), null, 2));

  // A two-folder workspace: `b` ignores TT201 in its pyproject.toml and fixes on save.
  const multi = path.join(tmp, 'multi');
  const tt201Text = fs.readFileSync(path.join(ws, EXAMPLES.tt201), 'utf8');
  const tt101Text = fs.readFileSync(path.join(ws, EXAMPLES.tt101), 'utf8');
  for (const f of ['a', 'b']) fs.mkdirSync(path.join(multi, f, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(multi, 'a', 'a_log_softmax.py'), tt201Text);
  fs.writeFileSync(path.join(multi, 'b', 'b_log_softmax.py'), tt201Text);
  fs.writeFileSync(path.join(multi, 'b', 'b_fix_on_save.py'), tt101Text);
  fs.writeFileSync(path.join(multi, 'b', 'pyproject.toml'), '[tool.torchtrap]\nignore = ["TT201"]\n');
  fs.writeFileSync(
    path.join(multi, 'b', '.vscode', 'settings.json'),
    JSON.stringify({ 'editor.codeActionsOnSave': { 'source.fixAll.torchtrap': 'explicit' } }, null, 2),
  );
  const multiFile = path.join(multi, 'two-folders.code-workspace');
  fs.writeFileSync(multiFile, JSON.stringify({ folders: [{ path: 'a' }, { path: 'b' }], settings: {} }, null, 2));

  // An untrusted workspace whose settings name an "interpreter" that leaves a mark if run.
  const untrusted = path.join(tmp, 'untrusted');
  const mark = path.join(tmp, 'untrusted-interpreter-ran');
  fs.mkdirSync(path.join(untrusted, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(untrusted, 'stored_rng.py'), tt101Text);
  const evil = path.join(untrusted, 'evil-python');
  fs.writeFileSync(evil, `#!/bin/sh\ntouch '${mark}'\nexec '${python}' "$@"\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(untrusted, '.vscode', 'settings.json'), JSON.stringify({ 'torchtrap.interpreter': evil }, null, 2));
  const udd2 = path.join(tmp, 'user-data-untrusted');
  fs.mkdirSync(path.join(udd2, 'User'), { recursive: true });
  fs.writeFileSync(
    path.join(udd2, 'User', 'settings.json'),
    JSON.stringify(
      userSettings(python, { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never', 'security.workspace.trust.banner': 'never' }),
      null,
      2,
    ),
  );

  const env = { ...process.env, PATH: `${nodeBin}${path.delimiter}${process.env.PATH ?? ''}` };
  log(`installing ${path.basename(vsix)} (${(fs.statSync(vsix).size / 1e6).toFixed(1)} MB)`);
  execFileSync(codeServer, ['--extensions-dir', extDir, '--user-data-dir', udd, '--install-extension', vsix], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  const libs = path.join(extDir, fs.readdirSync(extDir).find((d) => d.startsWith('torchtrap.torchtrap')) ?? 'missing', 'bundled', 'libs');
  if (!fs.existsSync(libs)) {
    throw new Error(`the installed extension has no bundled/libs (${libs})`);
  }
  const wsFiles = [...Object.values(EXAMPLES), FIX_ALL_FILE, CLOSED_FILE, UNSAFE_FILE, EVAL_FILE, NOTEBOOK, MAGICS, TRAIN_FILE, JITTER_FILE, SAMPLER_FILE, NO_WORKERS_FILE].map((n) => path.join(ws, n));
  const expected = cliFindings(python, libs, wsFiles);
  log(`CLI findings: ${Object.entries(expected).map(([f, fs_]) => `${f}: ${fs_.map((x) => `${x.code}@${x.line}`).join(' ')}`).join('; ')}`);

  /** @type {{kill: () => void}[]} */
  const servers = [];
  /** Start code-server on a free port; resolves once it answers. */
  const startCodeServer = async (/** @type {string} */ userData, /** @type {string[]} */ extra, /** @type {string} */ logName) => {
    const port = await freePort();
    const out = fs.openSync(path.join(ARTIFACTS, logName), 'w');
    const cs = spawn(
      codeServer,
      ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check', ...extra,
        '--extensions-dir', extDir, '--user-data-dir', userData],
      { env, stdio: ['ignore', out, out], detached: true },
    );
    const kill = () => {
      try {
        if (cs.pid) process.kill(-cs.pid, 'SIGTERM');
      } catch {
        // gone
      }
    };
    servers.push({ kill });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60_000, 'code-server /healthz');
    log(`code-server up on port ${port}`);
    return { port, kill };
  };
  const killAll = () => servers.forEach((s) => s.kill());

  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  /** @type {{name: string, ok: boolean, error?: string, ms: number}[]} */
  const results = [];
  const ALL_TESTS = ['diagnostics', 'run-file', 'quickfix', 'fix-all', 'notebook', 'notebook-magics', 'status-explain', 'probe',
    'probe-interpreter', 'restart', 'settings-live', 'workspace-diagnostics', 'unsafe-fix-review', 'editor-round-3', 'settings-ui',
    'multi-root', 'untrusted'];
  // E2E_ONLY=a,b runs those flows only (while developing one; the full run is the test).
  const ONLY = (process.env.E2E_ONLY ?? '').split(',').map((t) => t.trim()).filter(Boolean);
  const TESTS = ONLY.length ? ALL_TESTS.filter((t) => ONLY.includes(t)) : ALL_TESTS;
  if (ONLY.length) log(`E2E_ONLY: running ${TESTS.join(', ')} of ${ALL_TESTS.length} flows`);
  const guard = setTimeout(() => {
    console.error(`e2e: over the ${TOTAL_BUDGET_MS / 1000}s budget, giving up`);
    killAll();
    process.exit(1);
  }, TOTAL_BUDGET_MS);

  try {
    const main = await startCodeServer(udd, ['--disable-workspace-trust'], 'code-server.log');
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
        '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
    });
    const context = await browser.newContext({
      viewport: { width: 1280, height: 760 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    const page = await context.newPage();
    page.on('pageerror', (e) => fs.appendFileSync(path.join(ARTIFACTS, 'browser-console.log'), `pageerror: ${e.message}\n`));
    page.on('console', (m) => {
      if (m.type() === 'error') fs.appendFileSync(path.join(ARTIFACTS, 'browser-console.log'), `${m.text()}\n`);
    });
    /**
     * Open a folder (or a .code-workspace) in this page and wait for the workbench and, for a
     * workspace, for the Explorer to list its folders. Opening a .code-workspace right after
     * another window sometimes comes up empty in code-server ("No Folder Opened": 5 of 10 runs
     * while the folder-change handling was being built; the notification is never sent, and
     * loading the workspace again fixes it).
     */
    const openWorkbench = async (/** @type {number} */ port, /** @type {string} */ query) => {
      for (let attempt = 1; ; attempt++) {
        await page.goto(`http://127.0.0.1:${port}/?${query}`);
        await page.locator('.monaco-workbench').first().waitFor({ timeout: 90_000 });
        log(`workbench loaded (${query.slice(0, 80)})`);
        if (!query.startsWith('workspace=') || attempt === 3) return;
        const folders = page.locator('.explorer-folders-view .monaco-list-row').first();
        if (await folders.waitFor({ state: 'visible', timeout: 20_000 }).then(() => true, () => false)) return;
        log(`the workspace came up with no folder listed (attempt ${attempt}); loading it again`);
      }
    };
    await openWorkbench(main.port, `folder=${encodeURIComponent(ws)}`);
    const vs = ui(page);

    /** @param {string} name @param {() => Promise<void>} fn */
    const test = async (name, fn) => {
      if (!TESTS.includes(name)) {
        log(`SKIP ${name} (E2E_ONLY)`);
        return;
      }
      const start = Date.now();
      try {
        await fn();
        results.push({ name, ok: true, ms: Date.now() - start });
        log(`PASS ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)`);
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) }).catch(() => undefined);
      } catch (err) {
        const error = err instanceof Error ? err.stack ?? err.message : String(err);
        results.push({ name, ok: false, error, ms: Date.now() - start });
        log(`FAIL ${name}: ${error}`);
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}-FAILED.png`) }).catch(() => undefined);
        await page.keyboard.press('Escape').catch(() => undefined);
      }
      await vs.clearToasts().catch(() => undefined);
    };

    const rowsFor = async (/** @type {string} */ file) => (await vs.problems()).filter((p) => p.file === file);
    const fmt = (/** @type {{code: string, line: number}[]} */ xs) => xs.map((x) => `${x.code}@${x.line}`).sort().join(' ');
    /** Wait until the Problems panel shows exactly `want` (code@line) for `file`. */
    const expectRows = async (/** @type {string} */ file, /** @type {string} */ want, /** @type {string} */ code = '', timeoutMs = 60_000) => {
      let now = '';
      await waitFor(
        async () => {
          now = fmt((await rowsFor(file)).filter((r) => !code || r.code === code));
          return now === want;
        },
        timeoutMs,
        () => `"${want}" for ${file} in the Problems panel (shown: "${now}")`,
      );
    };
    /**
     * A screenshot for docs/editors.md ($E2E_ARTIFACTS/NAME.png): only the box around `parts`
     * (selectors; the first visible match of each), `pad` pixels wider, so the PNG stays small.
     */
    const shot = async (/** @type {string} */ name, /** @type {string[]} */ parts, pad = 0) => {
      const boxes = [];
      for (const sel of parts) {
        const box = await page.locator(sel).first().boundingBox().catch(() => null);
        if (box) boxes.push(box);
      }
      const view = page.viewportSize() ?? { width: 1280, height: 760 };
      const x = Math.max(0, Math.min(...boxes.map((b) => b.x)) - pad);
      const y = Math.max(0, Math.min(...boxes.map((b) => b.y)) - pad);
      const right = Math.min(view.width, Math.max(...boxes.map((b) => b.x + b.width)) + pad);
      const bottom = Math.min(view.height, Math.max(...boxes.map((b) => b.y + b.height)) + pad);
      // The pointer off the tabs (their path tooltip covers the breadcrumbs): on the empty
      // part of the activity bar.
      await page.mouse.move(24, Math.round(view.height * 0.6));
      await sleep(200);
      const file = path.join(ARTIFACTS, `${name}.png`);
      await page.screenshot({ path: file, ...(boxes.length ? { clip: { x, y, width: right - x, height: bottom - y } } : {}) });
      log(`screenshot ${name}.png: ${(fs.statSync(file).size / 1024).toFixed(0)} KiB`);
    };
    /** Save the active editor until the file on disk satisfies `ok`. */
    const saveUntil = async (/** @type {string} */ file, /** @type {(t: string) => boolean} */ ok, /** @type {() => string} */ what) => {
      await waitFor(
        async () => {
          await page.keyboard.press('Control+S');
          await sleep(400);
          return ok(fs.readFileSync(file, 'utf8'));
        },
        20_000,
        what,
      );
    };

    /** Replace the user settings the way a person does: in the settings.json editor. */
    const editSettings = async (/** @type {string} */ text) => {
      // VS Code 1.139 opens it in a modal editor (not a tab), with the focus in it.
      await vs.runCommand('Preferences: Open User Settings (JSON)');
      await page.locator('.monaco-editor', { hasText: 'torchtrap.interpreter' }).first().waitFor({ timeout: 15_000 });
      await sleep(500);
      // Paste (typing would auto-close brackets and auto-indent).
      await page.evaluate((t) => navigator.clipboard.writeText(t), text);
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Control+V');
      await waitFor(
        async () => {
          await page.keyboard.press('Control+S');
          await sleep(300);
          return fs.readFileSync(settingsFile, 'utf8') === text;
        },
        10_000,
        () => `settings.json saved as wanted; it is:\n${fs.readFileSync(settingsFile, 'utf8')}`,
      );
      // Close the modal editor. The file on disk is already right: if VS Code still asks
      // to save (a save raced with the paste), keep the disk's text.
      // A suggestion or hover in the editor takes the first Escape: press until it closes.
      const modal = page.locator('.monaco-editor', { hasText: 'torchtrap.interpreter' }).first();
      for (let i = 0; i < 4 && (await modal.isVisible().catch(() => false)); i++) {
        await page.keyboard.press('Escape');
        const dialog = page.locator('.monaco-dialog-box', { hasText: 'save' }).first();
        if (await dialog.waitFor({ timeout: 1500 }).then(() => true, () => false)) {
          await dialog.locator('.monaco-button', { hasText: "Don't Save" }).first().click();
        }
        await modal.waitFor({ state: 'hidden', timeout: 2500 }).catch(() => undefined);
      }
      if (fs.readFileSync(settingsFile, 'utf8') !== text) {
        throw new Error('settings.json changed while closing its editor');
      }
    };
    await test('diagnostics', async () => {
      const want = [
        ...(expected[EXAMPLES.tt101] ?? []).filter((f) => f.code === 'TT101').map((f) => ({ file: EXAMPLES.tt101, code: f.code, line: f.line })),
        ...(expected[EXAMPLES.tt201] ?? []).filter((f) => f.code === 'TT201').map((f) => ({ file: EXAMPLES.tt201, code: f.code, line: f.line })),
      ];
      if (!want.some((w) => w.code === 'TT101') || !want.some((w) => w.code === 'TT201')) {
        throw new Error(`the CLI finds no TT101/TT201 in the examples: ${JSON.stringify(expected)}`);
      }
      const t = Date.now();
      await vs.openFile(EXAMPLES.tt101);
      await vs.openFile(EXAMPLES.tt201);
      await vs.openProblems();
      let seen = '';
      await waitFor(
        async () => {
          const rows = await vs.problems();
          seen = rows.map((r) => `${r.file}:${r.code}@${r.line}`).join(', ');
          return want.every((w) => rows.some((r) => r.file === w.file && r.code === w.code && r.line === w.line));
        },
        90_000,
        () => `${want.map((w) => `${w.file}:${w.code}@${w.line}`).join(', ')} in the Problems panel (seen: ${seen || 'nothing'})`,
      );
      log(`diagnostics shown ${Date.now() - t} ms after opening the files: ${seen}`);
    });

    await test('run-file', async () => {
      const file = EXAMPLES.tt101;
      const staticRng = (expected[file] ?? []).find((f) => f.code === 'TT101');
      if (!staticRng) {
        throw new Error(`the CLI reports no TT101 in ${file}`);
      }
      const rngLine = staticRng.line;
      const source = fs.readFileSync(path.join(ws, file), 'utf8').split('\n')[rngLine - 1] ?? '';
      if (!source.includes('self.rng = ')) {
        throw new Error(`line ${rngLine} of ${file} is not the stored RNG: ${source}`);
      }
      await vs.openFile(file);
      await vs.openProblems();
      /** Problems rows of `file` that come from the run. */
      const runRows = async () => (await rowsFor(file)).filter((r) => /torchtrap-run/.test(r.text));
      await expectRows(file, `TT101@${rngLine}`, 'TT101', 90_000);
      await vs.runCommand('TorchTrap: Run File with Checks');
      await page.locator('.notifications-toasts .notification-toast', { hasText: 'with checks' }).first().waitFor({ timeout: 30_000 });
      // The run ends: its summary, and the script's own output in the "TorchTrap Run" channel.
      await vs.toast(/1 finding/, 240_000);
      // The summary toast can show before the channel has rendered the run's last lines: poll.
      let output = '';
      await waitFor(
        async () => {
          output = (await page.locator('.panel .monaco-editor .view-lines').allInnerTexts().catch(() => [])).join(' ').replace(/\s+/g, ' ');
          return output.includes('RESULT: bug') && output.includes('torchtrap run: 1 finding');
        },
        15_000,
        () => `the script's output in the TorchTrap Run channel (shown: "${output.slice(-600)}")`,
        250,
      );
      // The output channel took the panel: back to Problems.
      await page.keyboard.press('Control+Shift+M');
      await vs.openProblems();
      // One row for the problem (issue 35 item 7): the static TT101 says "confirmed when run";
      // the run's own TT101 is folded into it, not a second row.
      let seen = '';
      await waitFor(
        async () => {
          await vs.openProblems();
          const rows = (await rowsFor(file)).filter((r) => r.code === 'TT101' && r.line === rngLine);
          seen = rows.map((r) => `${r.code}@${r.line}: ${r.text.slice(0, 160)}`).join(' | ');
          return rows.length === 1 && /confirmed when run/.test(rows[0].text);
        },
        60_000,
        () => `one TT101 row on line ${rngLine} saying "confirmed when run" (rows: ${seen || 'none'})`,
        500,
      );
      log(`run diagnostic: ${seen}`);
      if ((await runRows()).some((r) => r.code === 'TT101')) {
        throw new Error(`the run's TT101 is shown twice: ${JSON.stringify(await rowsFor(file))}`);
      }
      await vs.filterProblems(file);
      await shot('r3-one-diagnostic', ['.part.panel']);
      await vs.filterProblems('');
      // An edit: what the run saw no longer applies.
      await vs.goTo(1, 1);
      await page.keyboard.press('End');
      await page.keyboard.type(' ');
      await waitFor(
        async () => {
          await vs.openProblems();
          const rows = await rowsFor(file);
          return (await runRows()).length === 0 && rows.some((r) => r.code === 'TT101') && !rows.some((r) => /confirmed when run/.test(r.text));
        },
        30_000,
        'the run diagnostics to clear after an edit (the static TT101 staying)',
      );
      await page.keyboard.press('Backspace');
      await page.keyboard.press('Control+S');
      await vs.openProblems();
    });

    await test('quickfix', async () => {
      const file = EXAMPLES.tt202;
      const target = (expected[file] ?? []).find((f) => f.code === 'TT202' && f.fixes.length > 0);
      if (!target) {
        throw new Error(`the CLI reports no fixable TT202 in ${file}`);
      }
      const fix = target.fixes[0];
      const original = fs.readFileSync(path.join(ws, file), 'utf8');
      const want = applyEdits(original, fix.edits);
      // What the CLI finds in the fixed text: the panel must show exactly that many TT202s.
      const after = path.join(tmp, 'after', file);
      fs.mkdirSync(path.dirname(after), { recursive: true });
      fs.writeFileSync(after, want);
      const tt202After = (cliFindings(python, libs, [after])[file] ?? []).filter((f) => f.code === 'TT202');
      const tt202Before = (expected[file] ?? []).filter((f) => f.code === 'TT202');

      await vs.openFile(file);
      await vs.openProblems();
      await expectRows(file, fmt(tt202Before), 'TT202');
      const item = await vs.applyQuickFix(`TorchTrap (TT202): ${fix.title}`, async () => {
        await vs.goTo(target.line, target.column + 1);
        await sleep(300);
      });
      if (screenshotOut) {
        await page.screenshot({ path: screenshotOut });
        log(`screenshot: ${path.relative(REPO, screenshotOut)} (${(fs.statSync(screenshotOut).size / 1024).toFixed(0)} KiB)`);
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'quickfix-menu.png') });
      // Issue 35 item 12: the Ignore action is titled like the fixes, with the rule code.
      const ignores = (await page.locator('.action-widget .monaco-list-row', { hasText: 'Ignore on this line' }).allInnerTexts()).map((t) => t.trim());
      if (ignores.length === 0 || !ignores.every((t) => t.startsWith('TorchTrap (TT202): Ignore on this line'))) {
        throw new Error(`the Ignore action is not titled "TorchTrap (TT202): Ignore on this line": ${JSON.stringify(ignores)}`);
      }
      await shot('r3-ignore-title', ['.action-widget'], 24);
      await item.click();
      await page.locator('.action-widget').first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
      // The edit arrives asynchronously (the server resolves the code action): save until
      // the file on disk has it.
      await saveUntil(path.join(ws, file), (t) => t === want, () => `the fixed text on disk; expected:\n${want}\n--- got:\n${fs.readFileSync(path.join(ws, file), 'utf8')}`);
      await expectRows(file, fmt(tt202After), 'TT202', 30_000);

      // Issue 35 item 4: with a DistributedSampler, TT211's fix divides by len(loader.sampler)
      // (each replica's samples), not len(loader.dataset).
      const sampled = (expected[SAMPLER_FILE] ?? []).find((f) => f.code === 'TT211');
      const bySampler = sampled?.fixes[0];
      if (!sampled || !bySampler || !bySampler.title.includes('len(loader.sampler)') || bySampler.applicability !== 'safe') {
        throw new Error(`the CLI's TT211 fix in ${SAMPLER_FILE} does not divide by len(loader.sampler): ${JSON.stringify(expected[SAMPLER_FILE])}`);
      }
      const samplerFull = path.join(ws, SAMPLER_FILE);
      const samplerWant = applyEdits(SAMPLER_TEXT, bySampler.edits);
      if (!samplerWant.includes('correct / len(loader.sampler)')) {
        throw new Error(`the CLI's TT211 fix gives:\n${samplerWant}`);
      }
      await vs.openFile(SAMPLER_FILE);
      await expectRows(SAMPLER_FILE, `TT211@${sampled.line}`, 'TT211');
      const bySamplerItem = await vs.applyQuickFix(`TorchTrap (TT211): ${bySampler.title}`, async () => {
        await vs.goTo(sampled.line, sampled.column + 1);
        await sleep(300);
      });
      await shot('r3-tt211-sampler', ['.part.editor .title', '.action-widget'], 16);
      await bySamplerItem.click();
      await page.locator('.action-widget').first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
      await saveUntil(samplerFull, (t) => t === samplerWant, () => `${SAMPLER_FILE} fixed; expected:\n${samplerWant}\n--- got:\n${fs.readFileSync(samplerFull, 'utf8')}`);
      await expectRows(SAMPLER_FILE, '', 'TT211', 30_000);
    });

    await test('fix-all', async () => {
      const file = FIX_ALL_FILE;
      const full = path.join(ws, file);
      const want = cliFixed(python, libs, file, fs.readFileSync(full, 'utf8'));
      if (want === fs.readFileSync(full, 'utf8')) {
        throw new Error(`the CLI's --fix changes nothing in ${file}`);
      }
      await vs.openFile(file);
      await vs.openProblems();
      await waitFor(async () => (await rowsFor(file)).some((r) => r.code === 'TT211'), 60_000, `TT211 in ${file}`);
      await vs.runCommand('TorchTrap: Fix All');
      const said = await vs.toast(/TorchTrap: (Fixed \d+ findings?|Nothing to fix)/);
      if (!/Fixed 1 finding\b/.test(said)) {
        throw new Error(`Fix All said "${said}", expected "Fixed 1 finding"`);
      }
      log(`Fix All: "${said}"`);
      await saveUntil(full, (t) => t === want, () => `the CLI's --fix text; expected:\n${want}\n--- got:\n${fs.readFileSync(full, 'utf8')}`);
      await vs.clearToasts();
      await vs.runCommand('TorchTrap: Fix All');
      const again = await vs.toast(/TorchTrap: Nothing to fix/);
      log(`Fix All again: "${again}"`);

      // Issue 35 item 2: TT103's "Load in the main process (num_workers=0)" is unsafe (it says
      // why in its title) and Fix All leaves it: a worker count is never changed silently.
      const noWorkersFull = path.join(ws, NO_WORKERS_FILE);
      const noWorkersText = fs.readFileSync(noWorkersFull, 'utf8');
      const tt103 = (expected[NO_WORKERS_FILE] ?? []).find((f) => f.code === 'TT103');
      const noWorkers = tt103?.fixes.find((f) => f.title.startsWith('Load in the main process'));
      if (!tt103 || !noWorkers || noWorkers.applicability !== 'unsafe' || !/\(unsafe: loading is no longer parallel/.test(noWorkers.title)) {
        throw new Error(`the CLI's TT103 num_workers=0 fix is not unsafe: ${JSON.stringify(tt103?.fixes)}`);
      }
      await vs.clearToasts();
      await vs.openFile(NO_WORKERS_FILE);
      await waitFor(async () => (await rowsFor(NO_WORKERS_FILE)).some((r) => r.code === 'TT103'), 60_000, `TT103 in ${NO_WORKERS_FILE}`);
      await vs.applyQuickFix(`TorchTrap (TT103): ${noWorkers.title}`, async () => {
        await vs.goTo(tt103.line, tt103.column + 1);
        await sleep(300);
      });
      await shot('r3-tt103-unsafe', ['.part.editor .title', '.action-widget'], 16);
      await page.keyboard.press('Escape');
      await vs.runCommand('TorchTrap: Fix All');
      const left = await vs.toast(/TorchTrap: (Fixed \d+ findings?|Nothing to fix)/);
      if (!/Nothing to fix \(1 unsafe fix skipped\)/.test(left)) {
        throw new Error(`Fix All on ${NO_WORKERS_FILE} said "${left}", expected "Nothing to fix (1 unsafe fix skipped)"`);
      }
      log(`Fix All on TT103: "${left}"`);
      await sleep(500);
      if (await page.locator('.tabs-container .tab.active.dirty').count()) {
        throw new Error(`Fix All changed ${NO_WORKERS_FILE} (num_workers=0 applied)`);
      }
      if (fs.readFileSync(noWorkersFull, 'utf8') !== noWorkersText) {
        throw new Error(`${NO_WORKERS_FILE} changed on disk`);
      }
    });

    await test('notebook', async () => {
      const nbFile = path.join(ws, NOTEBOOK);
      const findings = expected[NOTEBOOK] ?? [];
      const tt201 = findings.filter((f) => f.code === 'TT201');
      if (tt201.length !== 2 || !findings.some((f) => f.code === 'TT202')) {
        throw new Error(`the CLI's notebook findings are not 2 x TT201 + TT202: ${fmt(findings)}`);
      }
      const want = codeCells(cliFixed(python, libs, NOTEBOOK, fs.readFileSync(nbFile, 'utf8')));
      const opened = Date.now();
      await vs.openFile(NOTEBOOK);
      await page.locator('.view-line', { hasText: 'logits' }).first().waitFor({ timeout: 30_000 });
      await vs.openProblems();
      // Cell-relative lines, as the CLI reports them (`cell 3:4:8`).
      let rows = '';
      await waitFor(
        async () => {
          const all = await vs.problems();
          rows = all.filter((r) => r.file.startsWith(NOTEBOOK)).map((r) => `${r.code}@${r.line}:${r.col}`).sort().join(' ');
          return findings.every((f) => rows.includes(`${f.code}@${f.line}:${f.column + 1}`));
        },
        90_000,
        () => `${findings.map((f) => `${f.code}@${f.line}:${f.column + 1}`).join(' ')} for ${NOTEBOOK} in the Problems panel (shown: "${rows}")`,
      );
      log(`notebook: every cell's findings shown ${Date.now() - opened} ms after opening it`);
      // Issue 35 item 9: each row names its cell (the panel lists them under the notebook).
      const withCell = findings.map((f) => `${f.code}@${f.line}:${f.column + 1} cell ${f.cell}`).sort().join(' ');
      let shownCells = '';
      await vs.filterProblems(NOTEBOOK);
      try {
        await waitFor(
          async () => {
            shownCells = (await vs.problems())
              .filter((r) => r.file.startsWith(NOTEBOOK))
              .map((r) => `${r.code}@${r.line}:${r.col} cell ${/\bcell (\d+): /.exec(r.text)?.[1]}`)
              .sort()
              .join(' ');
            return shownCells === withCell;
          },
          10_000,
          () => `the notebook's rows naming their cells: "${withCell}" (shown: "${shownCells}")`,
        );
        await shot('r3-notebook-cells', ['.part.panel']);
      } finally {
        await vs.filterProblems('');
      }
      // Ctrl+. on the first TT201, reached from its row in the Problems panel.
      const first = tt201[0];
      const row = page.locator('.markers-panel .monaco-list-row', { hasText: `[Ln ${first?.line}, Col ${(first?.column ?? 0) + 1}]` }).filter({ hasText: 'TT201' }).first();
      // A double click moves the focus into the cell editor, at the problem.
      const title = `TorchTrap (TT201): ${first?.fixes[0]?.title}`;
      const item = await vs.applyQuickFix(title, async () => {
        await row.dblclick();
        await sleep(400);
      });
      await page.screenshot({ path: path.join(ARTIFACTS, 'notebook-quickfix.png') });
      // Two TT201s in the notebook: the menu also offers both at once.
      const both = page.locator('.action-widget .monaco-list-row', { hasText: 'TorchTrap: fix all TT201 in this file (2)' }).first();
      if (!(await both.isVisible().catch(() => false))) {
        throw new Error('the Ctrl+. menu has no "TorchTrap: fix all TT201 in this file (2)"');
      }
      await item.click();
      await waitFor(
        async () => (await vs.problems()).filter((r) => r.file.startsWith(NOTEBOOK) && r.code === 'TT201').length === 1,
        30_000,
        'one TT201 left in the notebook after the quick fix',
      );
      // Fix All from the palette with the notebook (not a cell editor) focused.
      await page.keyboard.press('Escape');
      await page.locator('.notebook-editor').first().focus().catch(() => undefined);
      await vs.runCommand('TorchTrap: Fix All');
      const said = await vs.toast(/TorchTrap: (Fixed \d+ findings?|Nothing to fix)/);
      if (!/Fixed 1 finding\b/.test(said)) {
        throw new Error(`Fix All in the notebook said "${said}", expected "Fixed 1 finding"`);
      }
      await page.keyboard.press('Escape');
      let got = '';
      await saveUntil(
        nbFile,
        (t) => {
          got = JSON.stringify(codeCells(t));
          return got === JSON.stringify(want);
        },
        () => `the saved cells to be the CLI's --fix cells; expected:\n${JSON.stringify(want)}\n--- got:\n${got}`,
      );
      await page.screenshot({ path: path.join(ARTIFACTS, 'notebook-fixed.png') });
    });

    await test('notebook-magics', async () => {
      // The CLI first: exactly TT201 in the indented cell and TT202 behind the `;`.
      const findings = expected[MAGICS] ?? [];
      const cliRows = findings.map((f) => `${f.code}@${f.line}:${f.column + 1}`).sort().join(' ');
      if (fmt(findings) !== 'TT201@3 TT202@1' || findings.some((f) => f.code === 'TT000')) {
        throw new Error(`the CLI's ${MAGICS} findings are not TT201@3 (cell 3) + TT202@1 (cell 5): ${cliRows}`);
      }
      const tt201 = findings.find((f) => f.code === 'TT201');
      if (tt201?.column !== 6) {
        throw new Error(`TT201 is not at the indented cell's own column 7: ${cliRows}`);
      }
      await vs.openFile(MAGICS);
      await page.locator('.view-line', { hasText: 'torchvision' }).first().waitFor({ timeout: 30_000 });
      await vs.openProblems();
      let rows = '';
      const shown = async () =>
        (await vs.problems()).filter((r) => r.file.startsWith(MAGICS)).map((r) => `${r.code}@${r.line}:${r.col}`).sort().join(' ');
      await waitFor(
        async () => {
          rows = await shown();
          return rows === cliRows;
        },
        90_000,
        () => `"${cliRows}" for ${MAGICS} in the Problems panel (shown: "${rows}")`,
      );
      // Still exactly those a moment later: no TT202 on cell 4's displayed last expression.
      await sleep(2_000);
      rows = await shown();
      if (rows !== cliRows) {
        throw new Error(`${MAGICS} rows changed to "${rows}", expected "${cliRows}"`);
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'notebook-magics.png') });
    });

    await test('status-explain', async () => {
      // The language status item shows the server state and interpreter, within the window.
      await vs.openFile(EXAMPLES.tt101);
      const statusEntry = page.locator('[id="status.languageStatus"]').first();
      await statusEntry.click();
      const hover = page.locator('.monaco-hover, .context-view', { hasText: 'TorchTrap' }).first();
      await hover.waitFor({ timeout: 10_000 });
      await sleep(300);
      const hoverText = (await hover.innerText()).replace(/\s+/g, ' ');
      const venv = python.split('/').slice(-3)[0] ?? python;
      if (!hoverText.includes(venv) || !/Python 3\.\d+/.test(hoverText)) {
        throw new Error(`the language status does not show the interpreter (${venv}, Python 3.x): ${hoverText}`);
      }
      const overflow = await hover.evaluate((el) => {
        const right = Math.max(...Array.from(el.querySelectorAll('*')).map((e) => e.getBoundingClientRect().right), el.getBoundingClientRect().right);
        const left = Math.min(...Array.from(el.querySelectorAll('*')).map((e) => e.getBoundingClientRect().left), el.getBoundingClientRect().left);
        return { left, right, width: window.innerWidth };
      });
      await page.screenshot({ path: path.join(ARTIFACTS, 'status-popup.png') });
      if (overflow.left < 0 || overflow.right > overflow.width) {
        throw new Error(`the language status pop-up is cut off: ${JSON.stringify(overflow)}`);
      }
      await page.keyboard.press('Escape');
      // Explain Rule: the picker lists the rules, the doc opens as rendered markdown.
      await vs.runCommand('TorchTrap: Explain Rule');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'TT101' }).first().waitFor({ timeout: 15_000 });
      // The list is virtualised: with every rule in it, TT201 may be below the fold.
      await page.keyboard.type('TT201');
      const pick = page.locator('.quick-input-list .monaco-list-row', { hasText: 'TT201' }).first();
      await pick.waitFor({ timeout: 15_000 });
      await pick.click();
      await page.locator('.tabs-container .tab', { hasText: 'TT201' }).first().waitFor({ timeout: 15_000 });
      await waitFor(
        async () => {
          for (const frame of page.frames()) {
            const text = await frame.evaluate(() => document.body?.innerText ?? '').catch(() => '');
            if (text.includes('TT201') && /What it does/i.test(text)) return true;
          }
          return false;
        },
        15_000,
        'the rendered TT201 explanation',
      );
    });

    /** The rendered probe report (the webview of ours, not the workbench): its rows and lines. */
    const reportView = async (/** @type {(r: any) => boolean} */ ok, /** @type {string} */ what) => {
      /** @type {any} */
      let seen = null;
      await waitFor(
        async () => {
          for (const frame of page.frames()) {
            const r = await frame
              .evaluate(() =>
                !document.querySelector('.monaco-workbench') && document.body?.innerText?.includes('TorchTrap probe')
                  ? {
                      lines: Array.from(document.querySelectorAll('tr, li, p, h2')).map((e) => /** @type {HTMLElement} */ (e).innerText.replace(/\s+/g, ' ')),
                      details: document.querySelectorAll('details.raw').length,
                      openDetails: document.querySelectorAll('details.raw[open]').length,
                      // Drawn, not just laid out (a closed <details> keeps its content's boxes).
                      visibleJson: Array.from(document.querySelectorAll('pre')).filter((p) => p.checkVisibility() && /"\w+":/.test(p.textContent ?? '')).length,
                      overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
                    }
                  : null,
              )
              .catch(() => null);
            if (r && r.lines.length > 0) {
              seen = r;
              if (ok(r)) return true;
            }
          }
          return false;
        },
        30_000,
        () => `${what} in the rendered report (${JSON.stringify(seen).slice(0, 1500)})`,
      );
      return seen;
    };

    await test('probe', async () => {
      const reportDir = path.join(udd, 'User', 'globalStorage', 'torchtrap.torchtrap', 'probe');
      const reportJson = path.join(reportDir, 'torchtrap-probe-report.json');
      await vs.runCommand('View: Close All Editor Groups');
      await vs.openFile(EXAMPLES.tt101);
      // The progress names the step once, not the title twice; cancelling says so and
      // writes no report.
      await vs.runCommand('TorchTrap: Probe This Machine');
      const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'probing this machine' }).first();
      await toast.waitFor({ timeout: 15_000 });
      const progress = await vs.toast(/probing this machine.*\d+\/\d+/, 60_000);
      if ((progress.match(/probing this machine/g) ?? []).length !== 1) {
        throw new Error(`the progress repeats itself: "${progress}"`);
      }
      log(`progress: "${progress}"`);
      await toast.hover();
      await toast.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
      await vs.toast(/probe cancelled/, 30_000);
      log('probe cancelled from its progress notification');
      if (fs.existsSync(reportJson)) {
        throw new Error('a cancelled probe wrote a report');
      }
    });

    await test('probe-interpreter', async () => {
      // An interpreter without torch: the probe offers Select Interpreter (not CLI flags); the
      // picker lists the workspace's .venv (the torch venv), saves it for the user, and the
      // probe runs again there: TT101 confirmed, one verdict per rule, the file's finding marked.
      if (!noTorchPython) {
        throw new Error('no Python >= 3.10 without torch here (set E2E_PYTHON_NO_TORCH)');
      }
      const reportJson = path.join(udd, 'User', 'globalStorage', 'torchtrap.torchtrap', 'probe', 'torchtrap-probe-report.json');
      fs.rmSync(reportJson, { force: true });
      const before = fs.readFileSync(settingsFile, 'utf8');
      // A Python file first: it activates the extension (onLanguage:python) and its server.
      await vs.runCommand('View: Close All Editor Groups');
      await vs.openFile(EXAMPLES.tt101);
      await vs.openProblems();
      await waitFor(async () => (await rowsFor(EXAMPLES.tt101)).some((r) => r.code === 'TT101'), 90_000, 'TT101 before the probe');
      const ready = (logText(udd).match(/Server ready in/g) ?? []).length;
      await editSettings(JSON.stringify({ ...JSON.parse(before), 'torchtrap.interpreter': noTorchPython }, null, 2));
      try {
        await waitFor(() => (logText(udd).match(/Server ready in/g) ?? []).length > ready, 60_000, `a server on ${noTorchPython}`);
        await waitFor(async () => (await rowsFor(EXAMPLES.tt101)).some((r) => r.code === 'TT101'), 60_000, `TT101 from the server on ${noTorchPython}`);
        await vs.runCommand('TorchTrap: Probe This Machine');
        const said = await vs.toast(/needs torch/, 60_000);
        if (/--python/.test(said)) {
          throw new Error(`the probe gives CLI advice in VS Code: "${said}"`);
        }
        const box = page.locator('.notifications-toasts .notification-toast', { hasText: 'needs torch' }).first();
        await box.locator('.monaco-button', { hasText: 'Open Settings' }).first().waitFor({ timeout: 5000 });
        await page.screenshot({ path: path.join(ARTIFACTS, 'probe-no-torch.png') });
        await box.hover();
        await box.locator('.monaco-button', { hasText: 'Select Interpreter' }).first().click();
        // The picker: the workspace venv is offered (found the usual way, no Python extension).
        const venvRow = page.locator('.quick-input-list .monaco-list-row', { hasText: '.venv' }).first();
        await venvRow.waitFor({ timeout: 15_000 });
        const listed = (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
        log(`Select Interpreter lists: ${listed.join(' | ')}`);
        await page.screenshot({ path: path.join(ARTIFACTS, 'select-interpreter.png') });
        await venvRow.click();
        const userRow = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Save for the user' }).first();
        await userRow.waitFor({ timeout: 10_000 });
        await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Save for this workspace' }).first().waitFor({ timeout: 5000 });
        await userRow.click();
        const chosen = await waitFor(
          () => {
            const value = JSON.parse(fs.readFileSync(settingsFile, 'utf8'))['torchtrap.interpreter'];
            return typeof value === 'string' && value.startsWith(path.join(ws, '.venv')) ? value : undefined;
          },
          15_000,
          () => `torchtrap.interpreter = ${ws}/.venv/... in the user settings (it is ${fs.readFileSync(settingsFile, 'utf8')})`,
        );
        log(`saved for the user: torchtrap.interpreter = ${chosen}`);
        if (fs.existsSync(path.join(ws, '.vscode', 'settings.json')) && fs.readFileSync(path.join(ws, '.vscode', 'settings.json'), 'utf8').includes('torchtrap.interpreter')) {
          throw new Error('"Save for the user" wrote the workspace settings');
        }
        // The server restarts on it and the probe runs again by itself.
        await waitFor(() => logText(udd).includes(`Interpreter: ${chosen} (from setting)`), 60_000, `a server on ${chosen}`);
        await waitFor(() => fs.existsSync(reportJson), PROBE_WAIT_MS, `the re-run probe's report (${reportJson})`, 1000);
        const doc = JSON.parse(fs.readFileSync(reportJson, 'utf8'));
        if (!String(doc.interpreter?.path ?? '').startsWith(path.join(ws, '.venv'))) {
          throw new Error(`the probe did not run in the chosen interpreter: ${doc.interpreter?.path}`);
        }
        /** @type {{id: string, verdict: string, rules: Record<string, string>}[]} */
        const experiments = doc.experiments ?? [];
        log(`probe verdicts: ${experiments.map((e) => `${e.id}=${e.verdict}`).join(', ')}; rules: ${Object.entries(doc.rules ?? {}).map(([c, r]) => `${c}=${/** @type {any} */ (r).verdict}`).join(', ')}`);
        const rng = experiments.find((e) => e.id === 'worker-rng');
        if (rng?.rules?.TT101 !== 'confirmed' || doc.rules?.TT101?.verdict !== 'confirmed') {
          throw new Error(`worker-rng did not confirm TT101 on CPU: ${JSON.stringify(rng)?.slice(0, 600)}`);
        }
        const words = { confirmed: 'confirmed', 'not-reproduced': 'not reproduced', skipped: 'skipped', error: 'could not run', timeout: 'timed out' };
        const tt102 = /** @type {Record<string, string>} */ (words)[rng.rules.TT102 ?? ''] ?? '?';
        await page.locator('.tabs-container .tab', { hasText: 'TorchTrap Probe Report' }).first().waitFor({ timeout: 30_000 });
        const seen = await reportView(
          (r) =>
            // One verdict per rule in the worker-rng row, TT102 with its own.
            r.lines.some((/** @type {string} */ l) => l.includes('worker-rng') && l.includes('TT101 confirmed') && l.includes(`TT102 ${tt102}`)) &&
            // The open file's TT101 finding, marked.
            r.lines.some((/** @type {string} */ l) => /^Line \d+, TT101: .* — confirmed on this machine$/.test(l.trim())) &&
            r.lines.some((/** @type {string} */ l) => l.includes(`In ${EXAMPLES.tt101}`)) &&
            r.lines.some((/** @type {string} */ l) => l.startsWith('GPU experiments skipped: this interpreter has no CUDA')),
          `"worker-rng: TT101 confirmed, TT102 ${tt102}", the file's TT101 "confirmed on this machine" and the skipped GPU experiments`,
        );
        if (!(seen.details >= experiments.length && seen.openDetails === 0 && seen.visibleJson === 0)) {
          throw new Error(`the raw JSON is not collapsed: ${JSON.stringify({ details: seen.details, open: seen.openDetails, visible: seen.visibleJson })}`);
        }
        if (seen.overflow > 2) {
          throw new Error(`the report is wider than its half-width panel by ${seen.overflow}px`);
        }
        await sleep(500);
        await page.screenshot({ path: path.join(ARTIFACTS, 'probe-report.png') });
        // The finding in the editor says it too.
        await waitFor(
          async () => (await rowsFor(EXAMPLES.tt101)).some((r) => r.code === 'TT101' && r.text.includes('confirmed on this machine')),
          30_000,
          'TT101 "(confirmed on this machine)" in the Problems panel',
        );
      } finally {
        await page.keyboard.press('Escape');
        await editSettings(before);
      }
      await waitFor(() => logText(udd).includes(`Interpreter: ${python} (from setting)`) && (logText(udd).match(/Server ready in/g) ?? []).length > ready + 2, 60_000, `the server back on ${python}`);
      await vs.runCommand('View: Close All Editor Groups');
    });

    await test('restart', async () => {
      await vs.openFile(EXAMPLES.tt101);
      await vs.openProblems();
      await waitFor(async () => (await rowsFor(EXAMPLES.tt101)).some((r) => r.code === 'TT101'), 60_000, 'TT101 before the restart');
      const ready = (logText(udd).match(/Server ready in/g) ?? []).length;
      await vs.runCommand('TorchTrap: Restart Server');
      await waitFor(
        () => logText(udd).includes('Restarting the server (Restart Server command)') && (logText(udd).match(/Server ready in/g) ?? []).length > ready,
        60_000,
        'a new server after "TorchTrap: Restart Server"',
      );
      // The new server lints: a new line with a pitfall gets its squiggle.
      await vs.goTo(1, 1);
      await page.keyboard.press('Control+End');
      await page.keyboard.type('\nlogp = torch.log(torch.softmax(torch.randn(3), dim=0))\n', { delay: 5 });
      await waitFor(async () => (await rowsFor(EXAMPLES.tt101)).some((r) => r.code === 'TT201'), 60_000, 'TT201 from the restarted server');
      // Leave the file as it was on disk.
      await vs.runCommand('File: Revert File');
      await waitFor(async () => !(await rowsFor(EXAMPLES.tt101)).some((r) => r.code === 'TT201'), 30_000, 'TT201 gone after the revert');
    });

    await test('settings-live', async () => {
      // Changing a setting takes effect without reloading the window: edit the user settings
      // (as a person would, in the settings.json editor) to ignore TT201, then undo it.
      const original = fs.readFileSync(settingsFile, 'utf8');
      const tt201 = async () => (await rowsFor(EXAMPLES.tt201)).filter((r) => r.code === 'TT201').length;
      await vs.openFile(EXAMPLES.tt201);
      await vs.openProblems();
      await waitFor(async () => (await tt201()) > 0, 30_000, 'TT201 in the Problems panel before the change');
      await editSettings(JSON.stringify({ ...JSON.parse(original), 'torchtrap.ignore': ['TT201'] }, null, 2));
      await waitFor(async () => (await tt201()) === 0, 30_000, 'TT201 to disappear after "torchtrap.ignore": ["TT201"]');
      await editSettings(original);
      await waitFor(async () => (await tt201()) > 0, 30_000, 'TT201 to come back after removing the ignore');
    });

    await test('workspace-diagnostics', async () => {
      // A file never opened: nothing in openFilesOnly; Check Workspace lists its finding and
      // counts; diagnosticMode "workspace" keeps it (and follows the file on disk); back to
      // openFilesOnly, it goes. The index cache is in the extension's storage, not the folder.
      const file = CLOSED_FILE;
      const want = (expected[file] ?? []).filter((f) => f.code === 'TT106');
      if (want.length === 0) {
        throw new Error(`the CLI finds no TT106 in ${file}: ${JSON.stringify(expected[file])}`);
      }
      const rows = async () => fmt((await rowsFor(file)).filter((r) => r.code === 'TT106'));
      await vs.runCommand('View: Close All Editor Groups');
      await vs.openProblems();
      // The panel's list is virtualised: filter it to the file, so that its rows are drawn.
      await vs.filterProblems(file);
      try {
        await sleep(1500);
        if ((await rows()) !== '') {
          throw new Error(`${file} (never opened) has problems in openFilesOnly mode: ${await rows()}`);
        }
        await vs.runCommand('TorchTrap: Check Workspace');
        const said = await vs.toast(/TorchTrap: Checked \d+ files?/, 90_000);
        // Every .py file of the folder, data/ included; not in .venv (a dot folder).
        const countPy = (/** @type {string} */ d) =>
          fs.readdirSync(d, { withFileTypes: true }).reduce(
            (n, e) => n + (e.isDirectory() && !e.name.startsWith('.') ? countPy(path.join(d, e.name)) : e.isFile() && e.name.endsWith('.py') ? 1 : 0),
            0,
          );
        const pyFiles = countPy(ws);
        if (!said.includes(`Checked ${pyFiles} files:`) || !/\d+ findings? in \d+ files?/.test(said)) {
          throw new Error(`Check Workspace said "${said}", expected "Checked ${pyFiles} files: N findings in M files"`);
        }
        log(`Check Workspace: "${said}"`);
        await expectRows(file, fmt(want), 'TT106', 30_000);
        const original = fs.readFileSync(settingsFile, 'utf8');
        await editSettings(JSON.stringify({ ...JSON.parse(original), 'torchtrap.diagnosticMode': 'workspace' }, null, 2));
        try {
          await expectRows(file, fmt(want), 'TT106', 30_000);
          await page.screenshot({ path: path.join(ARTIFACTS, 'workspace-mode.png') });
          // Changed on disk (outside the editor): the guard added, the TT106 goes.
          const full = path.join(ws, file);
          const text = fs.readFileSync(full, 'utf8');
          const guarded = cliFixed(python, libs, file, text, true);
          if (guarded === text) {
            throw new Error(`the CLI's --unsafe-fixes changes nothing in ${file}`);
          }
          fs.writeFileSync(full, guarded);
          try {
            await expectRows(file, '', 'TT106', 30_000);
          } finally {
            fs.writeFileSync(full, text);
          }
          await expectRows(file, fmt(want), 'TT106', 30_000);

          // Issue 35 item 1: a change to train.py re-checks the closed data/jitter.py whose
          // TT101 rests on it: num_workers=0 typed (unsaved) clears it; reverted, it is back.
          const jitter = path.basename(JITTER_FILE);
          const jitterWant = fmt((expected[jitter] ?? []).filter((f) => f.code === 'TT101'));
          if (jitterWant === '') {
            throw new Error(`the CLI finds no TT101 in ${JITTER_FILE}: ${JSON.stringify(expected[jitter])}`);
          }
          const trainLines = TRAIN_TEXT.split('\n');
          const workersLine = trainLines.findIndex((l) => l.includes('num_workers=4')) + 1;
          const workersCol = (trainLines[workersLine - 1] ?? '').indexOf('num_workers=4') + 'num_workers='.length + 1;
          await vs.filterProblems(jitter);
          await expectRows(jitter, jitterWant, 'TT101', 30_000);
          await vs.openFile(TRAIN_FILE);
          await shot('r3-workspace-before', ['.part.editor', '.part.panel']);
          await vs.goTo(workersLine, workersCol);
          await page.keyboard.press('Shift+ArrowRight');
          await page.keyboard.type('0');
          const typed = Date.now();
          await page.locator('.part.editor .view-line', { hasText: 'num_workers=0' }).first().waitFor({ timeout: 10_000 });
          await expectRows(jitter, '', 'TT101', 30_000);
          log(`workspace mode: ${JITTER_FILE}'s TT101 gone ${Date.now() - typed} ms after num_workers=0 was typed in ${TRAIN_FILE}`);
          await shot('r3-workspace-after', ['.part.editor', '.part.panel']);
          await vs.runCommand('File: Revert File');
          await expectRows(jitter, jitterWant, 'TT101', 30_000);
          await vs.runCommand('View: Close All Editor Groups');
          await vs.filterProblems(file);
        } finally {
          await editSettings(original);
        }
        await expectRows(file, '', 'TT106', 30_000);
      } finally {
        await vs.filterProblems('');
      }
      // Item 8: no .torchtrap_cache/ in the workspace; the index cache is in workspaceStorage.
      if (fs.existsSync(path.join(ws, '.torchtrap_cache'))) {
        throw new Error('opening the folder created .torchtrap_cache/ in it');
      }
      const storage = path.join(udd, 'User', 'workspaceStorage');
      const caches = [];
      const walk = (/** @type {string} */ d) => {
        for (const e of fs.existsSync(d) ? fs.readdirSync(d, { withFileTypes: true }) : []) {
          if (e.isDirectory()) walk(path.join(d, e.name));
          else if (e.name === 'check.pickle') caches.push(path.join(d, e.name));
        }
      };
      walk(storage);
      if (!caches.some((c) => c.includes(`${path.sep}torchtrap.torchtrap${path.sep}index${path.sep}`))) {
        throw new Error(`no index cache under ${storage}/*/torchtrap.torchtrap/index: ${JSON.stringify(caches)}`);
      }
    });

    await test('unsafe-fix-review', async () => {
      // Fix All applies the safe fix and says the unsafe one was skipped; "Review Unsafe
      // Fixes…" lists it and applies it: the file becomes the CLI's --fix --unsafe-fixes text.
      const file = UNSAFE_FILE;
      const full = path.join(ws, file);
      const original = fs.readFileSync(full, 'utf8');
      const want = cliFixed(python, libs, file, original, true);
      const safeOnly = cliFixed(python, libs, file, original);
      if (want === safeOnly || safeOnly === original) {
        throw new Error(`${file} needs a safe fix and an unsafe one (CLI: safe ${safeOnly !== original}, unsafe ${want !== safeOnly})`);
      }
      await vs.openFile(file);
      await vs.openProblems();
      await waitFor(async () => (await rowsFor(file)).some((r) => r.code === 'TT202'), 60_000, `TT202 in ${file}`);
      await vs.runCommand('TorchTrap: Fix All');
      const said = await vs.toast(/TorchTrap: Fixed 1 finding \(1 unsafe fix skipped\)/);
      log(`Fix All: "${said}"`);
      const box = page.locator('.notifications-toasts .notification-toast', { hasText: 'unsafe fix skipped' }).first();
      await box.hover();
      await box.locator('.monaco-button', { hasText: 'Review Unsafe Fixes' }).first().click();
      const item = page.locator('.quick-input-list .monaco-list-row', { hasText: 'TT202' }).first();
      await item.waitFor({ timeout: 15_000 });
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Apply all' }).first().waitFor({ timeout: 5000 });
      await page.screenshot({ path: path.join(ARTIFACTS, 'unsafe-fix-review.png') });
      await item.click();
      // Issue 35 item 11: nothing is applied before the diff of the fix is open beside the
      // file and a modal showed its full title; Apply there applies it.
      const dialog = page.locator('.monaco-dialog-box').first();
      await dialog.waitFor({ timeout: 15_000 });
      const asked = (await dialog.innerText()).replace(/\s+/g, ' ');
      if (!/\(unsafe: [^)]+\)/.test(asked)) {
        throw new Error(`the confirmation does not show the fix's full title: ${asked}`);
      }
      log(`confirmation: ${asked}`);
      await page.locator('.tabs-container .tab', { hasText: 'with the fix' }).first().waitFor({ timeout: 10_000 });
      if (!(await rowsFor(file)).some((r) => r.code === 'TT202')) {
        throw new Error('the unsafe fix was applied before it was confirmed');
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'unsafe-fix-preview.png') });
      await dialog.locator('.monaco-button', { hasText: /^Apply$/ }).first().click();
      await vs.openFile(file);
      await saveUntil(full, (t) => t === want, () => `the CLI's --fix --unsafe-fixes text; expected:\n${want}\n--- got:\n${fs.readFileSync(full, 'utf8')}`);
      await waitFor(async () => !(await rowsFor(file)).some((r) => r.code === 'TT202'), 30_000, `TT202 gone from ${file}`);
      await vs.clearToasts();
      await vs.runCommand('TorchTrap: Review Unsafe Fixes');
      await vs.toast(/no unsafe fixes left/);
    });

    await test('editor-round-3', async () => {
      // Issue 35: the message in an evaluation, keystroke to squiggle, the interpreter picker
      // (Python and torch per row), the extension's page (icon, images), and the probe's
      // "Run the Rest" when its limit runs out. Screenshots in $E2E_ARTIFACTS/r3-*.png.
      await vs.runCommand('View: Close All Editor Groups');
      await vs.openFile(EVAL_FILE);
      await vs.openProblems();
      const evalRow = await waitFor(
        async () => (await rowsFor(EVAL_FILE)).find((r) => r.code === 'TT201'),
        60_000,
        `TT201 in ${EVAL_FILE}`,
      );
      if (!/in the metric or score/.test(evalRow.text) || /gradient/.test(evalRow.text)) {
        throw new Error(`TT201 in an evaluation speaks of a gradient: ${evalRow.text}`);
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'r3-eval-message.png') });
      // Keystroke to squiggle: a new TT227 line typed at the end of validate().
      await vs.goTo(7, 1);
      await page.keyboard.press('End');
      await page.keyboard.press('Enter'); // auto-indented into validate()
      await page.keyboard.type('torch.no_grad()');
      const typed = Date.now();
      await waitFor(async () => (await rowsFor(EVAL_FILE)).some((r) => r.code === 'TT227'), 30_000, 'TT227 after typing');
      log(`keystroke to squiggle (TT227 in the Problems panel): ${Date.now() - typed} ms`);
      await page.screenshot({ path: path.join(ARTIFACTS, 'r3-typed.png') });
      await page.keyboard.press('Control+Shift+K'); // delete the typed line again
      await saveUntil(path.join(ws, EVAL_FILE), (t) => t === EVAL_TEXT, () => `${EVAL_FILE} back to its text: ${fs.readFileSync(path.join(ws, EVAL_FILE), 'utf8')}`);

      // Issue 35 item 10: while the file does not parse, its last findings stay and move with
      // their lines: an unfinished line pasted at the start of the TT201's line moves it down one
      // (it was dropped, as if its line had been edited).
      const evalTT201 = (expected[EVAL_FILE] ?? []).find((f) => f.code === 'TT201');
      if (!evalTT201) {
        throw new Error(`the CLI reports no TT201 in ${EVAL_FILE}`);
      }
      await expectRows(EVAL_FILE, `TT201@${evalTT201.line}`, 'TT201', 30_000);
      await vs.goTo(evalTT201.line, 1);
      await page.evaluate((t) => navigator.clipboard.writeText(t), 'x = (\n');
      await page.keyboard.press('Control+V');
      await page.locator('.part.editor .view-line', { hasText: 'x = (' }).first().waitFor({ timeout: 10_000 });
      await expectRows(EVAL_FILE, `TT201@${evalTT201.line + 1}`, 'TT201', 30_000);
      await shot('r3-syntax-error-lines', ['.part.editor', '.part.panel']);
      await vs.runCommand('File: Revert File');
      await expectRows(EVAL_FILE, `TT201@${evalTT201.line}`, 'TT201', 30_000);

      // The picker: each row says its Python and whether torch is there.
      await vs.runCommand('TorchTrap: Select Interpreter');
      const venvRow = page.locator('.quick-input-list .monaco-list-row', { hasText: '.venv' }).first();
      await venvRow.waitFor({ timeout: 30_000 });
      const rows = (await page.locator('.quick-input-list .monaco-list-row').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
      log(`Select Interpreter lists: ${rows.join(' | ')}`);
      if (!rows.some((r) => r.includes('.venv') && /Python 3\.\d+\.\d+ · torch \d/.test(r))) {
        throw new Error(`the workspace .venv row does not say its Python and torch: ${rows.join(' | ')}`);
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'r3-interpreter-picker.png') });
      await page.keyboard.press('Escape');

      // The extension's page: icon and README images from the package.
      await vs.focusWorkbench();
      await page.keyboard.press('Control+Shift+X');
      const search = page.locator('.extensions-viewlet .monaco-editor, .extensions-viewlet input').first();
      await search.waitFor({ timeout: 15_000 });
      await search.click();
      await page.keyboard.type('@installed TorchTrap');
      const entry = page.locator('.extensions-viewlet .monaco-list-row', { hasText: 'TorchTrap' }).first();
      await entry.waitFor({ timeout: 15_000 });
      await entry.click();
      await page.locator('.extension-editor').first().waitFor({ timeout: 15_000 });
      await sleep(4000); // the README webview loads its images
      const icon = await page.locator('.extension-editor .icon').first().getAttribute('src').catch(() => null);
      log(`extension page icon: ${icon}`);
      await page.screenshot({ path: path.join(ARTIFACTS, 'r3-extension-page.png') });
      // Down the README to its images (rendered from the package).
      await page.mouse.move(700, 420);
      for (let i = 0; i < 12; i++) {
        await page.mouse.wheel(0, 600);
        await sleep(150);
      }
      await sleep(1500);
      await page.screenshot({ path: path.join(ARTIFACTS, 'r3-extension-readme.png') });
      await vs.runCommand('View: Close All Editor Groups');
      await page.keyboard.press('Control+Shift+E');

      // The probe with a limit too short for all of it: progress per experiment, then the offer.
      const before = fs.readFileSync(settingsFile, 'utf8');
      // 12 s: the whole probe took 36 s here, and a fast machine finished it inside the 40 s this
      // used before (no offer: CI failed). Nine experiments each start torch, so 12 s runs out
      // anywhere and still leaves the preflight and a first experiment time to show progress.
      await editSettings(JSON.stringify({ ...JSON.parse(before), 'torchtrap.probe.timeout': 12 }, null, 2));
      try {
        await vs.openFile(EXAMPLES.tt101);
        await vs.runCommand('TorchTrap: Probe This Machine');
        const step = await vs.toast(/probing this machine.*\d+\/\d+/, 60_000);
        log(`probe progress: "${step}"`);
        await page.screenshot({ path: path.join(ARTIFACTS, 'r3-probe-progress.png') });
        const offer = await vs.toast(/limit ran out: \d+ experiments? left/, 120_000);
        log(`probe: "${offer}"`);
        await page.screenshot({ path: path.join(ARTIFACTS, 'r3-probe-run-the-rest.png') });
        const box = page.locator('.notifications-toasts .notification-toast', { hasText: 'limit ran out' }).first();
        await box.locator('.monaco-button', { hasText: 'Run the Rest' }).first().waitFor({ timeout: 5000 });
      } finally {
        await vs.clearToasts();
        await editSettings(before);
      }
    });

    await test('settings-ui', async () => {
      // torchtrap.severity is edited in the Settings UI (not "Edit in settings.json"): a key
      // picked from the rule codes, a severity from the four; settings.json gets it and the
      // finding's severity follows.
      const original = fs.readFileSync(settingsFile, 'utf8');
      await vs.openFile(EXAMPLES.tt201);
      await vs.openProblems();
      await waitFor(async () => (await rowsFor(EXAMPLES.tt201)).some((r) => r.code === 'TT201'), 30_000, 'TT201 before the change');
      await vs.runCommand('Preferences: Open Settings (UI)');
      await page.locator('.settings-editor').first().waitFor({ timeout: 15_000 });
      await sleep(800);
      // The search box has the focus.
      await page.keyboard.type('torchtrap.severity', { delay: 10 });
      const item = page.locator('.settings-editor .setting-item-contents', { hasText: 'Override the severity' }).first();
      await item.waitFor({ timeout: 15_000 });
      if (await item.locator('.edit-in-settings-button, a', { hasText: 'Edit in settings.json' }).count()) {
        throw new Error('torchtrap.severity is only editable in settings.json');
      }
      const add = item.locator('.monaco-button', { hasText: 'Add Item' }).first();
      await add.waitFor({ timeout: 10_000 });
      await add.click();
      const selects = item.locator('select');
      await waitFor(async () => (await selects.count()) >= 2, 10_000, 'the key and value dropdowns');
      const keyOptions = await selects.nth(0).locator('option').allInnerTexts();
      if (!keyOptions.includes('TT201') || !keyOptions.includes('TT2')) {
        throw new Error(`the key dropdown does not offer the rule codes: ${keyOptions.join(', ')}`);
      }
      await selects.nth(0).selectOption('TT201');
      await selects.nth(1).selectOption('error');
      await page.screenshot({ path: path.join(ARTIFACTS, 'settings-ui-severity.png') });
      await item.locator('.monaco-button', { hasText: 'OK' }).first().click();
      try {
        await waitFor(
          () => JSON.stringify(JSON.parse(fs.readFileSync(settingsFile, 'utf8'))['torchtrap.severity'] ?? null) === '{"TT201":"error"}',
          15_000,
          () => `"torchtrap.severity": {"TT201": "error"} in settings.json (it is ${fs.readFileSync(settingsFile, 'utf8')})`,
        );
        await page.keyboard.press('Control+W');
        await vs.openFile(EXAMPLES.tt201);
        await vs.openProblems();
        // An error row has the error icon.
        await waitFor(
          async () =>
            page.evaluate(() =>
              Array.from(document.querySelectorAll('.markers-panel .monaco-list-row')).some(
                (r) => /TT201/.test(/** @type {HTMLElement} */ (r).innerText) && !!r.querySelector('.codicon-error'),
              ),
            ),
          30_000,
          'TT201 shown as an error',
        );
      } finally {
        if (await page.locator('.settings-editor').first().isVisible().catch(() => false)) {
          await page.keyboard.press('Control+W');
        }
        await editSettings(original);
      }
    });

    await test('multi-root', async () => {
      await openWorkbench(main.port, `workspace=${encodeURIComponent(multiFile)}`);
      await vs.openFile('a_log_softmax.py');
      await vs.openFile('b_log_softmax.py');
      await vs.openFile('b_fix_on_save.py');
      await vs.openProblems();
      await waitFor(
        async () => (await rowsFor('a_log_softmax.py')).some((r) => r.code === 'TT201') && (await rowsFor('b_fix_on_save.py')).some((r) => r.code === 'TT101'),
        90_000,
        'TT201 in folder a and TT101 in folder b',
      );
      // b's pyproject.toml ignores TT201: its copy of the same file has none.
      await sleep(1000);
      const bRows = await rowsFor('b_log_softmax.py');
      if (bRows.some((r) => r.code === 'TT201')) {
        throw new Error(`folder b's pyproject.toml (ignore TT201) is not applied: ${JSON.stringify(bRows)}`);
      }
      // Fix All on save (b's editor.codeActionsOnSave): an edit, Ctrl+S, the CLI's --fix text.
      const file = path.join(multi, 'b', 'b_fix_on_save.py');
      const edited = `# edited in the e2e\n${tt101Text}`;
      const want = cliFixed(python, libs, 'b_fix_on_save.py', edited);
      if (want === edited) {
        throw new Error('the CLI fixes nothing in the TT101 example');
      }
      await vs.goTo(1, 1);
      await page.keyboard.type('# edited in the e2e\n');
      await saveUntil(file, (t) => t === want, () => `the fixed-on-save text; expected:\n${want}\n--- got:\n${fs.readFileSync(file, 'utf8')}`);
      await waitFor(async () => !(await rowsFor('b_fix_on_save.py')).some((r) => r.code === 'TT101'), 30_000, 'TT101 gone after the fix on save');
    });

    await test('untrusted', async () => {
      main.kill();
      const second = await startCodeServer(udd2, [], 'code-server-untrusted.log');
      await openWorkbench(second.port, `folder=${encodeURIComponent(untrusted)}`);
      await vs.openFile('stored_rng.py');
      await vs.openProblems();
      await waitFor(async () => (await rowsFor('stored_rng.py')).some((r) => r.code === 'TT101'), 90_000, 'TT101 in the untrusted workspace');
      if (fs.existsSync(mark)) {
        throw new Error("the untrusted workspace's torchtrap.interpreter was run");
      }
      // VS Code itself hides restricted settings' workspace values; the client checks too.
      const text = logText(udd2);
      if (!text.includes(`Interpreter: ${python} (from setting)`) || text.includes(evil)) {
        throw new Error(`the server did not run on the user's interpreter ${python}: ${text.slice(0, 800)}`);
      }
      const statusEntry = page.locator('[id="status.languageStatus"]').first();
      await statusEntry.click();
      const hover = page.locator('.monaco-hover, .context-view', { hasText: 'TorchTrap' }).first();
      await hover.waitFor({ timeout: 10_000 });
      const hoverText = (await hover.innerText()).replace(/\s+/g, ' ');
      if (!hoverText.includes('restricted mode')) {
        throw new Error(`the language status does not say "restricted mode": ${hoverText}`);
      }
    });
  } catch (err) {
    const error = err instanceof Error ? err.stack ?? err.message : String(err);
    log(`setup failed: ${error}`);
    results.push({ name: 'setup', ok: false, error, ms: 0 });
  } finally {
    clearTimeout(guard);
    await browser?.close().catch(() => undefined);
    killAll();
    await sleep(500);
    const failed = results.filter((r) => !r.ok);
    // The TorchTrap logs (client messages + server stderr + LSP trace) and code-server's logs.
    [udd, udd2].forEach((dir, k) =>
      torchtrapLogs(dir).forEach((p, i) => fs.copyFileSync(p, path.join(ARTIFACTS, `torchtrap-server${k ? '-untrusted' : ''}${i ? `-${i}` : ''}.log`))),
    );
    if (failed.length > 0 && fs.existsSync(path.join(udd, 'logs'))) {
      fs.cpSync(path.join(udd, 'logs'), path.join(ARTIFACTS, 'code-server-logs'), { recursive: true });
    }
    const text = logText(udd);
    const activation = /activated in (\d+) ms/.exec(text)?.[1];
    const ready = /Server ready in (\d+) ms/.exec(text)?.[1];
    log(`extension activate(): ${activation ?? '?'} ms; server ready: ${ready ?? '?'} ms`);
    if (failed.length === 0 && !process.env.E2E_KEEP) {
      fs.rmSync(tmp, { recursive: true, force: true });
    } else {
      log(`kept ${tmp}; artifacts in ${path.relative(REPO, ARTIFACTS) || ARTIFACTS}`);
    }
    const passed = results.filter((r) => r.ok && r.name !== 'setup').length;
    for (const r of results) {
      console.log(`${r.ok ? 'ok    ' : 'FAILED'} ${r.name} (${(r.ms / 1000).toFixed(1)}s)`);
    }
    const planned = TESTS.length;
    const failedCount = Math.max(failed.length, planned - passed);
    if (ONLY.length) console.log(`e2e: only ${ONLY.join(', ')} (E2E_ONLY); ${ALL_TESTS.length - planned} skipped`);
    console.log(`e2e total ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    console.log(`e2e: ${passed} passed, ${failedCount} failed`);
    process.exitCode = failedCount > 0 ? 1 : 0;
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  console.log('e2e: 0 passed, 16 failed');
  process.exit(1);
});
