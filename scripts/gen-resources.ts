// Derives the list of served resources for `npm run gen:schemas`: every ResourceType value a module under
// src/cluster/registry/ exports is served, and src/cluster/registry/resources.generated.ts imports them all, in
// discovery order. Adding a kind is therefore its registry file (an exported entry) plus the generator run.
//
// Rules: an entry is served exactly when it is exported (a kind kept out of discovery is simply not exported);
// exporting an array of entries is refused, so a group array cannot hide its members; two entries for the same
// group/version/resource, or two exported under one name, are refused. The modules are imported directly, never
// through registry.ts, so a stale or broken generated file does not stop its own regeneration.
import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ResourceType } from '../src/cluster/registry/resource-type.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const REGISTRY_DIR = join(here, '../src/cluster/registry');
export const RESOURCES_FILE = join(REGISTRY_DIR, 'resources.generated.ts');

/**
 * Discovery order, `group/resource` (core has an empty group): the order these kinds were served in when the
 * list was kept by hand, kept so that /api/v1, /apis and each group's resource list do not move. A group is
 * placed by its first row; a kind without a row comes after its group's listed kinds, a group without a row
 * after the listed groups, both by name. A new kind needs no row.
 */
const DISCOVERY_ORDER: readonly string[] = [
  '/namespaces',
  '/nodes',
  '/pods',
  '/persistentvolumes',
  '/persistentvolumeclaims',
  '/configmaps',
  '/secrets',
  '/serviceaccounts',
  '/events',
  'events.k8s.io/events',
  'storage.k8s.io/storageclasses',
  'coordination.k8s.io/leases',
  'rbac.authorization.k8s.io/clusterroles',
  'rbac.authorization.k8s.io/clusterrolebindings',
  'rbac.authorization.k8s.io/roles',
  'rbac.authorization.k8s.io/rolebindings',
  'apps/deployments',
  'apps/daemonsets',
];

/** One exported entry: the module (relative to the registry folder, `/`-separated) and its export name. */
export interface DiscoveredResource {
  module: string;
  name: string;
  rt: ResourceType;
}

/** Whether a module export is a registry entry (checked by shape: modules also export helpers and tables). */
function isResourceType(v: unknown): v is ResourceType {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  const strings = ['group', 'version', 'resource', 'kind', 'listKind', 'singular'].every(
    (k) => typeof o[k] === 'string',
  );
  return (
    strings &&
    typeof o.namespaced === 'boolean' &&
    typeof o.hasStatus === 'boolean' &&
    Array.isArray(o.verbs) &&
    typeof o.validate === 'function'
  );
}

/** The registry's modules: every .ts file under the folder except registry.ts and generated files, sorted. */
export function registryModules(dir = REGISTRY_DIR): string[] {
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith('.ts') ? [join(d, e.name)] : [],
    );
  return walk(dir)
    .map((f) => relative(dir, f).split('\\').join('/'))
    .filter((m) => m !== 'registry.ts' && !m.endsWith('.generated.ts'))
    .sort();
}

/** The position of an entry in discovery order (see DISCOVERY_ORDER). */
function orderKey(rt: ResourceType): [number, string, number, string, string] {
  const groupRow = DISCOVERY_ORDER.findIndex((r) => r.startsWith(`${rt.group}/`));
  const row = DISCOVERY_ORDER.indexOf(`${rt.group}/${rt.resource}`);
  const inf = Number.MAX_SAFE_INTEGER;
  return [groupRow < 0 ? inf : groupRow, rt.group, row < 0 ? inf : row, rt.resource, rt.version];
}

/** Sorts entries into discovery order. */
export function sortResources<T extends { rt: ResourceType }>(entries: readonly T[]): T[] {
  const cmp = (a: T, b: T): number => {
    const ka = orderKey(a.rt);
    const kb = orderKey(b.rt);
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
  };
  return [...entries].sort(cmp);
}

/** Imports every registry module and returns its exported entries, in discovery order. */
export async function discoverResources(dir = REGISTRY_DIR): Promise<DiscoveredResource[]> {
  const found: DiscoveredResource[] = [];
  const seen = new Map<string, string>();
  const names = new Map<string, string>();
  for (const module of registryModules(dir)) {
    const exports = (await import(pathToFileURL(join(dir, module)).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(exports)) {
      if (Array.isArray(value) && value.some(isResourceType)) {
        throw new Error(`${module} exports ${name}, an array of registry entries: export each entry instead`);
      }
      if (!isResourceType(value)) continue;
      const id = `${value.group}/${value.version}/${value.resource}`;
      const where = `${module} ${name}`;
      if (seen.has(id)) throw new Error(`${id} is exported twice: ${seen.get(id)} and ${where}`);
      if (names.has(name))
        throw new Error(`two registry modules export ${name} (${names.get(name)} and ${module}): rename one`);
      seen.set(id, where);
      names.set(name, module);
      found.push({ module, name, rt: value });
    }
  }
  return sortResources(found);
}

/** The text of resources.generated.ts. */
export function renderResources(entries: readonly DiscoveredResource[]): string {
  const byModule = new Map<string, string[]>();
  for (const e of entries) byModule.set(e.module, [...(byModule.get(e.module) ?? []), e.name]);
  const imports = [...byModule]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([module, names]) => `import { ${[...names].sort().join(', ')} } from './${module}';`);
  return [
    '// GENERATED by scripts/gen-schemas.ts (scripts/gen-resources.ts) from the ResourceType values the modules',
    '// under src/cluster/registry/ export. Do not edit; run `npm run gen:schemas` (a test checks it is current).',
    "import type { ResourceType } from './resource-type.ts';",
    ...imports,
    '',
    '/** Every resource the embedded API server serves, in discovery order. */',
    'export const GENERATED_RESOURCES: readonly ResourceType[] = [',
    ...entries.map((e) => `  ${e.name},`),
    '];',
    '',
  ].join('\n');
}
