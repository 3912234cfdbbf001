// Pure logic: VS Code `torchtrap.*` settings -> what the server receives.
// No `vscode` import here, so the unit tests run in plain Node.

export type RunMode = 'onType' | 'onSave';
/** The names `[tool.torchtrap] severity` uses in pyproject.toml. */
export type SeverityName = 'error' | 'warning' | 'info' | 'hint';
export type ImportStrategy = 'useBundled' | 'fromEnvironment';
export type NotificationLevel = 'off' | 'onError' | 'onWarning' | 'always';
/** Pylance's names: which files' findings are published. */
export type DiagnosticMode = 'openFilesOnly' | 'workspace';

/** The object sent as `initializationOptions` and as `settings.torchtrap`. */
export interface ServerSettings {
  enable: boolean;
  run: RunMode;
  select: string[];
  ignore: string[];
  severity: Record<string, SeverityName>;
  probe: { timeout: number };
  showNotifications: NotificationLevel;
  diagnosticMode: DiagnosticMode;
  /** Where the server keeps its index cache (the extension's storage), never the workspace. */
  cacheDirectory?: string;
  /** Only when set: the project's torch version (e.g. "1.8"). */
  torchVersion?: string;
  /** Only when set: files larger than this many bytes are not linted (0: no limit). */
  maxFileSize?: number;
  /** TT000 "cannot parse" diagnostics (off: the Python extension reports syntax errors). */
  showSyntaxErrors: boolean;
}

/** Settings only the client uses: how to start the server. */
export interface LaunchSettings {
  interpreter: string;
  importStrategy: ImportStrategy;
}

export interface Settings {
  server: ServerSettings;
  launch: LaunchSettings;
  /** Human-readable notes about values that were invalid and replaced. */
  problems: string[];
}

function parseBoolean(value: unknown, fallback: boolean, key: string, problems: string[]): boolean {
  if (typeof value === 'boolean') return value;
  if (value !== undefined && value !== null) problems.push(`torchtrap.${key} must be true or false; using ${fallback}.`);
  return fallback;
}

/** Reads one key below `torchtrap.` (e.g. `probe.timeout`); undefined when unset. */
export type SettingGetter = (key: string) => unknown;

export const DEFAULT_PROBE_TIMEOUT = 120;

export const DEFAULTS: Readonly<ServerSettings & LaunchSettings> = Object.freeze({
  enable: true,
  run: 'onType',
  select: [],
  ignore: [],
  severity: {},
  probe: { timeout: DEFAULT_PROBE_TIMEOUT },
  showNotifications: 'onError',
  showSyntaxErrors: false,
  diagnosticMode: 'openFilesOnly',
  interpreter: '',
  importStrategy: 'useBundled',
});

const SEVERITY_ALIASES: Record<string, SeverityName> = {
  error: 'error',
  err: 'error',
  warning: 'warning',
  warn: 'warning',
  information: 'info',
  info: 'info',
  hint: 'hint',
};

/** `"warn"`, `"WARNING"`, `"Warning"` -> `"warning"`; VS Code's names (`Information`) too. */
export function parseSeverity(value: unknown): SeverityName | undefined {
  if (typeof value !== 'string') {
    return undefined;
  }
  return SEVERITY_ALIASES[value.trim().toLowerCase()];
}

/** Rule codes and prefixes are upper case (`tt2` -> `TT2`); junk entries are dropped. */
export function parseCodeList(value: unknown, key: string, problems: string[]): string[] {
  if (value === undefined || value === null) {
    return [];
  }
  if (!Array.isArray(value)) {
    problems.push(`torchtrap.${key} must be a list of rule codes; ignored.`);
    return [];
  }
  const out: string[] = [];
  for (const item of value) {
    if (typeof item !== 'string' || item.trim() === '') {
      problems.push(`torchtrap.${key}: ignored entry ${JSON.stringify(item)}.`);
      continue;
    }
    const code = item.trim().toUpperCase();
    if (!out.includes(code)) {
      out.push(code);
    }
  }
  return out;
}

export function parseSeverityMap(value: unknown, problems: string[]): Record<string, SeverityName> {
  const out: Record<string, SeverityName> = {};
  if (value === undefined || value === null) {
    return out;
  }
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.push('torchtrap.severity must be an object like {"TT2": "error"}; ignored.');
    return out;
  }
  for (const [code, sev] of Object.entries(value as Record<string, unknown>)) {
    const name = parseSeverity(sev);
    if (code.trim() === '' || name === undefined) {
      problems.push(
        `torchtrap.severity: ignored ${JSON.stringify(code)}: ${JSON.stringify(sev)} ` +
          '(use error, warning, info or hint).',
      );
      continue;
    }
    out[code.trim().toUpperCase()] = name;
  }
  return out;
}

function oneOf<T extends string>(
  value: unknown,
  allowed: readonly T[],
  fallback: T,
  key: string,
  problems: string[],
): T {
  if (value === undefined || value === null) {
    return fallback;
  }
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) {
    return value as T;
  }
  problems.push(`torchtrap.${key}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}; using ${fallback}.`);
  return fallback;
}

function parseTimeout(value: unknown, problems: string[]): number {
  if (value === undefined || value === null) {
    return DEFAULT_PROBE_TIMEOUT;
  }
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) {
    return value;
  }
  problems.push(`torchtrap.probe.timeout must be a positive number of seconds; using ${DEFAULT_PROBE_TIMEOUT}.`);
  return DEFAULT_PROBE_TIMEOUT;
}

function parseNotifications(value: unknown, problems: string[]): NotificationLevel {
  // Accept booleans too, as older configurations and other editors use them.
  if (value === true) {
    return 'always';
  }
  if (value === false) {
    return 'off';
  }
  return oneOf(value, ['off', 'onError', 'onWarning', 'always'] as const, 'onError', 'showNotifications', problems);
}

/** Normalise the raw `torchtrap.*` values into what the server and the launcher need. */
export function readSettings(get: SettingGetter): Settings {
  const problems: string[] = [];
  const enable = get('enable');
  const interpreter = get('interpreter');
  const server: ServerSettings = {
    enable: typeof enable === 'boolean' ? enable : DEFAULTS.enable,
    run: oneOf(get('run'), ['onType', 'onSave'] as const, 'onType', 'run', problems),
    select: parseCodeList(get('select'), 'select', problems),
    ignore: parseCodeList(get('ignore'), 'ignore', problems),
    severity: parseSeverityMap(get('severity'), problems),
    probe: { timeout: parseTimeout(get('probe.timeout'), problems) },
    showNotifications: parseNotifications(get('showNotifications'), problems),
    showSyntaxErrors: parseBoolean(get('showSyntaxErrors'), DEFAULTS.showSyntaxErrors, 'showSyntaxErrors', problems),
    diagnosticMode: oneOf(get('diagnosticMode'), ['openFilesOnly', 'workspace'] as const, 'openFilesOnly', 'diagnosticMode', problems),
  };
  const torchVersion = get('torchVersion');
  if (typeof torchVersion === 'string' && torchVersion.trim() !== '') {
    server.torchVersion = torchVersion.trim();
  } else if (torchVersion !== undefined && torchVersion !== null && torchVersion !== '') {
    problems.push('torchtrap.torchVersion must be a version string like "2.4"; ignored.');
  }
  const maxFileSize = get('maxFileSize');
  if (typeof maxFileSize === 'number' && Number.isFinite(maxFileSize) && maxFileSize >= 0) {
    server.maxFileSize = Math.floor(maxFileSize);
  } else if (maxFileSize !== undefined && maxFileSize !== null) {
    problems.push('torchtrap.maxFileSize must be a number of bytes (0: no limit); using the server default.');
  }
  const launch: LaunchSettings = {
    interpreter: typeof interpreter === 'string' ? interpreter.trim() : '',
    importStrategy: oneOf(
      get('importStrategy'),
      ['useBundled', 'fromEnvironment'] as const,
      'useBundled',
      'importStrategy',
      problems,
    ),
  };
  return { server, launch, problems };
}

/** Keys whose change needs a new server process (the others are pushed to the running one). */
export const RESTART_KEYS = ['torchtrap.interpreter', 'torchtrap.importStrategy'] as const;

/** True when the launch settings differ, i.e. the server must be restarted. */
export function launchChanged(a: LaunchSettings, b: LaunchSettings): boolean {
  return a.interpreter !== b.interpreter || a.importStrategy !== b.importStrategy;
}

/** Whether a notification of this kind should be shown under the user's level. */
export function shouldNotify(level: NotificationLevel, kind: 'error' | 'warning' | 'info'): boolean {
  switch (level) {
    case 'off':
      return false;
    case 'onError':
      return kind === 'error';
    case 'onWarning':
      return kind === 'error' || kind === 'warning';
    case 'always':
      return true;
  }
}
