// Local checks of the deploy/ manifests that the API server cannot do: reading every YAML document under
// deploy/, the kinds this project ships, least privilege in the RBAC rules, cross-references between
// manifests (bindings to roles and service accounts, workloads to their service account, probe ports,
// downward-API fields) and kustomizations. Field validation (names, selectors, pod specs, RBAC rule shapes,
// roleRefs) is the embedded cluster's: manifests.test.ts applies every manifest to it. Each check returns
// problems as strings.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** A parsed manifest document and where it came from. */
export interface Manifest {
  file: string;
  index: number;
  obj: Record<string, unknown>;
}

export const DEPLOY_DIR = new URL('../../deploy/', import.meta.url).pathname;

/** Every .yaml/.yml file under `dir`, sorted, relative to it. */
export function yamlFiles(dir = DEPLOY_DIR): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(name)) out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out;
}

/** Parses every document of every file; YAML errors throw with the file name. */
export function loadManifests(dir = DEPLOY_DIR): Manifest[] {
  const out: Manifest[] = [];
  for (const file of yamlFiles(dir)) {
    const docs = parseAllDocuments(readFileSync(join(dir, file), 'utf8'));
    docs.forEach((doc, index) => {
      if (doc.errors.length > 0) throw new Error(`${file}[${index}]: ${doc.errors.map((e) => e.message).join('; ')}`);
      const obj: unknown = doc.toJS();
      if (obj === null || obj === undefined) return;
      if (typeof obj !== 'object' || Array.isArray(obj)) throw new Error(`${file}[${index}]: not an object`);
      out.push({ file, index, obj: obj as Record<string, unknown> });
    });
  }
  return out;
}

export function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The kinds this project's manifests may contain: apiVersion and scope. */
export const KNOWN_KINDS: Record<string, { apiVersion: string; namespaced: boolean }> = {
  Namespace: { apiVersion: 'v1', namespaced: false },
  ServiceAccount: { apiVersion: 'v1', namespaced: true },
  ConfigMap: { apiVersion: 'v1', namespaced: true },
  ClusterRole: { apiVersion: 'rbac.authorization.k8s.io/v1', namespaced: false },
  ClusterRoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', namespaced: false },
  Role: { apiVersion: 'rbac.authorization.k8s.io/v1', namespaced: true },
  RoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', namespaced: true },
  Deployment: { apiVersion: 'apps/v1', namespaced: true },
  DaemonSet: { apiVersion: 'apps/v1', namespaced: true },
  StorageClass: { apiVersion: 'storage.k8s.io/v1', namespaced: false },
  Kustomization: { apiVersion: 'kustomize.config.k8s.io/v1beta1', namespaced: false },
};

/** A kind this project ships, with its apiVersion (names and namespaces are the server's to validate). */
export function checkCommon(m: Manifest): string[] {
  const where = `${m.file}[${m.index}]`;
  const kind = str(m.obj.kind);
  if (!kind) return [`${where}: missing kind`];
  const known = KNOWN_KINDS[kind];
  if (!known) return [`${where}: unexpected kind ${kind}`];
  if (m.obj.apiVersion !== known.apiVersion) return [`${where}: ${kind} apiVersion ${String(m.obj.apiVersion)}, want ${known.apiVersion}`];
  return [];
}

const RBAC_VERBS = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']);

/** Least privilege in Role / ClusterRole rules: no wildcards, only real verbs (the server checks the rule shape). */
export function checkRole(m: Manifest): string[] {
  const where = `${m.file}[${m.index}] ${String(m.obj.kind)}`;
  const rules = arr(m.obj.rules);
  if (rules.length === 0) return [`${where}: no rules`];
  const problems: string[] = [];
  rules.forEach((r, i) => {
    const rule = rec(r);
    for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames', 'nonResourceURLs']) {
      if (arr(rule[field]).includes('*')) problems.push(`${where} rules[${i}].${field}: wildcards are not least privilege`);
    }
    for (const v of arr(rule.verbs)) if (!RBAC_VERBS.has(String(v))) problems.push(`${where} rules[${i}]: unknown verb ${String(v)}`);
  });
  return problems;
}

/** Bindings: the roleRef names a role in deploy/ of the right scope; subjects are service accounts in deploy/. */
export function checkBinding(m: Manifest, all: Manifest[]): string[] {
  const where = `${m.file}[${m.index}] ${String(m.obj.kind)}`;
  const problems: string[] = [];
  const ref = rec(m.obj.roleRef);
  const ns = rec(m.obj.metadata).namespace;
  const role = all.find(
    (o) => o.obj.kind === ref.kind && rec(o.obj.metadata).name === ref.name && (ref.kind === 'ClusterRole' || rec(o.obj.metadata).namespace === ns),
  );
  if (!role) problems.push(`${where}: roleRef ${String(ref.kind)} ${String(ref.name)} is not in deploy/`);
  const subjects = arr(m.obj.subjects);
  if (subjects.length === 0) problems.push(`${where}: no subjects`);
  for (const s of subjects.map(rec)) {
    if (s.kind !== 'ServiceAccount') {
      problems.push(`${where}: subject kind ${String(s.kind)} (only service accounts expected)`);
      continue;
    }
    if (!findObject(all, 'ServiceAccount', String(s.name), String(s.namespace))) {
      problems.push(`${where}: subject ServiceAccount ${String(s.namespace)}/${String(s.name)} is not in deploy/`);
    }
  }
  return problems;
}

export function findObject(all: Manifest[], kind: string, name: string, namespace?: string): Manifest | undefined {
  return all.find((o) => o.obj.kind === kind && rec(o.obj.metadata).name === name && (namespace === undefined || rec(o.obj.metadata).namespace === namespace));
}

/**
 * Deployment / DaemonSet cross-references the server does not check: the service account exists in the same
 * namespace, named probe ports exist, downward-API env fields are real ones.
 */
export function checkWorkload(m: Manifest, all: Manifest[]): string[] {
  const where = `${m.file}[${m.index}] ${String(m.obj.kind)}`;
  const problems: string[] = [];
  const pod = rec(rec(rec(m.obj.spec).template).spec);
  const ns = String(rec(m.obj.metadata).namespace);
  const sa = str(pod.serviceAccountName);
  if (!sa) problems.push(`${where}: no serviceAccountName`);
  else if (!findObject(all, 'ServiceAccount', sa, ns)) problems.push(`${where}: ServiceAccount ${ns}/${sa} is not in deploy/`);
  const fieldPaths = new Set(['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.podIP']);
  for (const c of arr(pod.containers).map(rec)) {
    const ports = new Set(arr(c.ports).map((p) => rec(p).name));
    for (const probe of ['livenessProbe', 'readinessProbe']) {
      const port = rec(rec(c[probe]).httpGet).port;
      if (typeof port === 'string' && !ports.has(port)) problems.push(`${where}: ${probe} port ${port} is not a named container port`);
    }
    for (const e of arr(c.env).map(rec)) {
      const fp = rec(rec(e.valueFrom).fieldRef).fieldPath;
      if (fp !== undefined && !fieldPaths.has(String(fp))) problems.push(`${where}: env ${String(e.name)} fieldRef ${String(fp)} is not a downward-API field`);
    }
  }
  return problems;
}

/** Every kustomization's resources exist; every YAML file is reachable from deploy/kustomization.yaml or a variant. */
export function checkKustomizations(dir = DEPLOY_DIR): string[] {
  const problems: string[] = [];
  const referenced = new Set<string>();
  for (const file of yamlFiles(dir).filter((f) => /(^|\/)kustomization\.ya?ml$/.test(f))) {
    const base = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '';
    const k = rec(parseAllDocuments(readFileSync(join(dir, file), 'utf8'))[0]?.toJS());
    for (const r of arr(k.resources).map(String)) {
      const target = base ? `${base}/${r}` : r;
      let isDir = false;
      try {
        isDir = statSync(join(dir, target)).isDirectory();
      } catch {
        problems.push(`${file}: resource ${r} does not exist`);
        continue;
      }
      if (isDir) {
        try {
          statSync(join(dir, target, 'kustomization.yaml'));
        } catch {
          problems.push(`${file}: resource directory ${r} has no kustomization.yaml`);
        }
      } else referenced.add(target);
    }
  }
  for (const f of yamlFiles(dir)) {
    if (!/kustomization\.ya?ml$/.test(f) && !referenced.has(f)) problems.push(`${f}: not listed in any kustomization.yaml`);
  }
  return problems;
}
