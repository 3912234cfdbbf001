// @ts-check
// End-to-end test of the TorchTrap extension in real VS Code: code-server (VS Code 1.139)
// driven by Playwright in Debian's headless Chromium.
//
//   eval "$(bash scripts/client-e2e-setup.sh)"    # Node 24, code-server, chromium, playwright, Python
//   E2E_VSIX=torchtrap-linux-x64-0.1.0.vsix node client/e2e/run.mjs
//
// Installs the .vsix, opens a workspace with the examples/ files, with torchtrap.interpreter set
// to a Python that has torch but NO torchtrap (so only the bundled server can lint), and checks:
//   1. diagnostics: TT101 and TT201 appear in the Problems panel on the lines the CLI reports;
//   2. quick fix:   Ctrl+. on a TT202 line applies the fix: the file becomes the expected text
//                   and the problem disappears;
//   3. status:      the language status item shows the interpreter; "TorchTrap: Explain Rule…"
//                   lists the rules and opens one rendered;
//   4. probe:       "TorchTrap: Run GPU Probe" from the palette opens a rendered report with
//                   each CPU experiment's verdict and the rules it speaks for;
//   5. settings:    "torchtrap.ignore" changed in settings.json applies without a reload.
// Expected lines and texts come from `python -m torchtrap check --format json` run on the same
// files (the CLI, not the language server). On failure: screenshots, the TorchTrap log (client +
// server stderr) and code-server's logs go to $E2E_ARTIFACTS (default .e2e-artifacts/).
// Prints `e2e: N passed, M failed` and exits non-zero on any failure.

import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.resolve(process.env.E2E_ARTIFACTS || path.join(REPO, '.e2e-artifacts'));
const TOTAL_BUDGET_MS = Number(process.env.E2E_BUDGET_S || 540) * 1000;
const PROBE_WAIT_MS = Number(process.env.E2E_PROBE_WAIT_S || 240) * 1000;
const EXAMPLES = {
  tt101: 'tt101_stored_rng.py',
  tt201: 'tt201_log_of_softmax.py',
  tt202: 'tt202_discarded_clamp.py',
};

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
 *   message: string, fixes: {title: string, applicability: string, edits: any[]}[]}} Finding
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
          file = text.split(' ')[0] ?? '';
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
    await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor({ timeout: 15_000 });
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

  return { problems, openProblems, openFile, goTo, runCommand, focusWorkbench };
}

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
  fs.mkdirSync(path.join(udd, 'User'), { recursive: true });
  fs.writeFileSync(
    path.join(udd, 'User', 'settings.json'),
    JSON.stringify(
      {
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
        // A trusted user setting: the Python with torch but without torchtrap.
        'torchtrap.interpreter': python,
        'torchtrap.probe.timeout': Math.round(PROBE_WAIT_MS / 1000) - 20,
        'torchtrap.trace.server': 'messages',
      },
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
  const wsFiles = Object.values(EXAMPLES).map((n) => path.join(ws, n));
  const expected = cliFindings(python, libs, wsFiles);
  log(`CLI findings: ${Object.entries(expected).map(([f, fs_]) => `${f}: ${fs_.map((x) => `${x.code}@${x.line}`).join(' ')}`).join('; ')}`);

  const port = await freePort();
  const csLog = fs.openSync(path.join(ARTIFACTS, 'code-server.log'), 'w');
  const cs = spawn(
    codeServer,
    [
      '--bind-addr', `127.0.0.1:${port}`,
      '--auth', 'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--extensions-dir', extDir,
      '--user-data-dir', udd,
      ws,
    ],
    { env, stdio: ['ignore', csLog, csLog], detached: true },
  );
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  /** @type {{name: string, ok: boolean, error?: string, ms: number}[]} */
  const results = [];
  const killAll = () => {
    try {
      if (cs.pid) process.kill(-cs.pid, 'SIGTERM');
    } catch {
      // gone
    }
  };
  const guard = setTimeout(() => {
    console.error(`e2e: over the ${TOTAL_BUDGET_MS / 1000}s budget, giving up`);
    killAll();
    process.exit(1);
  }, TOTAL_BUDGET_MS);

  try {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60_000, 'code-server /healthz');
    log(`code-server up on port ${port}`);
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
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.locator('.monaco-workbench').first().waitFor({ timeout: 90_000 });
    log('workbench loaded');
    const vs = ui(page);

    /** @param {string} name @param {() => Promise<void>} fn */
    const test = async (name, fn) => {
      const start = Date.now();
      try {
        await fn();
        results.push({ name, ok: true, ms: Date.now() - start });
        log(`PASS ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)`);
      } catch (err) {
        const error = err instanceof Error ? err.stack ?? err.message : String(err);
        results.push({ name, ok: false, error, ms: Date.now() - start });
        log(`FAIL ${name}: ${error}`);
        await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) }).catch(() => undefined);
        await page.keyboard.press('Escape').catch(() => undefined);
      }
    };

    const rowsFor = async (/** @type {string} */ file) => (await vs.problems()).filter((p) => p.file === file);
    const fmt = (/** @type {{code: string, line: number}[]} */ xs) => xs.map((x) => `${x.code}@${x.line}`).sort().join(' ');

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
      await waitFor(
        async () => fmt((await rowsFor(file)).filter((r) => r.code === 'TT202')) === fmt(tt202Before),
        60_000,
        `${fmt(tt202Before)} in the Problems panel for ${file}`,
      );
      await vs.goTo(target.line, target.column + 1);
      await sleep(300);
      const title = `TorchTrap (TT202): ${fix.title}`;
      const item = page.locator('.action-widget .monaco-list-row', { hasText: title }).first();
      await waitFor(
        async () => {
          if (await item.isVisible().catch(() => false)) return true;
          await page.keyboard.press('Escape');
          await vs.goTo(target.line, target.column + 1);
          await page.keyboard.press('Control+.');
          await item.waitFor({ state: 'visible', timeout: 4000 });
          return true;
        },
        45_000,
        `the quick fix "${title}" after Ctrl+.`,
        100,
      );
      if (screenshotOut) {
        await page.screenshot({ path: screenshotOut });
        log(`screenshot: ${path.relative(REPO, screenshotOut)} (${(fs.statSync(screenshotOut).size / 1024).toFixed(0)} KiB)`);
      }
      await item.click();
      await page.locator('.action-widget').first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
      // The edit arrives asynchronously (the server resolves the code action): save until
      // the file on disk has it.
      let got = '';
      await waitFor(
        async () => {
          await page.keyboard.press('Control+S');
          await sleep(300);
          got = fs.readFileSync(path.join(ws, file), 'utf8');
          return got === want;
        },
        20_000,
        () => `the fixed text on disk; expected:\n${want}\n--- got:\n${got}`,
      );
      let now = '';
      await waitFor(
        async () => {
          now = fmt((await rowsFor(file)).filter((r) => r.code === 'TT202'));
          return now === fmt(tt202After);
        },
        30_000,
        () => `the TT202 problem to disappear (want: "${fmt(tt202After)}", panel: "${now}")`,
      );
    });

    await test('status-and-explain', async () => {
      // The language status item shows the server state and interpreter.
      await vs.openFile(EXAMPLES.tt101);
      const statusEntry = page.locator('[id="status.languageStatus"]').first();
      await statusEntry.click();
      const hover = page.locator('.monaco-hover, .context-view', { hasText: 'TorchTrap' }).first();
      await hover.waitFor({ timeout: 10_000 });
      const hoverText = (await hover.innerText()).replace(/\s+/g, ' ');
      if (!hoverText.includes(python)) {
        throw new Error(`the language status does not show the interpreter ${python}: ${hoverText}`);
      }
      await page.keyboard.press('Escape');
      // Explain Rule: the picker lists the rules, the doc opens as rendered markdown.
      await vs.runCommand('TorchTrap: Explain Rule');
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

    await test('probe', async () => {
      const reportDir = path.join(udd, 'User', 'globalStorage', 'torchtrap.torchtrap', 'probe');
      const reportJson = path.join(reportDir, 'torchtrap-probe-report.json');
      // First: the progress notification is cancellable, and cancelling says so.
      await vs.runCommand('TorchTrap: Run GPU Probe');
      const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'GPU probe' }).first();
      await toast.waitFor({ timeout: 15_000 });
      await toast.hover();
      await toast.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
      await page
        .locator('.notifications-toasts .notification-toast', { hasText: 'GPU probe cancelled' })
        .first()
        .waitFor({ timeout: 20_000 });
      log('probe cancelled from its progress notification');
      if (fs.existsSync(reportJson)) {
        throw new Error('a cancelled probe wrote a report');
      }
      await page.keyboard.press('Escape');
      // Then: the full run.
      await vs.runCommand('TorchTrap: Run GPU Probe');
      await toast.waitFor({ timeout: 15_000 });
      log('progress notification shown');
      await waitFor(() => fs.existsSync(reportJson), PROBE_WAIT_MS, `the probe report (${reportJson})`, 1000);
      const doc = JSON.parse(fs.readFileSync(reportJson, 'utf8'));
      /** @type {{id: string, verdict: string, rules: Record<string, string>}[]} */
      const experiments = doc.experiments ?? [];
      const ran = experiments.filter((e) => e.verdict === 'confirmed' || e.verdict === 'not-reproduced');
      if (ran.length === 0) {
        throw new Error(`no CPU experiment gave a verdict: ${JSON.stringify(experiments.map((e) => [e.id, e.verdict]))}`);
      }
      log(`probe verdicts: ${experiments.map((e) => `${e.id}=${e.verdict}`).join(', ')}`);
      await page.locator('.tabs-container .tab', { hasText: 'torchtrap-probe-report' }).first().waitFor({ timeout: 30_000 });
      /** @type {string[]} */
      let rows = [];
      await waitFor(
        async () => {
          for (const frame of page.frames()) {
            const r = await frame
              .evaluate(() =>
                document.querySelector('h1')?.textContent?.includes('TorchTrap probe')
                  ? Array.from(document.querySelectorAll('tr')).map((tr) => /** @type {HTMLElement} */ (tr).innerText.replace(/\s+/g, ' '))
                  : null,
              )
              .catch(() => null);
            if (r) {
              rows = r;
              return ran.every((e) =>
                rows.some((row) => row.includes(e.id) && row.includes(e.verdict) && Object.keys(e.rules ?? {}).every((c) => row.includes(c))),
              );
            }
          }
          return false;
        },
        30_000,
        () => `a rendered report row with each CPU experiment's verdict and rules (rows: ${JSON.stringify(rows).slice(0, 1500)})`,
      );
      await sleep(500);
      await page.screenshot({ path: path.join(ARTIFACTS, 'probe-report.png') }).catch(() => undefined);
    });

    await test('settings-live', async () => {
      // Changing a setting takes effect without reloading the window: edit the user settings
      // (as a person would, in the settings.json editor) to ignore TT201, then undo it.
      const settingsFile = path.join(udd, 'User', 'settings.json');
      const original = fs.readFileSync(settingsFile, 'utf8');
      const tt201 = async () => (await rowsFor(EXAMPLES.tt201)).filter((r) => r.code === 'TT201').length;
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
        await page.keyboard.press('Escape');
        const dialog = page.locator('.monaco-dialog-box', { hasText: 'save' }).first();
        if (await dialog.waitFor({ timeout: 1500 }).then(() => true, () => false)) {
          await dialog.locator('.monaco-button', { hasText: "Don't Save" }).first().click();
        }
        await page.locator('.monaco-editor', { hasText: 'torchtrap.interpreter' }).first().waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
        if (fs.readFileSync(settingsFile, 'utf8') !== text) {
          throw new Error('settings.json changed while closing its editor');
        }
      };
      await vs.openFile(EXAMPLES.tt201);
      await vs.openProblems();
      await waitFor(async () => (await tt201()) > 0, 30_000, 'TT201 in the Problems panel before the change');
      await editSettings(JSON.stringify({ ...JSON.parse(original), 'torchtrap.ignore': ['TT201'] }, null, 2));
      await waitFor(async () => (await tt201()) === 0, 30_000, 'TT201 to disappear after "torchtrap.ignore": ["TT201"]');
      await editSettings(original);
      await waitFor(async () => (await tt201()) > 0, 30_000, 'TT201 to come back after removing the ignore');
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
    // The TorchTrap log (client messages + server stderr + LSP trace) and code-server's logs.
    const logsDir = path.join(udd, 'logs');
    if (fs.existsSync(logsDir)) {
      const found = [];
      const walk = (/** @type {string} */ d) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) walk(p);
          else if (/TorchTrap/i.test(e.name)) found.push(p);
        }
      };
      walk(logsDir);
      found.forEach((p, i) => fs.copyFileSync(p, path.join(ARTIFACTS, `torchtrap-server${i ? `-${i}` : ''}.log`)));
      if (failed.length > 0) {
        fs.cpSync(logsDir, path.join(ARTIFACTS, 'code-server-logs'), { recursive: true });
      }
      const activation = found.map((p) => /activated in (\d+) ms/.exec(fs.readFileSync(p, 'utf8'))?.[1]).find(Boolean);
      const ready = found.map((p) => /Server ready in (\d+) ms/.exec(fs.readFileSync(p, 'utf8'))?.[1]).find(Boolean);
      log(`extension activate(): ${activation ?? '?'} ms; server ready: ${ready ?? '?'} ms`);
    }
    if (failed.length === 0 && !process.env.E2E_KEEP) {
      fs.rmSync(tmp, { recursive: true, force: true });
    } else {
      log(`kept ${tmp}; artifacts in ${path.relative(REPO, ARTIFACTS) || ARTIFACTS}`);
    }
    const passed = results.filter((r) => r.ok && r.name !== 'setup').length;
    for (const r of results) {
      console.log(`${r.ok ? 'ok    ' : 'FAILED'} ${r.name} (${(r.ms / 1000).toFixed(1)}s)`);
    }
    const expectedTests = 5;
    const failedCount = Math.max(failed.length, expectedTests - passed);
    console.log(`e2e total ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    console.log(`e2e: ${passed} passed, ${failedCount} failed`);
    process.exitCode = failedCount > 0 ? 1 : 0;
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  console.log('e2e: 0 passed, 5 failed');
  process.exit(1);
});
