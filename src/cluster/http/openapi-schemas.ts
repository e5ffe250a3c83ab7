// OpenAPI v3 component schemas of the served kinds, built from the generated schema tables: every field with
// its type and description, references between models by their Go names (io.k8s.api.core.v1.PersistentVolumeSpec),
// patch strategies and merge keys, and the well-known apimachinery scalar types (Time, MicroTime, Quantity,
// IntOrString, without a `type` as kube-apiserver's v3 documents so kubectl shows their names). Rich enough for `kubectl explain pv.spec` and `kubectl explain pvc.spec.resources`.
import { goField, goPackage, model, rootModel } from '../schema/schema.ts';

type Schema = Record<string, unknown>;

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const TIME = `${META}.Time`;
const MICRO_TIME = `${META}.MicroTime`;
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';

/** The scalar component schemas the generated models refer to. */
const WELL_KNOWN: Record<string, Schema> = {
  [TIME]: {
    description: 'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.',
    type: 'string',
    format: 'date-time',
  },
  [MICRO_TIME]: {
    description: 'MicroTime is version of Time with microsecond level precision.',
    type: 'string',
    format: 'date-time',
  },
  [QUANTITY]: {
    description:
      'Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.',
    oneOf: [{ type: 'string' }, { type: 'number' }],
  },
  [INT_OR_STRING]: {
    description: 'IntOrString is a type that can hold an int32 or a string.',
    format: 'int-or-string',
    oneOf: [{ type: 'integer' }, { type: 'string' }],
  },
};

/**
 * The Go-style component name of a model (V1PersistentVolumeSpec -> io.k8s.api.core.v1.PersistentVolumeSpec,
 * V1beta1VolumeAttributesClass -> io.k8s.api.storage.v1beta1.VolumeAttributesClass); a model of a kind's own schema
 * carries its name (io.k8s.storage.snapshot.v1.VolumeSnapshot, as a CRD's schema is named).
 */
export function componentName(modelName: string): string {
  const own = model(modelName)?.n;
  if (own) return own;
  const short = modelName.replace(/^(CoreV1|EventsV1|RbacV1|StorageV1|V\d+(?:(?:alpha|beta)\d+)?)(?=[A-Z])/, '');
  return `${goPackage(modelName) ?? 'io.k8s.api.core.v1'}.${short}`;
}

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

function typeSchema(type: string, quantity: boolean, used: Set<string>): Schema {
  if (type.startsWith('[]')) return { type: 'array', items: typeSchema(type.slice(2), quantity, used) };
  if (type.startsWith('map[]'))
    return { type: 'object', additionalProperties: typeSchema(type.slice(5), quantity, used) };
  switch (type) {
    case 'string':
      if (!quantity) return { type: 'string' };
      used.add(QUANTITY);
      return ref(QUANTITY);
    case 'byte':
      return { type: 'string', format: 'byte' };
    case 'int32':
    case 'int64':
      return { type: 'integer', format: type };
    case 'double':
      return { type: 'number', format: 'double' };
    case 'boolean':
      return { type: 'boolean' };
    case 'date-time':
      used.add(TIME);
      return ref(TIME);
    case 'date-time-micro':
      used.add(MICRO_TIME);
      return ref(MICRO_TIME);
    case 'int-or-string':
      used.add(INT_OR_STRING);
      return ref(INT_OR_STRING);
    case 'any':
      return { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    default:
      used.add(type);
      return ref(componentName(type));
  }
}

function modelSchema(name: string, used: Set<string>): Schema {
  const m = model(name)!;
  const properties: Record<string, Schema> = {};
  for (const [field, [type, own]] of Object.entries(m.f)) {
    const tags = goField(name, field);
    // client-node keeps no TSDoc on fields typed by a model; the Go doc comment from the tags table stands in.
    const description = own ?? tags?.d;
    let s = typeSchema(type, tags?.q === 1, used);
    // A $ref cannot carry siblings in OpenAPI 3.0: kube-apiserver wraps it in allOf to add a description.
    if ('$ref' in s && description) s = { allOf: [s] };
    if (description) s.description = description;
    if (tags?.s) s['x-kubernetes-patch-strategy'] = tags.s;
    if (tags?.k) s['x-kubernetes-patch-merge-key'] = tags.k;
    properties[field] = s;
  }
  return { description: m.d, type: 'object', properties };
}

/** A served kind as the OpenAPI documents need it. */
export interface SchemaKind {
  group: string;
  version: string;
  kind: string;
}

/** The component schema name of a served kind's root. */
export function kindComponentName(k: SchemaKind): string {
  const root = rootModel(k.group, k.version, k.kind);
  if (root) return componentName(root);
  const pkg = k.group === '' ? 'core' : k.group.replace(/\.k8s\.io$/, '').replace(/\./g, '_');
  return `io.k8s.api.${pkg}.${k.version}.${k.kind}`;
}

/** Component schemas for the given kinds and every model they reference. */
export function componentSchemas(kinds: readonly SchemaKind[]): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  const used = new Set<string>();
  const queue: string[] = [];
  const gvks = new Map<string, SchemaKind[]>();
  for (const k of kinds) {
    const root = rootModel(k.group, k.version, k.kind);
    if (!root) {
      out[kindComponentName(k)] = {
        description: `${k.kind} (no schema is generated for this kind).`,
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        'x-kubernetes-group-version-kind': [{ group: k.group, version: k.version, kind: k.kind }],
      };
      continue;
    }
    gvks.set(root, [...(gvks.get(root) ?? []), k]);
    queue.push(root);
  }
  const done = new Set<string>();
  while (queue.length) {
    const name = queue.shift()!;
    if (done.has(name)) continue;
    done.add(name);
    const schema = modelSchema(name, used);
    const gvk = gvks.get(name);
    if (gvk)
      schema['x-kubernetes-group-version-kind'] = gvk.map((k) => ({
        group: k.group,
        version: k.version,
        kind: k.kind,
      }));
    out[componentName(name)] = schema;
    for (const u of used) if (model(u) && !done.has(u)) queue.push(u);
  }
  for (const u of used) if (WELL_KNOWN[u]) out[u] = WELL_KNOWN[u];
  return out;
}
