// CreateVolume's accessibility requirements, as external-provisioner's topology.go builds them: the topology keys
// come from the selected node's CSINode entry for the driver, their values from that Node's labels; requisite is the
// class's allowedTopologies (flattened) or else every node's segment; preferred starts at the selected node's
// segment (or, without one, at a StatefulSet-aware hash of the claim name); --strict-topology keeps only the
// selected node's segment, --immediate-topology=false sends none for Immediate claims. A missing CSINode or Node is
// a TopologyNotFoundError (the provisioner answers Reschedule). And the PV's node affinity from the reply.
import type { Node, NodeSelectorTerm, TopologySelectorTerm } from '../types/k8s.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import type { CSINode } from '../types/storage-objects.ts';
import type { RequestOf } from './services.ts';

/** A CSI TopologyRequirement. */
export type TopologyRequirement = NonNullable<RequestOf<'createVolume'>['accessibilityRequirements']>;
/** A CSI Topology (segments). */
export type CsiTopology = { segments?: Record<string, string> };

/** The selected node (or its CSINode) does not exist: ask the scheduler for another node. */
export class TopologyNotFoundError extends Error {
  override name = 'TopologyNotFoundError';
}

/** The requirements cannot be built (no keys, labels missing, the node outside allowedTopologies...). */
export class TopologyError extends Error {
  override name = 'TopologyError';
}

/** A topology term: [key, value] pairs sorted by key (then value). */
type Term = Array<readonly [string, string]>;

const sortTerm = (t: Term): Term =>
  t.sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0));

function compareTerms(a: Term, b: Term): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) {
    if (a[i][0] !== b[i][0]) return a[i][0] < b[i][0] ? -1 : 1;
    if (a[i][1] !== b[i][1]) return a[i][1] < b[i][1] ? -1 : 1;
  }
  return 0;
}

/** Whether every segment of `t` is in `other` (both sorted), as topology.go's subset. */
function isSubset(t: Term, other: Term): boolean {
  if (t.length === 0) return true;
  let j = 0;
  for (const [key, value] of other) {
    if (t[j][0] !== key) continue;
    if (t[j][1] !== value) return false;
    j++;
    if (j === t.length) return true;
  }
  return false;
}

/** allowedTopologies as terms: each selector term is ANDed expressions of ORed values, expanded. */
export function flattenAllowedTopologies(
  allowed: readonly TopologySelectorTerm[],
): Array<Array<readonly [string, string]>> {
  const out: Term[] = [];
  for (const selector of allowed) {
    let terms: Term[] = [];
    for (const expr of selector.matchLabelExpressions ?? []) {
      const next: Term[] = [];
      for (const value of expr.values) {
        if (terms.length === 0) next.push([[expr.key, value]]);
        else for (const t of terms) next.push([...t, [expr.key, value]]);
      }
      terms = next;
    }
    out.push(...terms);
  }
  return out.map(sortTerm);
}

function termOfLabels(labels: Readonly<Record<string, string>> | undefined, keys: readonly string[]): Term | undefined {
  const term: Term = [];
  for (const key of keys) {
    const v = labels?.[key];
    if (v === undefined) return undefined;
    term.push([key, v]);
  }
  return sortTerm(term);
}

/** The driver's topology keys on a CSINode. */
export function topologyKeysOf(csiNode: CSINode, driverName: string): string[] {
  return csiNode.spec.drivers?.find((d) => d.name === driverName)?.topologyKeys ?? [];
}

/** FNV-1 32-bit (Go's hash/fnv New32). */
function fnv32(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) {
    h = Math.imul(h, 0x01000193) >>> 0;
    h = (h ^ b) >>> 0;
  }
  return h;
}

/**
 * topology.go's getPVCNameHashAndIndexOffset: claims of one StatefulSet (`<claim>-<set>-<ordinal>`) hash the set's
 * name and offset by the ordinal, so its replicas spread over the segments.
 */
export function claimNameHash(claimName: string, random: () => number = Math.random): { hash: number; index: number } {
  if (claimName === '') return { hash: Math.floor(random() * 2 ** 32) >>> 0, index: 0 };
  let hashString = claimName;
  let index = 0;
  const lastDash = claimName.lastIndexOf('-');
  if (lastDash !== -1) {
    const ordinal = claimName.slice(lastDash + 1);
    if (/^\d+$/.test(ordinal) && Number(ordinal) <= 0xffffffff) {
      index = Number(ordinal);
      hashString = claimName.slice(0, lastDash);
      const dash = hashString.lastIndexOf('-');
      if (dash !== -1) hashString = hashString.slice(dash + 1);
    }
  }
  return { hash: fnv32(hashString), index };
}

const toCsi = (terms: Term[]): CsiTopology[] =>
  terms.filter((t) => t.length > 0).map((t) => ({ segments: Object.fromEntries(t) }));

/** What the requirements are built from. */
export interface TopologyInput {
  driverName: string;
  claimName: string;
  allowedTopologies: readonly TopologySelectorTerm[] | undefined;
  selectedNodeName: string | undefined;
  strictTopology: boolean;
  immediateTopology: boolean;
}

/** The driver's keys and every node's segment for them (all nodes that carry every key). */
async function aggregateTopologies(
  input: TopologyInput,
  selectedKeys: string[],
  cluster: CsiClusterAccess,
  signal: AbortSignal,
): Promise<Term[]> {
  let keys = selectedKeys;
  if (!input.selectedNodeName) {
    const csiNodes = await cluster.listCSINodes(signal);
    keys = csiNodes.map((n) => topologyKeysOf(n, input.driverName)).find((k) => k.length > 0) ?? [];
    if (keys.length === 0) return [];
  }
  const nodes: Node[] = await cluster.listNodes(signal);
  const terms: Term[] = [];
  for (const n of nodes) {
    const term = termOfLabels(n.metadata.labels, keys);
    if (term) terms.push(term);
  }
  if (terms.length === 0) throw new TopologyError(`topologyKeys ${JSON.stringify(keys)} were not found on any nodes`);
  return terms;
}

/** external-provisioner's GenerateAccessibilityRequirements. Undefined: send no requirement. */
export async function accessibilityRequirements(
  input: TopologyInput,
  cluster: CsiClusterAccess,
  signal: AbortSignal,
): Promise<TopologyRequirement | undefined> {
  const allowed = input.allowedTopologies ?? [];
  const node = input.selectedNodeName;
  let requisite: Term[] = [];
  let selected: Term = [];
  let keys: string[] = [];
  if (node) {
    const csiNode = await cluster.getCSINode(node, signal);
    if (!csiNode)
      throw new TopologyNotFoundError(
        `failed to get selected CSINode ${node}: csinode.storage.k8s.io "${node}" not found`,
      );
    keys = topologyKeysOf(csiNode, input.driverName);
    if (keys.length === 0) throw new TopologyError(`no topology key found for node ${node}`);
    const nodeObject = await cluster.getNode(node, signal);
    if (!nodeObject) throw new TopologyNotFoundError(`failed to get selected node ${node}: node "${node}" not found`);
    const term = termOfLabels(nodeObject.metadata.labels, keys);
    if (!term)
      throw new TopologyError(
        `topology labels from selected node ${JSON.stringify(nodeObject.metadata.labels ?? {})} does not match topology keys from CSINode ${JSON.stringify(keys)}`,
      );
    selected = term;
    if (input.strictTopology) {
      if (allowed.length > 0 && !flattenAllowedTopologies(allowed).some((t) => isSubset(t, selected))) {
        throw new TopologyError(
          `selected node '${JSON.stringify(node)}' topology '${JSON.stringify(Object.fromEntries(selected))}' is not in allowed topologies`,
        );
      }
      requisite = [selected];
    }
  }
  if (requisite.length === 0) {
    if (allowed.length > 0) requisite = flattenAllowedTopologies(allowed);
    else {
      if (!node && !input.immediateTopology) return undefined;
      requisite = await aggregateTopologies(input, keys, cluster, signal);
      if (requisite.length === 0) throw new TopologyError('no available topology found');
    }
  }
  requisite.sort(compareTerms);
  requisite = requisite.filter((t, i) => i === 0 || compareTerms(t, requisite[i - 1]) !== 0);
  let preferred: Term[];
  if (!node) {
    const { hash, index } = claimNameHash(input.claimName);
    const i = ((hash + index) >>> 0) % requisite.length;
    preferred = [...requisite.slice(i), ...requisite.slice(0, i)];
  } else if (input.strictTopology) {
    preferred = requisite;
  } else {
    const i = requisite.findIndex((t) => isSubset(t, selected));
    if (i < 0)
      throw new TopologyError(
        `topology ${JSON.stringify(Object.fromEntries(selected))} from selected node "${node}" is not in requisite`,
      );
    preferred = [...requisite.slice(i), ...requisite.slice(0, i)];
  }
  return { requisite: toCsi(requisite), preferred: toCsi(preferred) };
}

/** The PV's node affinity from CreateVolume's accessible_topology: one term per topology, `key In [value]` each. */
export function volumeNodeAffinity(
  accessible: readonly CsiTopology[] | undefined,
): { required: { nodeSelectorTerms: NodeSelectorTerm[] } } | undefined {
  const terms: NodeSelectorTerm[] = [];
  for (const t of accessible ?? []) {
    const entries = Object.entries(t.segments ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (entries.length === 0) continue;
    terms.push({ matchExpressions: entries.map(([key, value]) => ({ key, operator: 'In', values: [value] })) });
  }
  return terms.length > 0 ? { required: { nodeSelectorTerms: terms } } : undefined;
}
