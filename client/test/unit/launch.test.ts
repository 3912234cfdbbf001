import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildLaunch, bundledLibsDir } from '../../src/launch';

describe('buildLaunch', () => {
  const base = {
    python: '/usr/bin/python3',
    bundledLibs: '/ext/bundled/libs',
    safeCwd: '/ext',
    platform: 'linux' as const,
  };

  it('useBundled prepends the bundled libs to PYTHONPATH', () => {
    const l = buildLaunch({ ...base, strategy: 'useBundled', baseEnv: { PATH: '/usr/bin', PYTHONPATH: '/mine' } });
    assert.equal(l.command, '/usr/bin/python3');
    assert.deepEqual(l.args, ['-m', 'torchtrap', 'lsp']);
    assert.equal(l.env.PYTHONPATH, '/ext/bundled/libs:/mine');
    assert.equal(l.env.PATH, '/usr/bin');
  });

  it('useBundled without a PYTHONPATH', () => {
    const l = buildLaunch({ ...base, strategy: 'useBundled', baseEnv: {} });
    assert.equal(l.env.PYTHONPATH, '/ext/bundled/libs');
  });

  it('fromEnvironment leaves PYTHONPATH alone', () => {
    assert.equal(buildLaunch({ ...base, strategy: 'fromEnvironment', baseEnv: {} }).env.PYTHONPATH, undefined);
    assert.equal(buildLaunch({ ...base, strategy: 'fromEnvironment', baseEnv: { PYTHONPATH: '/mine' } }).env.PYTHONPATH, '/mine');
  });

  it('never starts in the workspace, so the workspace cannot shadow torchtrap', () => {
    const l = buildLaunch({ ...base, strategy: 'fromEnvironment', baseEnv: {} });
    assert.equal(l.cwd, '/ext');
    assert.equal(l.env.PYTHONSAFEPATH, '1');
  });

  it('windows uses ; in PYTHONPATH', () => {
    const l = buildLaunch({ ...base, platform: 'win32', strategy: 'useBundled', baseEnv: { PYTHONPATH: 'C:\\mine' } });
    assert.equal(l.env.PYTHONPATH, '/ext/bundled/libs;C:\\mine');
  });

  it('does not modify the base environment', () => {
    const env = { PYTHONPATH: '/mine' };
    buildLaunch({ ...base, strategy: 'useBundled', baseEnv: env });
    assert.deepEqual(env, { PYTHONPATH: '/mine' });
  });

  it('bundled libs live in bundled/libs', () => {
    assert.match(bundledLibsDir('/ext'), /bundled[\\/]libs$/);
  });
});
