import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { launchChanged, parseSeverity, readSettings, shouldNotify, type SettingGetter } from '../../src/settings';

function getter(values: Record<string, unknown>): SettingGetter {
  return (key) => values[key];
}

describe('readSettings', () => {
  it('gives the defaults when nothing is set', () => {
    const s = readSettings(getter({}));
    assert.deepEqual(s.server, {
      enable: true,
      run: 'onType',
      select: [],
      ignore: [],
      severity: {},
      probe: { timeout: 120 },
      showNotifications: 'onError',
      showSyntaxErrors: false,
      diagnosticMode: 'openFilesOnly',
    });
    assert.deepEqual(s.launch, { interpreter: '', importStrategy: 'useBundled' });
    assert.deepEqual(s.problems, []);
  });

  it('maps every setting onto the server options', () => {
    const s = readSettings(
      getter({
        enable: false,
        run: 'onSave',
        select: ['tt1', ' TT202 '],
        ignore: ['TT103'],
        severity: { TT2: 'error', tt101: 'Hint', TT102: 'warn', TT103: 'information' },
        'probe.timeout': 30,
        showNotifications: 'always',
        interpreter: ' /opt/py/bin/python3 ',
        importStrategy: 'fromEnvironment',
        torchVersion: ' 1.8 ',
        showSyntaxErrors: true,
        diagnosticMode: 'workspace',
      }),
    );
    assert.deepEqual(s.server, {
      enable: false,
      run: 'onSave',
      select: ['TT1', 'TT202'],
      ignore: ['TT103'],
      severity: { TT2: 'error', TT101: 'hint', TT102: 'warning', TT103: 'info' },
      probe: { timeout: 30 },
      showNotifications: 'always',
      showSyntaxErrors: true,
      diagnosticMode: 'workspace',
      torchVersion: '1.8',
    });
    assert.deepEqual(s.launch, { interpreter: '/opt/py/bin/python3', importStrategy: 'fromEnvironment' });
    assert.deepEqual(s.problems, []);
  });

  it('the server options are plain JSON without client-only keys', () => {
    const s = readSettings(getter({ interpreter: '/x', importStrategy: 'fromEnvironment' }));
    const json = JSON.parse(JSON.stringify(s.server)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(json).sort(), ['diagnosticMode', 'enable', 'ignore', 'probe', 'run', 'select', 'severity', 'showNotifications', 'showSyntaxErrors']);
  });

  it('replaces invalid values with defaults and says why', () => {
    const s = readSettings(
      getter({
        run: 'sometimes',
        select: 'TT1',
        ignore: ['TT2', 3, ''],
        severity: { TT1: 'fatal', '': 'Error', TT2: 'Warning' },
        'probe.timeout': -5,
        importStrategy: 'download',
        showNotifications: 'loud',
        showSyntaxErrors: 'yes',
        diagnosticMode: 'everything',
      }),
    );
    assert.equal(s.server.run, 'onType');
    assert.equal(s.server.diagnosticMode, 'openFilesOnly');
    assert.deepEqual(s.server.select, []);
    assert.deepEqual(s.server.ignore, ['TT2']);
    assert.deepEqual(s.server.severity, { TT2: 'warning' });
    assert.equal(s.server.probe.timeout, 120);
    assert.equal(s.server.showNotifications, 'onError');
    assert.equal(s.launch.importStrategy, 'useBundled');
    assert.equal(s.problems.length, 11);
    assert.equal(s.server.showSyntaxErrors, false);
    assert.ok(s.problems.some((p) => p.includes('torchtrap.severity') && p.includes('fatal')));
  });

  it('accepts boolean showNotifications', () => {
    assert.equal(readSettings(getter({ showNotifications: false })).server.showNotifications, 'off');
    assert.equal(readSettings(getter({ showNotifications: true })).server.showNotifications, 'always');
  });

  it('maxFileSize only when set, a non-negative number', () => {
    assert.equal(readSettings(getter({ maxFileSize: 2_000_000 })).server.maxFileSize, 2_000_000);
    assert.equal(readSettings(getter({ maxFileSize: 0 })).server.maxFileSize, 0);
    assert.equal('maxFileSize' in readSettings(getter({})).server, false);
    const bad = readSettings(getter({ maxFileSize: -1 }));
    assert.equal('maxFileSize' in bad.server, false);
    assert.equal(bad.problems.length, 1);
  });

  it('torchVersion only when set', () => {
    assert.equal('torchVersion' in readSettings(getter({ torchVersion: '' })).server, false);
    assert.equal('torchVersion' in readSettings(getter({})).server, false);
    assert.equal(readSettings(getter({ torchVersion: 2 })).problems.length, 1);
  });

  it('deduplicates codes', () => {
    assert.deepEqual(readSettings(getter({ select: ['TT1', 'tt1'] })).server.select, ['TT1']);
  });
});

describe('parseSeverity', () => {
  it('knows the spellings', () => {
    assert.equal(parseSeverity('ERROR'), 'error');
    assert.equal(parseSeverity('info'), 'info');
    assert.equal(parseSeverity('Information'), 'info');
    assert.equal(parseSeverity('Hint'), 'hint');
    assert.equal(parseSeverity('loud'), undefined);
    assert.equal(parseSeverity(3), undefined);
  });
});

describe('launchChanged', () => {
  it('restarts only for interpreter or import strategy', () => {
    const a = { interpreter: '', importStrategy: 'useBundled' as const };
    assert.equal(launchChanged(a, { ...a }), false);
    assert.equal(launchChanged(a, { ...a, interpreter: '/usr/bin/python3' }), true);
    assert.equal(launchChanged(a, { ...a, importStrategy: 'fromEnvironment' }), true);
  });
});

describe('shouldNotify', () => {
  it('follows the level', () => {
    assert.equal(shouldNotify('off', 'error'), false);
    assert.equal(shouldNotify('onError', 'error'), true);
    assert.equal(shouldNotify('onError', 'warning'), false);
    assert.equal(shouldNotify('onWarning', 'warning'), true);
    assert.equal(shouldNotify('onWarning', 'info'), false);
    assert.equal(shouldNotify('always', 'info'), true);
  });
});
