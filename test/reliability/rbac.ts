// RBAC grants of the deploy/ manifests as (verb, resource) pairs, and the pairs a client used according to the
// embedded cluster's audit counter: what the least-privilege test compares.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { AuditRecord } from '../../src/testing/index.ts';

export const DEPLOY_DIR = new URL('../../deploy/', import.meta.url).pathname;

/** One granted pair, with where it comes from (`ClusterRole/name` or `Role/ns/name`). */
export interface Grant {
  verb: string;
  /** Resource plural, with `/subresource` when the rule names one. */
  resource: string;
  apiGroup: string;
  from: string;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...yamlFiles(p));
    else if (/\.ya?ml$/.test(name)) out.push(p);
  }
  return out;
}

/**
 * Every rule of every ClusterRole and Role under `dir`, expanded to (verb, resource) grants. Wildcards are kept as
 * "*". Files under the `exclude` subdirectories are left out (deploy/csi is another program's RBAC).
 */
export function loadGrants(dir = DEPLOY_DIR, exclude: string[] = []): Grant[] {
  const grants: Grant[] = [];
  for (const file of yamlFiles(dir).filter((f) => !exclude.some((sub) => f.startsWith(join(dir, sub) + '/')))) {
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
      const obj = doc.toJS() as {
        kind?: string;
        metadata?: { name?: string; namespace?: string };
        rules?: PolicyRule[];
      } | null;
      if (!obj || (obj.kind !== 'ClusterRole' && obj.kind !== 'Role')) continue;
      const from =
        obj.kind === 'Role'
          ? `Role/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`
          : `ClusterRole/${obj.metadata?.name ?? ''}`;
      for (const rule of obj.rules ?? []) {
        for (const apiGroup of rule.apiGroups ?? ['']) {
          for (const resource of rule.resources ?? []) {
            for (const verb of rule.verbs ?? []) grants.push({ verb, resource, apiGroup, from });
          }
        }
      }
    }
  }
  return grants;
}

/** `verb resource` keys of the grants. */
export function grantKeys(grants: Grant[]): Set<string> {
  return new Set(grants.map((g) => `${g.verb} ${g.resource}`));
}

/** `verb resource` keys the matching clients sent to the API (any response code except 401: those never got in). */
export function usedKeys(records: AuditRecord[], client: (name: string) => boolean): Set<string> {
  return new Set(
    records
      .filter((r) => client(r.client) && r.resource !== '' && r.code !== 401)
      .map((r) => `${r.verb} ${r.resource}`),
  );
}

/** Whether a grant set allows `verb resource` (honouring "*" wildcards). */
export function allows(grants: Grant[], key: string): boolean {
  const [verb, resource] = key.split(' ');
  return grants.some((g) => (g.verb === '*' || g.verb === verb) && (g.resource === '*' || g.resource === resource));
}
