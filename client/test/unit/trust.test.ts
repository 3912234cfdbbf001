import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { effectiveValue, isInside, mayRunDiscovered, trustedGetter, type Inspected } from '../../src/trust';

describe('effectiveValue', () => {
  const inspected: Inspected<string> = {
    defaultValue: '',
    globalValue: '/usr/bin/python3',
    workspaceValue: './evil/python',
    workspaceFolderValue: './evil2/python',
  };

  it('trusted: the most specific scope wins', () => {
    assert.deepEqual(effectiveValue(inspected, true), { value: './evil2/python', ignoredWorkspaceValue: false });
    assert.equal(effectiveValue({ defaultValue: '', workspaceValue: 'w' }, true).value, 'w');
  });

  it('untrusted: workspace and folder values are ignored', () => {
    assert.deepEqual(effectiveValue(inspected, false), { value: '/usr/bin/python3', ignoredWorkspaceValue: true });
    assert.deepEqual(effectiveValue({ defaultValue: 'useBundled', workspaceValue: 'fromEnvironment' }, false), {
      value: 'useBundled',
      ignoredWorkspaceValue: true,
    });
    assert.deepEqual(effectiveValue({ defaultValue: '' }, false), { value: '', ignoredWorkspaceValue: false });
  });
});

describe('trustedGetter', () => {
  const table: Record<string, Inspected<unknown>> = {
    interpreter: { defaultValue: '', globalValue: '/home/me/py', workspaceValue: '/tmp/repo/bin/sh' },
    importStrategy: { defaultValue: 'useBundled', workspaceFolderValue: 'fromEnvironment' },
    run: { defaultValue: 'onType', workspaceValue: 'onSave' },
  };
  const merged: Record<string, unknown> = { interpreter: '/tmp/repo/bin/sh', importStrategy: 'fromEnvironment', run: 'onSave' };

  it('untrusted: restricted keys come from user settings only; the rest are untouched', () => {
    const ignored: string[] = [];
    const get = trustedGetter((k) => table[k], (k) => merged[k], false, ignored);
    assert.equal(get('interpreter'), '/home/me/py');
    assert.equal(get('importStrategy'), 'useBundled');
    assert.equal(get('run'), 'onSave');
    assert.deepEqual(ignored.sort(), ['importStrategy', 'interpreter']);
  });

  it('trusted: everything as VS Code merges it', () => {
    const ignored: string[] = [];
    const get = trustedGetter((k) => table[k], (k) => merged[k], true, ignored);
    assert.equal(get('interpreter'), '/tmp/repo/bin/sh');
    assert.equal(get('importStrategy'), 'fromEnvironment');
    assert.deepEqual(ignored, []);
  });
});

describe('isInside / mayRunDiscovered', () => {
  it('posix paths', () => {
    assert.equal(isInside('/work/repo/.venv/bin/python', ['/work/repo'], 'linux'), true);
    assert.equal(isInside('/work/repo', ['/work/repo'], 'linux'), true);
    assert.equal(isInside('/work/repo2/bin/python', ['/work/repo'], 'linux'), false);
    assert.equal(isInside('/work/repo/../other/python', ['/work/repo'], 'linux'), false);
    assert.equal(isInside('/usr/bin/python3', ['/work/a', '/work/b'], 'linux'), false);
  });

  it('windows paths are case-insensitive', () => {
    assert.equal(isInside('C:\\Repo\\.venv\\Scripts\\python.exe', ['c:\\repo'], 'win32'), true);
    assert.equal(isInside('D:\\Python\\python.exe', ['c:\\repo'], 'win32'), false);
  });

  it('an interpreter inside an untrusted workspace may not run', () => {
    assert.equal(mayRunDiscovered('/work/repo/.venv/bin/python', false, ['/work/repo'], 'linux'), false);
    assert.equal(mayRunDiscovered('/work/repo/.venv/bin/python', true, ['/work/repo'], 'linux'), true);
    assert.equal(mayRunDiscovered('/usr/bin/python3', false, ['/work/repo'], 'linux'), true);
  });
});
