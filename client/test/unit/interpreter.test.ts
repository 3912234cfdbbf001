import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assess,
  expandSetting,
  findOnPath,
  parseCheckOutput,
  resolveInterpreter,
  versionOk,
  type CheckResult,
  type ResolveInputs,
} from '../../src/interpreter';

function inputs(over: Partial<ResolveInputs>): ResolveInputs {
  return {
    setting: '',
    pythonExtension: async () => undefined,
    pathEnv: '/usr/local/bin:/usr/bin',
    platform: 'linux',
    isExecutable: (f) => ['/usr/bin/python3', '/usr/bin/python', '/usr/local/bin/python'].includes(f),
    trusted: true,
    workspaceFolders: ['/work/repo'],
    homeDir: '/home/me',
    ...over,
  };
}

describe('resolveInterpreter: the order', () => {
  it('1. torchtrap.interpreter wins over everything', async () => {
    let asked = false;
    const r = await resolveInterpreter(
      inputs({
        setting: '/opt/py/bin/python',
        pythonExtension: async () => {
          asked = true;
          return '/ext/python';
        },
      }),
    );
    assert.deepEqual(r.candidate, { executable: '/opt/py/bin/python', source: 'setting' });
    assert.equal(asked, false, 'the Python extension is not even asked');
  });

  it('1b. an explicit setting is used even if missing (the check then reports it)', async () => {
    const r = await resolveInterpreter(inputs({ setting: '/nope/python' }));
    assert.deepEqual(r.candidate, { executable: '/nope/python', source: 'setting' });
  });

  it('2. then the Python extension active environment', async () => {
    const r = await resolveInterpreter(inputs({ pythonExtension: async () => '/home/me/.venvs/ml/bin/python' }));
    assert.deepEqual(r.candidate, { executable: '/home/me/.venvs/ml/bin/python', source: 'pythonExtension' });
  });

  it('3. then python3 on PATH, before python', async () => {
    const r = await resolveInterpreter(inputs({}));
    // /usr/local/bin has only `python`; python3 is searched first across PATH.
    assert.deepEqual(r.candidate, { executable: '/usr/bin/python3', source: 'path' });
  });

  it('3b. python when there is no python3', async () => {
    const r = await resolveInterpreter(inputs({ isExecutable: (f) => f === '/usr/local/bin/python' }));
    assert.deepEqual(r.candidate, { executable: '/usr/local/bin/python', source: 'path' });
  });

  it('a failing Python extension falls through to PATH', async () => {
    const r = await resolveInterpreter(
      inputs({
        pythonExtension: async () => {
          throw new Error('activation failed');
        },
      }),
    );
    assert.equal(r.candidate?.source, 'path');
    assert.ok(r.notes[0]?.includes('activation failed'));
  });

  it('nothing anywhere: no candidate, and a note', async () => {
    const r = await resolveInterpreter(inputs({ isExecutable: () => false }));
    assert.equal(r.candidate, undefined);
    assert.ok(r.notes.some((n) => n.includes('PATH')));
  });

  it('untrusted: skips a Python-extension interpreter inside the workspace', async () => {
    const r = await resolveInterpreter(inputs({ trusted: false, pythonExtension: async () => '/work/repo/.venv/bin/python' }));
    assert.deepEqual(r.candidate, { executable: '/usr/bin/python3', source: 'path' });
    assert.ok(r.notes.some((n) => n.includes('untrusted')));
  });

  it('trusted: the workspace venv is fine', async () => {
    const r = await resolveInterpreter(inputs({ trusted: true, pythonExtension: async () => '/work/repo/.venv/bin/python' }));
    assert.equal(r.candidate?.executable, '/work/repo/.venv/bin/python');
  });

  it('untrusted: PATH entries inside the workspace are skipped', async () => {
    const r = await resolveInterpreter(
      inputs({
        trusted: false,
        pathEnv: '/work/repo/bin:/usr/bin',
        isExecutable: (f) => f === '/work/repo/bin/python3' || f === '/usr/bin/python3',
      }),
    );
    assert.equal(r.candidate?.executable, '/usr/bin/python3');
  });

  it('expands ~ and ${workspaceFolder} in the setting', async () => {
    const r = await resolveInterpreter(inputs({ setting: '${workspaceFolder}/.venv/bin/python' }));
    assert.equal(r.candidate?.executable, '/work/repo/.venv/bin/python');
    assert.equal(expandSetting('~/py/bin/python', [], '/home/me'), '/home/me/py/bin/python');
    assert.equal(expandSetting('${userHome}/x', [], '/home/me'), '/home/me/x');
  });
});

describe('findOnPath', () => {
  it('never searches relative PATH entries', () => {
    assert.equal(findOnPath('.:bin:/usr/bin', 'linux', (f) => f === 'bin/python3' || f === 'python3'), undefined);
    assert.equal(findOnPath('.:/usr/bin', 'linux', (f) => f === '/usr/bin/python3'), '/usr/bin/python3');
  });

  it('windows', () => {
    assert.equal(
      findOnPath('C:\\Python311;C:\\Windows', 'win32', (f) => f === 'C:\\Python311\\python.exe'),
      'C:\\Python311\\python.exe',
    );
  });

  it('empty PATH', () => {
    assert.equal(findOnPath(undefined, 'linux', () => true), undefined);
  });
});

describe('the interpreter check', () => {
  it('parses the JSON line, ignoring noise', () => {
    const out = 'some sitecustomize noise\n{"version": [3, 11, 7], "executable": "/usr/bin/python3", "torchtrap": null}\n';
    assert.deepEqual(parseCheckOutput(out), { version: [3, 11, 7], executable: '/usr/bin/python3', torchtrap: null });
    assert.equal(parseCheckOutput('Python 2.7'), undefined);
    assert.equal(parseCheckOutput('{not json'), undefined);
  });

  it('versionOk: >= 3.10', () => {
    assert.equal(versionOk([3, 10, 0]), true);
    assert.equal(versionOk([3, 13]), true);
    assert.equal(versionOk([4, 0]), true);
    assert.equal(versionOk([3, 9, 18]), false);
    assert.equal(versionOk([2, 7]), false);
  });

  const py = (v: [number, number, number], torchtrap: string | null = null): CheckResult => ({
    version: v,
    executable: '/usr/bin/python3',
    torchtrap,
  });
  const cand = { executable: '/usr/bin/python3', source: 'path' as const };
  const bundle = '/ext/bundled/libs';

  it('missing interpreter: says what to do', () => {
    const p = assess(undefined, undefined, 'useBundled', bundle);
    assert.equal(p?.kind, 'missing');
    assert.match(p?.message ?? '', /torchtrap\.interpreter/);
  });

  it('not runnable', () => {
    const p = assess({ executable: '/nope', source: 'setting' }, undefined, 'useBundled', bundle, 'ENOENT');
    assert.equal(p?.kind, 'notRunnable');
    assert.match(p?.message ?? '', /torchtrap\.interpreter \(\/nope\).*ENOENT/);
  });

  it('too old: names the version and the fix', () => {
    const p = assess(cand, py([3, 9, 18], `${bundle}/torchtrap/__init__.py`), 'useBundled', bundle);
    assert.equal(p?.kind, 'tooOld');
    assert.match(p?.message ?? '', /3\.9\.18/);
    assert.match(p?.message ?? '', /3\.10 or newer/);
  });

  it('useBundled: fine when torchtrap comes from the bundle', () => {
    assert.equal(assess(cand, py([3, 11, 7], `${bundle}/torchtrap/__init__.py`), 'useBundled', bundle), undefined);
  });

  it('useBundled: an installed torchtrap elsewhere means the bundle is missing', () => {
    const p = assess(cand, py([3, 11, 7], '/usr/lib/python3/site-packages/torchtrap/__init__.py'), 'useBundled', bundle);
    assert.equal(p?.kind, 'bundleMissing');
  });

  it('fromEnvironment: needs torchtrap installed in the interpreter', () => {
    assert.equal(assess(cand, py([3, 12, 1]), 'fromEnvironment', undefined)?.kind, 'noTorchtrap');
    assert.match(assess(cand, py([3, 12, 1]), 'fromEnvironment', undefined)?.message ?? '', /pip install torchtrap/);
    assert.equal(assess(cand, py([3, 12, 1], '/site/torchtrap/__init__.py'), 'fromEnvironment', undefined), undefined);
  });
});
