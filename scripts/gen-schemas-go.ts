// The part of the schema generator that reads Go sources: client-node's models carry neither protobuf field
// numbers nor the patchStrategy/patchMergeKey struct tags, so those come from k8s.io/api and
// k8s.io/apimachinery types.go files (their struct tags are the source generated.proto and the strategic merge
// patch are built from). Only the resulting compact table (src/cluster/schema/go-tags.generated.ts) is committed.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { GoFieldTags } from '../src/cluster/schema/go-tags.generated.ts';
import type { GeneratedModel } from '../src/cluster/schema/schema-model.ts';

/** One Go struct field's tags (the shape of the generated table; `i` marks fields of embedded structs). */
type GoField = GoFieldTags;
type GoInlineField = GoFieldTags;

interface GoStruct {
  /** OpenAPI/Go package name, e.g. io.k8s.api.core.v1 */
  pkg: string;
  fields: Record<string, GoInlineField>;
  /** Embedded inline structs with a protobuf number (PersistentVolumeSource in PersistentVolumeSpec). */
  embeds?: Array<{ n: number; type: string }>;
}

function goFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...goFiles(p));
    else if (name.endsWith('.go') && !name.endsWith('_test.go') && !name.startsWith('zz_')) out.push(p);
  }
  return out;
}

/** `core/v1/types.go` under api -> io.k8s.api.core.v1; apimachinery pkg/apis/meta/v1 -> io.k8s.apimachinery.pkg.apis.meta.v1. */
function packageOf(root: string, file: string, repo: 'api' | 'apimachinery'): string {
  const dir = relative(root, file).split('/').slice(0, -1).join('.');
  return repo === 'api' ? `io.k8s.api.${dir}` : `io.k8s.apimachinery.${dir}`;
}

const FIELD_RE = /^\s+(\w+)\s+([^\s`]+)\s+`([^`]*)`/;

/** Parses every `type X struct { ... }` of a Go file into JSON-name-keyed field tags. */
function parseStructs(text: string, pkg: string, into: Map<string, GoStruct[]>): void {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const head = /^type (\w+) struct \{/.exec(lines[i]);
    if (!head) continue;
    const fields: Record<string, GoField> = {};
    let embeds: GoStruct['embeds'];
    let comment: string[] = [];
    for (i++; i < lines.length && lines[i] !== '}'; i++) {
      const c = /^\s*\/\/ ?(.*)$/.exec(lines[i]);
      if (c) {
        // +markers and everything after a `---` line are not documentation (as openapi-gen reads comments).
        if (c[1] === '---') comment.push('\u0000');
        else if (!c[1].startsWith('+')) comment.push(c[1]);
        continue;
      }
      const doc = comment.join(' ').split('\u0000')[0].replace(/\s+/g, ' ').trim();
      comment = [];
      const embed = /^\s+([\w.]+)\s+`([^`]*)`/.exec(lines[i]);
      // An embedded struct without a JSON name (`json:""` or `json:",inline"`) has its fields inlined in JSON.
      const embedProto = embed && /json:"(,inline)?"/.test(embed[2]) ? /protobuf:"bytes,(\d+),/.exec(embed[2]) : null;
      if (embed && embedProto) (embeds ??= []).push({ n: Number(embedProto[1]), type: embed[1] });
      // An embedded struct with a JSON name (`metav1.ObjectMeta `json:"metadata"``) is an ordinary field.
      const m = FIELD_RE.exec(lines[i]) ?? (embed && !embedProto ? [lines[i], embed[1], embed[1], embed[2]] : null);
      if (!m) continue;
      const tag = (key: string) => new RegExp(`${key}:"([^"]*)"`).exec(m[3])?.[1];
      const json = tag('json')?.split(',')[0];
      const proto = tag('protobuf')?.split(',');
      if (!json || json === '-' || !proto || proto.length < 2) continue;
      const f: GoField = { n: Number(proto[1]) };
      const strategy = tag('patchStrategy');
      const key = tag('patchMergeKey');
      if (strategy) f.s = strategy;
      if (key) f.k = key;
      if (/resource\.Quantity|ResourceList/.test(m[2])) f.q = 1;
      if (/\[\]byte$/.test(m[2])) f.b = 1;
      if (m[2].startsWith('*')) f.p = 1;
      if (doc) f.d = doc;
      fields[json] = f;
    }
    const list = into.get(head[1]) ?? [];
    list.push({ pkg, fields, embeds });
    into.set(head[1], list);
  }
}

const PREFIX_PACKAGES: Record<string, string> = {
  CoreV1: 'io.k8s.api.core.v1',
  EventsV1: 'io.k8s.api.events.v1',
  RbacV1: 'io.k8s.api.rbac.v1',
  StorageV1: 'io.k8s.api.storage.v1',
};

/**
 * The text of go-tags.generated.ts for the models the client-node walk produced. A model name is matched to the Go
 * struct of its name without the client-node prefix (V1, V1beta1, CoreV1...); when several packages define it,
 * the prefix's package wins, then the package of the served kind that reached the model (storage.k8s.io/v1's
 * CSIDriver over v1beta1's), then meta/v1, then core/v1. Models of a kind's own schema (no Go struct) are skipped.
 */
export function renderGoTags(
  dir: string,
  source: string,
  walked: { roots: Record<string, string>; models: Record<string, GeneratedModel>; packages: Record<string, string> },
): string {
  const structs = new Map<string, GoStruct[]>();
  for (const repo of ['api', 'apimachinery'] as const) {
    const root = join(dir, repo);
    for (const file of goFiles(root)) parseStructs(readFileSync(file, 'utf8'), packageOf(root, file, repo), structs);
  }
  const out: Record<string, GoStruct> = {};
  const missing: string[] = [];
  for (const model of Object.keys(walked.models).sort()) {
    if (walked.models[model].n !== undefined) continue;
    const m = /^(CoreV1|EventsV1|RbacV1|StorageV1|V\d+(?:(?:alpha|beta)\d+)?)([A-Z]\w*)$/.exec(model);
    const candidates = m ? (structs.get(m[2]) ?? []) : [];
    const wanted = m ? PREFIX_PACKAGES[m[1]] : undefined;
    const version = m ? m[1].replace(/^[A-Za-z]*V/, 'v') : '';
    const pick =
      candidates.find((c) => c.pkg === wanted) ??
      candidates.find((c) => c.pkg === walked.packages[model]) ??
      candidates.find((c) => c.pkg === 'io.k8s.apimachinery.pkg.apis.meta.v1') ??
      candidates.find((c) => c.pkg === 'io.k8s.api.core.v1') ??
      candidates.find((c) => c.pkg.endsWith(`.${version}`)) ??
      candidates[0];
    if (!pick) {
      missing.push(model);
      continue;
    }
    const fields: Record<string, GoInlineField> = {};
    const own = { ...pick.fields };
    for (const e of pick.embeds ?? []) {
      const inner = structs.get(e.type)?.find((c) => c.pkg === pick.pkg);
      for (const [json, f] of Object.entries(inner?.fields ?? {})) own[json] = { ...f, i: e.n };
    }
    for (const [json, f] of Object.entries(own)) {
      const described = walked.models[model].f[json]?.[1] !== undefined;
      fields[json] = described || f.d === undefined ? { ...f, d: undefined } : f;
    }
    out[model] = { pkg: pick.pkg, fields };
  }
  const head = [
    '// GENERATED by scripts/gen-schemas.ts --go from the struct tags of k8s.io/api and k8s.io/apimachinery types.go',
    '// (protobuf field numbers, patchStrategy/patchMergeKey, Quantity and []byte hints, Go package). Do not edit.',
    `// Source: ${source}. Models without a Go struct here: ${missing.join(', ') || 'none'}.`,
    '',
    '/** One field: protobuf number n (inside the embedded message field i, if set), patch strategy s, merge key k,',
    ' *  Quantity q, bytes b, pointer p (a zero value on the wire is kept, not omitted), Go doc d. */',
    'export interface GoFieldTags {',
    '  n: number;',
    '  s?: string;',
    '  k?: string;',
    '  q?: 1;',
    '  b?: 1;',
    '  p?: 1;',
    '  d?: string;',
    '  i?: number;',
    '}',
    '',
    '/** Per client-node model: its Go package and the tags of its fields by JSON name. */',
    'export const GO_TAGS: Readonly<Record<string, { pkg: string; fields: Readonly<Record<string, GoFieldTags>> }>> = {',
  ];
  const body = Object.keys(out).map((k) => `  ${k}: ${JSON.stringify(out[k])},`);
  return [...head, ...body, '};', ''].join('\n');
}
