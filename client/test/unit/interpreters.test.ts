import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import {
  discoverInterpreters,
  parseProbe,
  pickerEntries,
  PROBE_SCRIPT,
  tildify,
  type DiscoverInputs,
  type FoundInterpreter,
  type ProbeResult,
} from '../../src/interpreters';

function inputs(files: string[], over: Partial<DiscoverInputs> = {}): DiscoverInputs {
  const set = new Set(files);
  return {
    known: [],
    workspaceFolders: ['/work/repo'],
    homeDir: '/home/me',
    env: { PATH: '/usr/local/bin:/usr/bin:relative/bin' },
    platform: 'linux',
    trusted: true,
    isExecutable: (f) => set.has(f),
    listDirs: (dir) => {
      const names = new Set<string>();
      for (const f of set) {
        if (f.startsWith(`${dir}/`)) names.add(f.slice(dir.length + 1).split('/')[0] ?? '');
      }
      return [...names];
    },
    ...over,
  };
}

describe('discoverInterpreters', () => {
  it('finds venvs, conda, pyenv and PATH the usual ways, in that order, once each', () => {
    const found = discoverInterpreters(
      inputs(
        [
          '/work/repo/.venv/bin/python', // a workspace venv (no python3 link)
          '/home/me/.virtualenvs/torch/bin/python3',
          '/home/me/.virtualenvs/torch/bin/python',
          '/home/me/miniconda3/bin/python3',
          '/home/me/miniconda3/envs/gpu/bin/python3',
          '/home/me/.pyenv/versions/3.11.9/bin/python3',
          '/usr/bin/python3',
          '/usr/bin/python',
        ],
        { known: ['/home/me/.virtualenvs/torch/bin/python3', '/opt/ext/env/bin/python'] },
      ),
    );
    assert.deepEqual(
      found.map((f) => [f.source, f.executable, f.name]),
      [
        ['Python extension', '/home/me/.virtualenvs/torch/bin/python3', 'torch'],
        ['workspace', '/work/repo/.venv/bin/python', '.venv'],
        ['conda', '/home/me/miniconda3/bin/python3', 'miniconda3 (base)'],
        ['conda', '/home/me/miniconda3/envs/gpu/bin/python3', 'gpu'],
        ['pyenv', '/home/me/.pyenv/versions/3.11.9/bin/python3', '3.11.9'],
        ['PATH', '/usr/bin/python3', '/usr/bin/python3'],
        ['PATH', '/usr/bin/python', '/usr/bin/python'],
      ],
    );
  });

  it('offers the active environment and WORKON_HOME / PYENV_ROOT', () => {
    const found = discoverInterpreters(
      inputs(['/envs/active/bin/python3', '/w/proj/bin/python3', '/py/versions/3.12.1/bin/python3'], {
        env: { VIRTUAL_ENV: '/envs/active', WORKON_HOME: '/w', PYENV_ROOT: '/py' },
      }),
    );
    assert.deepEqual(
      found.map((f) => f.source),
      ['active environment', 'virtualenv', 'pyenv'],
    );
  });

  it('offers nothing inside an untrusted workspace, and no relative PATH entries', () => {
    const files = ['/work/repo/.venv/bin/python3', 'relative/bin/python3', '/usr/bin/python3'];
    const found = discoverInterpreters(inputs(files, { trusted: false, known: ['/work/repo/.venv/bin/python3'] }));
    assert.deepEqual(
      found.map((f) => f.executable),
      ['/usr/bin/python3'],
    );
  });

  it('lists versions in version order (3.6 before 3.10)', () => {
    const found = discoverInterpreters(inputs(['/home/me/.pyenv/versions/3.10.13/bin/python3', '/home/me/.pyenv/versions/3.6.15/bin/python3']));
    assert.deepEqual(
      found.map((f) => f.name),
      ['3.6.15', '3.10.13'],
    );
  });

  it('uses Scripts\\python.exe on Windows', () => {
    const found = discoverInterpreters(
      inputs(['C:\\repo\\.venv\\Scripts\\python.exe'], { platform: 'win32', workspaceFolders: ['C:\\repo'], homeDir: 'C:\\Users\\me', env: {} }),
    );
    assert.deepEqual(
      found.map((f) => f.executable),
      ['C:\\repo\\.venv\\Scripts\\python.exe'],
    );
  });
});

describe('tildify', () => {
  it('shortens the home folder only at a path boundary', () => {
    assert.equal(tildify('/home/me/x/bin/python', '/home/me'), '~/x/bin/python');
    assert.equal(tildify('/home/meme/python', '/home/me'), '/home/meme/python');
  });
});

describe('pickerEntries (issue 35 item 6)', () => {
  const found: FoundInterpreter[] = [
    { executable: '/usr/bin/python2', source: 'PATH', name: '/usr/bin/python2' },
    { executable: '/home/me/.pyenv/versions/3.9.18/bin/python3', source: 'pyenv', name: '3.9.18' },
    { executable: '/home/me/plain/bin/python3', source: 'virtualenv', name: 'plain' },
    { executable: '/home/me/torch/bin/python3', source: 'virtualenv', name: 'torch' },
    { executable: '/broken/bin/python3', source: 'PATH', name: '/broken/bin/python3' },
  ];
  const probes = new Map<string, ProbeResult | undefined>([
    ['/usr/bin/python2', { version: [2, 7, 18], torch: null }],
    ['/home/me/.pyenv/versions/3.9.18/bin/python3', { version: [3, 9, 18], torch: '1.13.1' }],
    ['/home/me/plain/bin/python3', { version: [3, 12, 3], torch: null }],
    ['/home/me/torch/bin/python3', { version: [3, 11, 9], torch: '2.13.0' }],
    ['/broken/bin/python3', undefined],
  ]);
  const entries = pickerEntries(found, probes, '/home/me/plain/bin/python3', '/home/me', [3, 10]);

  it('offers the interpreters the server can run first, those with torch before those without', () => {
    assert.deepEqual(
      entries.map((e) => [e.label, e.usable]),
      [
        ['torch', true],
        ['plain', true],
        ['/usr/bin/python2', false],
        ['3.9.18', false],
        ['/broken/bin/python3', false],
      ],
    );
  });

  it('says which have torch, and which Python each is', () => {
    assert.equal(entries[0]?.description, 'virtualenv · Python 3.11.9 · torch 2.13.0');
    assert.equal(entries[1]?.description, 'virtualenv · Python 3.12.3 · no torch (the probe and Run need it) · current');
    assert.equal(entries[0]?.detail, '~/torch/bin/python3');
  });

  it('marks Python < 3.10 and those that did not run, saying why', () => {
    assert.equal(entries[2]?.description, 'PATH · Python 2.7.18: too old (needs 3.10+)');
    assert.equal(entries[2]?.reason, 'it is Python 2.7.18; TorchTrap needs 3.10 or newer');
    assert.match(entries[3]?.description ?? '', /Python 3\.9\.18: too old/);
    assert.equal(entries[4]?.description, 'PATH · could not run it');
  });
});

describe('PROBE_SCRIPT', () => {
  it('prints a version and torch (or null) that parseProbe reads', () => {
    let out = '';
    try {
      out = execFileSync('python3', ['-c', PROBE_SCRIPT], { encoding: 'utf8', timeout: 20_000 });
    } catch {
      return; // no python3 here: the parse is covered below
    }
    const probe = parseProbe(out);
    assert.ok(probe && probe.version[0] === 3, out);
    assert.ok(probe.torch === null || typeof probe.torch === 'string');
  });

  it('parses the last JSON line, ignoring noise', () => {
    assert.deepEqual(parseProbe('warning: x\n{"version": [3, 11, 2], "torch": "2.3.0"}\n'), { version: [3, 11, 2], torch: '2.3.0' });
    assert.deepEqual(parseProbe('{"version": [2, 7, 18], "torch": null}'), { version: [2, 7, 18], torch: null });
    assert.equal(parseProbe('Traceback ...'), undefined);
  });
});
