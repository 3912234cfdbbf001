// The extension manifest (package.json) as users meet it: settings, commands, menus.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseSeverity } from '../../src/settings';

// out/client/test/unit -> repo root
const ROOT = path.resolve(__dirname, '../../../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const properties: Record<string, Record<string, unknown>> = manifest.contributes.configuration.properties;

type Schema = { enum?: unknown[]; enumDescriptions?: unknown[]; markdownEnumDescriptions?: unknown[]; [k: string]: unknown };

/** Every schema with an `enum`, anywhere below `schema`. */
function enums(schema: unknown, where: string, out: [string, Schema][] = []): [string, Schema][] {
  if (schema && typeof schema === 'object') {
    const s = schema as Schema;
    if (Array.isArray(s.enum)) {
      out.push([where, s]);
    }
    for (const [k, v] of Object.entries(s)) {
      if (k !== 'enum' && !k.endsWith('numDescriptions')) {
        enums(v, `${where}.${k}`, out);
      }
    }
  }
  return out;
}

describe('package.json settings', () => {
  it('describes every enum value', () => {
    const found = enums(properties, 'settings');
    assert.ok(found.length >= 7, `only ${found.length} enums`);
    for (const [where, s] of found) {
      const descriptions = s.enumDescriptions ?? s.markdownEnumDescriptions ?? (s.deprecationMessage ? s.enum : undefined);
      assert.equal(descriptions?.length, s.enum?.length, `${where}: ${JSON.stringify(s.enum)} lacks descriptions`);
    }
  });
  it('documents the pyproject.toml severity names and the client reads each', () => {
    const values = properties['torchtrap.severity'] as { additionalProperties: { anyOf: Schema[] } };
    const [documented, accepted] = values.additionalProperties.anyOf;
    assert.deepEqual(documented?.enum, ['error', 'warning', 'info', 'hint']);
    for (const name of [...(documented?.enum ?? []), ...(accepted?.enum ?? [])]) {
      assert.ok(parseSeverity(name), `${String(name)} is not read`);
    }
  });
  it('offers rule codes and their groups in select and ignore', () => {
    for (const key of ['torchtrap.select', 'torchtrap.ignore']) {
      const items = (properties[key] as { items: Schema }).items;
      assert.ok(items.enum?.includes('TT101') && items.enum.includes('TT1') && items.enum.includes('TT202'), key);
    }
  });
});

describe('package.json commands', () => {
  it('offers Fix All in notebooks as well as Python files', () => {
    const entry = manifest.contributes.menus.commandPalette.find((m: { command: string }) => m.command === 'torchtrap.vscode.fixAll');
    const command = manifest.contributes.commands.find((c: { command: string }) => c.command === 'torchtrap.vscode.fixAll');
    for (const when of [entry.when as string, command.enablement as string]) {
      assert.match(when, /editorLangId == python/);
      assert.match(when, /notebookType == jupyter-notebook/); // focus in the notebook
      assert.match(when, /activeEditor == workbench\.editor\.notebook/); // focus elsewhere
    }
  });
  it('offers Run File with Checks only in trusted workspaces, for Python files', () => {
    const entry = manifest.contributes.menus.commandPalette.find((m: { command: string }) => m.command === 'torchtrap.vscode.runFile');
    const command = manifest.contributes.commands.find((c: { command: string }) => c.command === 'torchtrap.vscode.runFile');
    assert.equal(command.title, 'Run File with Checks');
    for (const when of [entry.when as string, command.enablement as string]) {
      assert.match(when, /^isWorkspaceTrusted && /);
      assert.match(when, /editorLangId == python/);
    }
    const report = manifest.contributes.commands.find((c: { command: string }) => c.command === 'torchtrap.vscode.showRunReport');
    assert.equal(report.title, 'Show Run Report…');
  });
});
