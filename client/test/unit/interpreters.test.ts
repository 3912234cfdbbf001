import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { discoverInterpreters, tildify, type DiscoverInputs } from '../../src/interpreters';

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
