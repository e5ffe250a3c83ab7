// Generates src/cluster/schema/schemas.generated.ts, the one schema source of the embedded cluster, from
// @kubernetes/client-node's models: every field with its type (attributeTypeMap) and description (the TSDoc of
// the model's .d.ts), for the served kinds and the models they reference, nothing else. The served kinds are
// found in the registry modules (gen-resources.ts), and their list is written too, as
// src/cluster/registry/resources.generated.ts.
//
//   npm run gen:schemas                      regenerate both from the registry modules and the installed
//                                            client-node (a test checks this is a no-op)
//   npm run gen:schemas -- --go <dir>        also regenerate src/cluster/schema/go-tags.generated.ts (protobuf field
//                                            numbers, patch strategies/merge keys, Go packages) from a checkout of
//                                            k8s.io/api and k8s.io/apimachinery laid out under <dir>/api and
//                                            <dir>/apimachinery (client-node does not carry these)
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as clientNode from '@kubernetes/client-node';
import type { GeneratedModel } from '../src/cluster/schema/schema-model.ts';
import { renderGoTags } from './gen-schemas-go.ts';
import { discoverResources, renderResources, RESOURCES_FILE } from './gen-resources.ts';

interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}
interface ModelClass {
  attributeTypeMap?: Attribute[];
}

const here = dirname(fileURLToPath(import.meta.url));
export const SCHEMAS_FILE = join(here, '../src/cluster/schema/schemas.generated.ts');
export const GO_TAGS_FILE = join(here, '../src/cluster/schema/go-tags.generated.ts');
const require = createRequire(import.meta.url);
const modelsDir = join(dirname(require.resolve('@kubernetes/client-node')), 'gen/models');
const clientNodeVersion = (
  JSON.parse(readFileSync(join(modelsDir, '../../../package.json'), 'utf8')) as { version: string }
).version;

/** The served kinds, read from the registry modules themselves (not from the generated list). */
const DISCOVERED = await discoverResources();

/** The text of resources.generated.ts. */
export function renderResourceList(): string {
  return renderResources(DISCOVERED);
}
export { RESOURCES_FILE };

const SCALARS: Record<string, string> = {
  boolean: 'boolean',
  Date: 'date-time',
  V1MicroTime: 'date-time-micro',
  IntOrString: 'int-or-string',
  any: 'any',
};

/** client-node's attribute type (+ format) in the compact notation of the generated module. */
function typeOf(type: string, format: string): string {
  const arr = /^Array<(.+)>$/.exec(type);
  if (arr) return `[]${typeOf(arr[1], format)}`;
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return `map[]${typeOf(map[1], format)}`;
  if (type === 'string') return format === 'byte' ? 'byte' : 'string';
  if (type === 'number') return format === 'int32' || format === 'int64' ? format : 'double';
  return SCALARS[type] ?? type;
}

/** The model a compact type refers to, if any. */
export function refOf(t: string): string | undefined {
  const base = t.replace(/^(\[\]|map\[\])+/, '');
  return /^[A-Z]/.test(base) ? base : undefined;
}

/** TSDoc of the class and of each field, from the model's .d.ts. */
function docsOf(model: string): { description: string; fields: Map<string, string> } {
  const text = readFileSync(join(modelsDir, `${model}.d.ts`), 'utf8');
  // The generator escapes apostrophes in TSDoc (`volume\\'s`); descriptions carry the plain text.
  const clean = (c: string) =>
    c
      .split('\n')
      .map((l) => l.replace(/^\s*\*\s?/, '').trim())
      .join(' ')
      .trim()
      .replace(/\\'/g, "'");
  const classDoc = /\/\*\*\n((?:(?!\*\/)[\s\S])*)\*\/\s*export declare class/.exec(text);
  const fields = new Map<string, string>();
  for (const m of text.matchAll(/\/\*\*\n((?:(?!\*\/)[\s\S])*?)\*\/\s*'([^']+)'\??:/g)) fields.set(m[2], clean(m[1]));
  return { description: classDoc ? clean(classDoc[1]) : '', fields };
}

/** client-node's model of a served kind (`V1PersistentVolume`, `CoreV1Event`, `EventsV1Event`). */
export function rootModel(group: string, version: string, kind: string): string {
  const v = version.charAt(0).toUpperCase() + version.slice(1);
  const groupPrefix = (group.split('.')[0] || 'core').replace(/^./, (c) => c.toUpperCase());
  const models = clientNode as unknown as Record<string, ModelClass | undefined>;
  for (const name of [`${groupPrefix}${v}${kind}`, `${v}${kind}`]) if (models[name]?.attributeTypeMap) return name;
  throw new Error(`no client-node model for ${group}/${version} ${kind}`);
}

/** The OpenAPI component name of a model from a kind's own schema (SnapshotV1VolumeSnapshot -> <pkg>.VolumeSnapshot). */
function customComponentName(pkg: string, model: string): string {
  return `${pkg}.${model.replace(/^[A-Z][a-z]*V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])/, '')}`;
}

/**
 * Walks the served kinds' models and everything they reference: client-node's, or, for a kind client-node has no
 * model of, the registry entry's own schema (`customSchema`). `packages` is the OpenAPI package of the kind that
 * first reached each model (io.k8s.api.storage.v1), which picks the Go struct when several packages define one.
 */
export function collectModels(): {
  roots: Record<string, string>;
  models: Record<string, GeneratedModel>;
  packages: Record<string, string>;
} {
  const roots: Record<string, string> = {};
  const models: Record<string, GeneratedModel> = {};
  const packages: Record<string, string> = {};
  const custom = new Map<string, GeneratedModel>();
  const queue: Array<[string, string]> = [];
  for (const { rt } of DISCOVERED) {
    const own = rt.customSchema;
    let name: string;
    if (own) {
      name = Object.keys(own.models)[0];
      for (const [m, def] of Object.entries(own.models)) custom.set(m, { ...def, n: customComponentName(own.pkg, m) });
    } else name = rootModel(rt.group, rt.version, rt.kind);
    roots[`${rt.group}/${rt.version}/${rt.kind}`] = name;
    queue.push([
      name,
      `io.k8s.api.${rt.group === '' ? 'core' : rt.group.replace(/\.k8s\.io$/, '').replace(/\./g, '_')}.${rt.version}`,
    ]);
  }
  const all = clientNode as unknown as Record<string, ModelClass | undefined>;
  while (queue.length) {
    const [name, pkg] = queue.shift()!;
    if (models[name]) continue;
    const mine = custom.get(name);
    if (mine) {
      models[name] = mine;
      for (const [t] of Object.values(mine.f)) {
        const ref = refOf(t);
        if (ref && !models[ref]) queue.push([ref, pkg]);
      }
      continue;
    }
    const attrs = all[name]?.attributeTypeMap;
    if (!attrs) throw new Error(`client-node has no model ${name}`);
    const docs = docsOf(name);
    const f: GeneratedModel['f'] = {};
    for (const a of attrs) {
      const t = typeOf(a.type, a.format);
      const d = docs.fields.get(a.name);
      f[a.baseName] = d ? [t, d] : [t];
      const ref = refOf(t);
      if (ref && !models[ref]) queue.push([ref, pkg]);
    }
    models[name] = { d: docs.description, f };
    packages[name] = pkg;
  }
  return { roots, models, packages };
}

/** The text of schemas.generated.ts. */
export function renderSchemas(): string {
  const { roots, models } = collectModels();
  const lines = [
    `// GENERATED by scripts/gen-schemas.ts from @kubernetes/client-node ${clientNodeVersion} (attributeTypeMap + TSDoc). Do not edit;`,
    '// run `npm run gen:schemas`. Types: string, byte, int32, int64, double, boolean, date-time, date-time-micro,',
    '// int-or-string, any, a model name, or []T / map[]T. Each field is [type] or [type, description]; n is the OpenAPI',
    "// component name of a model from a kind's own schema (client-node has none of it).",
    "import type { GeneratedModel } from './schema-model.ts';",
    '',
    '/** The model of each served kind, by `group/version/Kind`. */',
    `export const ROOT_MODELS: Readonly<Record<string, string>> = ${JSON.stringify(roots, null, 2)};`,
    '',
    '/** Every model the served kinds reference. */',
    'export const MODELS: Readonly<Record<string, GeneratedModel>> = {',
    ...Object.keys(models)
      .sort()
      .map((k) => `  ${k}: ${JSON.stringify(models[k])},`),
    '};',
    '',
  ];
  return lines.join('\n');
}

function main(argv: string[]): void {
  writeFileSync(RESOURCES_FILE, renderResourceList());
  writeFileSync(SCHEMAS_FILE, renderSchemas());
  const goIdx = argv.indexOf('--go');
  if (goIdx >= 0) {
    const dir = argv[goIdx + 1];
    if (!dir) throw new Error('--go needs a directory');
    const refIdx = argv.indexOf('--go-ref');
    const source = refIdx >= 0 ? argv[refIdx + 1] : dir;
    writeFileSync(GO_TAGS_FILE, renderGoTags(dir, source, collectModels()));
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main(process.argv.slice(2));
