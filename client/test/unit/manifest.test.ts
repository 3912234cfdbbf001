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

/** VS Code's Settings UI edits an object setting only when every value schema is simple. */
function renderable(schema: Record<string, unknown>): boolean {
  const values = [...Object.values((schema.properties ?? {}) as Record<string, Schema>), ...Object.values((schema.patternProperties ?? {}) as Record<string, Schema>)];
  const extra = schema.additionalProperties;
  if (extra === true || extra === undefined) return false;
  if (extra && typeof extra === 'object') values.push(extra as Schema);
  return values.flatMap((v) => (Array.isArray(v.anyOf) ? (v.anyOf as Schema[]) : [v])).every((v) => ['string', 'boolean', 'integer', 'number'].includes(String(v.type)));
}

describe('package.json: editable in the Settings UI', () => {
  it('torchtrap.severity has one described key per rule code and prefix, each with the four severities', () => {
    const severity = properties['torchtrap.severity'] as { properties: Record<string, Schema>; additionalProperties: Schema };
    const codes = (properties['torchtrap.select'] as { items: Schema }).items.enum as string[];
    assert.deepEqual(Object.keys(severity.properties), codes);
    for (const [code, value] of Object.entries(severity.properties)) {
      assert.deepEqual(value.enum, ['error', 'warning', 'info', 'hint'], code);
      assert.equal(value.type, 'string', code);
      assert.ok(typeof value.description === 'string' && value.description.length > 10, `${code} has no description`);
    }
    assert.match(String(severity.properties.TT101?.description), /^stored-rng-in-dataset: /);
    assert.ok(renderable(severity), 'the Settings UI would say "Edit in settings.json"');
  });
  it('the select/ignore dropdowns show each code\'s description (plain enumDescriptions)', () => {
    for (const key of ['torchtrap.select', 'torchtrap.ignore']) {
      const items = (properties[key] as { items: Schema }).items;
      assert.equal(items.enumDescriptions?.length, items.enum?.length, key);
      assert.ok(items.enumDescriptions?.every((d) => typeof d === 'string' && !String(d).includes('`')), key);
    }
  });
  it('offers diagnosticMode with Pylance\'s values', () => {
    const mode = properties['torchtrap.diagnosticMode'] as Schema;
    assert.deepEqual(mode.enum, ['openFilesOnly', 'workspace']);
    assert.equal(mode.default, 'openFilesOnly');
  });
  it('names the probe command for what it does on any machine', () => {
    const titles = Object.fromEntries(manifest.contributes.commands.map((c: { command: string; title: string }) => [c.command, c.title]));
    assert.equal(titles['torchtrap.vscode.runProbe'], 'Probe This Machine');
    assert.equal(titles['torchtrap.vscode.checkWorkspace'], 'Check Workspace');
    assert.equal(titles['torchtrap.vscode.selectInterpreter'], 'Select Interpreter…');
    assert.equal(titles['torchtrap.vscode.reviewUnsafeFixes'], 'Review Unsafe Fixes…');
  });
});

describe('Marketplace page (issue 35 item 8)', () => {
  const read = (name: string) => fs.readFileSync(path.join(ROOT, name));
  /** The paths .vscodeignore re-includes (`!path`), exactly as written. */
  const packaged = read('.vscodeignore')
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('!'))
    .map((l) => l.slice(1).trim());

  it('has a 128x128 PNG icon that is packaged', () => {
    assert.equal(manifest.icon, 'docs/images/icon.png');
    const png = read(manifest.icon);
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [128, 128]);
    assert.ok(packaged.includes(manifest.icon));
  });

  it('shows only images the Extensions view can render: packaged PNGs or https URLs', () => {
    const readme = read('README.md').toString('utf8');
    const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)|<img[^>]+src="([^"]+)"/g)].map((m) => m[1] ?? m[2] ?? '');
    assert.ok(images.length >= 3, `only ${images.length} images`);
    for (const src of images) {
      assert.ok(!/\.svg($|\?)/i.test(src), `${src}: SVG images are refused by vsce`);
      if (/^https:\/\//.test(src)) {
        continue;
      }
      assert.ok(!/^[a-z]+:/i.test(src), `${src}: neither https nor a packaged file`);
      assert.ok(fs.existsSync(path.join(ROOT, src)), `${src} does not exist`);
      assert.ok(packaged.includes(src), `${src} is not re-included in .vscodeignore: it would not render`);
      assert.ok(read(src).length < 300_000, `${src} is large for a README image`);
    }
  });

  it('has a changelog, a license, categories and keywords', () => {
    const changelog = read('CHANGELOG.md').toString('utf8');
    assert.ok(changelog.includes(`## ${manifest.version}`), `CHANGELOG.md has no ${manifest.version} entry`);
    assert.ok(packaged.includes('CHANGELOG.md') && packaged.includes('LICENSE'));
    assert.match(read('LICENSE').toString('utf8'), new RegExp(`^${manifest.license} License`));
    const allowed = ['Linters', 'Machine Learning', 'Data Science', 'Notebooks', 'Programming Languages', 'Formatters', 'Testing', 'Other'];
    assert.ok(manifest.categories.length > 0 && manifest.categories.every((c: string) => allowed.includes(c)), manifest.categories);
    assert.ok(manifest.keywords.length >= 5 && manifest.keywords.length <= 30);
    assert.ok(manifest.galleryBanner?.color);
  });
});
