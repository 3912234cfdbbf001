// Owns the language client: resolve the interpreter, check it, start, stop, restart,
// and push settings. All analysis stays in the Python server.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { effectiveSettings, type EffectiveSettings } from './config';
import {
  assess,
  CHECK_SCRIPT,
  formatVersion,
  parseCheckOutput,
  resolveInterpreter,
  type Candidate,
  type CheckResult,
  type InterpreterProblem,
} from './interpreter';
import { buildLaunch, bundledLibsDir } from './launch';
import { classifyStderrLine } from './logs';
import * as pythonExtension from './pythonExtension';
import { launchChanged, shouldNotify, type ServerSettings } from './settings';
import type { ServerState } from './status';
import { TraceChannel } from './traceChannel';
import * as readline from 'node:readline';

export const CLIENT_ID = 'torchtrap';

export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
  { scheme: 'vscode-notebook-cell', language: 'python' },
];

const CHECK_TIMEOUT_MS = 20_000;

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function runCheck(python: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ check?: CheckResult; error?: string }> {
  return new Promise((resolve) => {
    execFile(python, ['-c', CHECK_SCRIPT], { env, cwd, timeout: CHECK_TIMEOUT_MS, windowsHide: true }, (err, stdout, stderr) => {
      const check = parseCheckOutput(String(stdout));
      if (check) {
        resolve({ check });
      } else {
        const code = (err as NodeJS.ErrnoException | null)?.code;
        const why =
          code === 'ENOENT'
            ? 'no such file'
            : code === 'EACCES'
              ? 'not executable'
              : (err as { killed?: boolean } | null)?.killed
                ? `no answer within ${CHECK_TIMEOUT_MS / 1000} s`
                : String(stderr).trim().split('\n').pop() || err?.message || 'no output';
        resolve({ error: why });
      }
    });
  });
}

export class TorchTrapServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly notified = new Set<string>();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private current: ServerState = { phase: 'stopped' };
  private settings: EffectiveSettings | undefined;
  private startedAt = 0;
  private readonly traceChannel: TraceChannel;

  readonly onDidChangeState = this.stateEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
  ) {
    this.traceChannel = new TraceChannel(log);
  }

  get state(): ServerState {
    return this.current;
  }

  private setState(state: ServerState): void {
    this.current = state;
    this.stateEmitter.fire(state);
  }

  /** Start, or restart when running. Calls are serialised. */
  restart(reason: string): Promise<void> {
    this.queue = this.queue
      .then(async () => {
        this.log.info(`${this.client ? 'Restarting' : 'Starting'} the server (${reason}).`);
        await this.stopClient();
        await this.startClient();
      })
      .catch((err: unknown) => {
        this.log.error(`Server start failed: ${String(err)}`);
        this.setState({ ...this.current, phase: 'error', message: String(err) });
      });
    return this.queue;
  }

  stop(): Promise<void> {
    this.queue = this.queue.then(() => this.stopClient()).catch(() => undefined);
    return this.queue;
  }

  /**
   * Restart unless the server already runs with the current launch settings (a settings
   * change may have restarted it already); resolves once it is up (or failed).
   */
  async ensureLaunchCurrent(reason: string): Promise<void> {
    await this.queue;
    const now = effectiveSettings();
    if (!this.settings || launchChanged(this.settings.launch, now.launch)) {
      await this.restart(reason);
    }
  }

  /** The running client, or an error explaining why there is none. */
  async runningClient(): Promise<LanguageClient> {
    await this.queue;
    if (!this.client || this.client.state !== State.Running) {
      throw new Error(this.current.message ?? 'The TorchTrap server is not running.');
    }
    return this.client;
  }

  async executeCommand<T = unknown>(command: string, args: unknown[], token?: vscode.CancellationToken, workDoneToken?: string): Promise<T> {
    const client = await this.runningClient();
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args, workDoneToken }, token)) as T;
  }

  serverSettings(scope?: vscode.Uri): ServerSettings {
    return this.withStorage(effectiveSettings(scope).server);
  }

  /**
   * The settings the server gets, with where to keep its index cache: this extension's
   * storage for the workspace (global storage without one), never the user's project.
   */
  private withStorage(settings: ServerSettings): ServerSettings {
    const storage = this.context.storageUri ?? this.context.globalStorageUri;
    return { ...settings, cacheDirectory: vscode.Uri.joinPath(storage, 'index').fsPath };
  }

  /** A `torchtrap.*` setting changed: restart for launch settings, else push to the server. */
  async onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration('torchtrap')) {
      return;
    }
    const before = this.settings;
    const now = effectiveSettings();
    if (!before || before.launch.interpreter !== now.launch.interpreter || before.launch.importStrategy !== now.launch.importStrategy) {
      await this.restart('settings changed');
      return;
    }
    this.settings = now;
    this.reportProblems(now);
    const client = this.client;
    if (client && client.state === State.Running) {
      this.log.info(`Settings changed: ${JSON.stringify(now.server)}`);
      await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { torchtrap: this.withStorage(now.server) } });
      this.setState({ ...this.current, phase: now.server.enable ? 'running' : 'disabled' });
    }
  }

  private reportProblems(settings: EffectiveSettings): void {
    for (const p of settings.problems) {
      this.log.warn(p);
    }
    if (settings.ignoredWorkspaceKeys.length > 0) {
      this.log.warn(
        `Untrusted workspace: ignoring ${settings.ignoredWorkspaceKeys.map((k) => `torchtrap.${k}`).join(', ')} from workspace settings.`,
      );
    }
  }

  private notifyOnce(problem: InterpreterProblem, key: string): void {
    this.log.error(problem.message);
    const level = this.settings?.server.showNotifications ?? 'onError';
    if (this.notified.has(key) || !shouldNotify(level, 'error')) {
      return;
    }
    this.notified.add(key);
    const actions = ['Open Settings', 'Show Logs'];
    if (problem.kind !== 'noTorchtrap' && problem.kind !== 'bundleMissing') {
      actions.unshift('Select Interpreter');
    }
    void vscode.window.showErrorMessage(problem.message, ...actions).then((choice) => {
      if (choice === 'Open Settings') {
        const key = problem.kind === 'noTorchtrap' ? 'torchtrap.importStrategy' : 'torchtrap.interpreter';
        void vscode.commands.executeCommand('workbench.action.openSettings', key);
      } else if (choice === 'Show Logs') {
        this.log.show();
      } else if (choice === 'Select Interpreter') {
        void vscode.commands.executeCommand('torchtrap.vscode.selectInterpreter');
      }
    });
  }

  private async startClient(): Promise<void> {
    this.startedAt = Date.now();
    const settings = effectiveSettings();
    this.settings = settings;
    this.reportProblems(settings);
    const trusted = vscode.workspace.isTrusted;
    const restricted = !trusted;
    const strategy = settings.launch.importStrategy;
    this.setState({ phase: 'starting', strategy, restricted });

    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const resolution = await resolveInterpreter({
      setting: settings.launch.interpreter,
      pythonExtension: () => pythonExtension.activeInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri),
      pathEnv: process.env.PATH,
      platform: process.platform,
      isExecutable,
      trusted,
      workspaceFolders: folders,
      homeDir: os.homedir(),
    });
    resolution.notes.forEach((n) => this.log.info(n));
    const candidate: Candidate | undefined = resolution.candidate;
    const bundleDir = bundledLibsDir(this.context.extensionPath);
    let check: CheckResult | undefined;
    let runError: string | undefined;
    let launch;
    if (candidate) {
      this.log.info(`Interpreter: ${candidate.executable} (from ${candidate.source}); import strategy: ${strategy}.`);
      launch = buildLaunch({
        python: candidate.executable,
        strategy,
        bundledLibs: bundleDir,
        safeCwd: this.context.extensionPath,
        baseEnv: process.env,
        platform: process.platform,
      });
      ({ check, error: runError } = await runCheck(candidate.executable, launch.env, launch.cwd));
    }
    const interpreter = candidate
      ? { executable: candidate.executable, source: candidate.source, version: check ? formatVersion(check.version) : undefined }
      : undefined;
    const problem = assess(candidate, check, strategy, strategy === 'useBundled' ? bundleDir : undefined, runError);
    if (problem || !launch || !check || !candidate) {
      const p = problem ?? { kind: 'notRunnable' as const, message: 'TorchTrap could not start.' };
      this.setState({ phase: 'error', interpreter, strategy, restricted, message: p.message });
      this.notifyOnce(p, `${p.kind}:${candidate?.executable ?? ''}`);
      return;
    }
    this.log.info(`Python ${formatVersion(check.version)} at ${check.executable}; torchtrap from ${check.torchtrap}.`);
    this.warnAboutNativeLibs(check, strategy, bundleDir);

    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { cwd: launch.cwd, env: launch.env },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.log,
      traceOutputChannel: this.traceChannel,
      stdioOptions: {
        stdout: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity }).on('line', (line) => channel.info(line));
        },
        stderr: (input, channel) => {
          readline.createInterface({ input, crlfDelay: Infinity }).on('line', (line) => {
            channel[classifyStderrLine(line)](`[server] ${line}`);
          });
        },
      },
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: this.withStorage(settings.server),
      diagnosticCollectionName: CLIENT_ID,
      middleware: {
        workspace: {
          // Pull model: answer `workspace/configuration` for `torchtrap` with the
          // normalised, trust-filtered settings the server expects.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) {
              return result;
            }
            return result.map((value: unknown, i: number) => {
              const item = params.items[i];
              if (item?.section !== 'torchtrap') {
                return value;
              }
              return this.serverSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined);
            });
          },
        },
      },
    };
    const client = new LanguageClient(CLIENT_ID, 'TorchTrap', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running) {
        this.setState({ phase: settings.server.enable ? 'running' : 'disabled', interpreter, strategy, restricted });
      } else if (e.newState === State.Stopped) {
        this.setState({ phase: 'stopped', interpreter, strategy, restricted, message: 'The server stopped. Run "TorchTrap: Restart Server".' });
      } else {
        this.setState({ phase: 'starting', interpreter, strategy, restricted });
      }
    });
    try {
      await client.start();
    } catch (err) {
      const message = `The TorchTrap server failed to start: ${String(err)}`;
      this.setState({ phase: 'error', interpreter, strategy, restricted, message });
      this.notifyOnce({ kind: 'notRunnable', message }, `start:${candidate.executable}`);
      return;
    }
    this.log.info(`Server ready in ${Date.now() - this.startedAt} ms.`);
    this.setState({ phase: settings.server.enable ? 'running' : 'disabled', interpreter, strategy, restricted });
  }

  /** libcst (used to build structural fixes) is native; the bundle has it for CPython 3.10–3.13 only. */
  private warnAboutNativeLibs(check: CheckResult, strategy: string, bundleDir: string): void {
    if (strategy !== 'useBundled') {
      return;
    }
    const [major, minor] = check.version;
    let names: string[] = [];
    try {
      names = fs.readdirSync(`${bundleDir}/libcst`);
    } catch {
      return;
    }
    const tag = `cpython-${major}${minor}`;
    if (!names.some((n) => n.startsWith('native.') && n.includes(tag)) && names.some((n) => n.startsWith('native.'))) {
      this.log.warn(
        `The bundled libcst has no native module for Python ${major}.${minor}: diagnostics work, structural quick fixes (TT105, TT106) do not. ` +
          'Use Python 3.10–3.13, or pip install torchtrap and set torchtrap.importStrategy to fromEnvironment.',
      );
    }
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.log.warn(`Stopping the server: ${String(err)}`);
      }
      try {
        await client.dispose();
      } catch {
        // already gone
      }
    }
  }

  dispose(): void {
    void this.stopClient();
    this.stateEmitter.dispose();
    this.traceChannel.dispose();
  }
}
