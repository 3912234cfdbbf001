// The probe report in a webview of ours, not the markdown preview: the page's stylesheet
// lays the tables out for a half-width side panel (rows become cards when narrow).

import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { plainMarkdownHtml, reportPage } from './report';

export const PROBE_VIEW_TYPE = 'torchtrap.probeReport';

let panel: vscode.WebviewPanel | undefined;

async function renderMarkdown(markdown: string): Promise<string> {
  try {
    // The built-in markdown extension's renderer (the one its preview uses).
    const html = await vscode.commands.executeCommand<unknown>('markdown.api.render', markdown);
    if (typeof html === 'string' && html.trim() !== '') {
      return html;
    }
  } catch {
    // the markdown extension is disabled or missing
  }
  return plainMarkdownHtml(markdown);
}

/** Show (or refresh) the probe report beside the editor. */
export async function showProbeReport(markdown: string, title = 'TorchTrap Probe Report'): Promise<void> {
  const body = await renderMarkdown(markdown);
  if (!panel) {
    panel = vscode.window.createWebviewPanel(
      PROBE_VIEW_TYPE,
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: false, enableFindWidget: true, localResourceRoots: [] },
    );
    panel.onDidDispose(() => {
      panel = undefined;
    });
  } else {
    panel.reveal(vscode.ViewColumn.Beside, true);
  }
  panel.title = title;
  panel.webview.html = reportPage(body, title, randomBytes(16).toString('base64'), panel.webview.cspSource);
}
