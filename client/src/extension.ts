// TorchTrap for VS Code: a thin client. Everything that analyses code runs in the
// Python server (`python -m torchtrap lsp`), bundled in the vsix.

import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { effectiveSettings } from './config';
import * as pythonExtension from './pythonExtension';
import { TorchTrapServer } from './server';
import { StatusItem } from './statusItem';

let server: TorchTrapServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const t0 = Date.now();
  const log = vscode.window.createOutputChannel('TorchTrap', { log: true });
  context.subscriptions.push(log);
  const status = new StatusItem();
  context.subscriptions.push(status);

  const srv = new TorchTrapServer(context, log);
  server = srv;
  context.subscriptions.push(srv, srv.onDidChangeState((s) => status.update(s)));
  registerCommands(context, srv);

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => void srv.onConfigurationChanged(e)),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void srv.restart('workspace trusted')),
  );
  void pythonExtension.onDidChangeInterpreter(() => {
    // Only matters when torchtrap.interpreter does not pin one.
    if (effectiveSettings().launch.interpreter === '') {
      void srv.restart('Python extension interpreter changed');
    }
  }).then((d) => d && context.subscriptions.push(d));

  log.info(`TorchTrap ${String(context.extension.packageJSON.version)} activated in ${Date.now() - t0} ms.`);
  // Do not make activation wait for Python: the server comes up in the background.
  void srv.restart('activation');
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
