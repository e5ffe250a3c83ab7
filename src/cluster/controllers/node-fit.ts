// Pure node-fitting rules of the scheduler stand-in (the subset of kube-scheduler's NodeName, NodeAffinity,
// NodeUnschedulable and VolumeBinding plugins that matters for storage): does a pod, with its claims, fit a node.
import type {
  Node, NodeSelector, NodeSelectorRequirement, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, TopologySelectorTerm,
} from '../../types/k8s.ts';
import { ANN_SELECTED_NODE } from '../../types/annotations.ts';
import { isDelayBinding } from './volume-match.ts';

/** Ready condition True and not cordoned. */
export function nodeIsSchedulable(node: Node): boolean {
  if (node.spec?.unschedulable || node.metadata.deletionTimestamp) return false;
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In': return value !== undefined && values.includes(value);
    case 'NotIn': return value === undefined || !values.includes(value);
    case 'Exists': return value !== undefined;
    case 'DoesNotExist': return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0])) return false;
      return req.operator === 'Gt' ? BigInt(value) > BigInt(values[0]) : BigInt(value) < BigInt(values[0]);
    }
    default: return false;
  }
}

/** v1.NodeSelector: terms are ORed, requirements within a term ANDed; an empty term matches nothing. */
export function nodeSelectorMatches(selector: NodeSelector | undefined, node: Node): boolean {
  if (!selector) return true;
  const labels = node.metadata.labels ?? {};
  return (selector.nodeSelectorTerms ?? []).some((term) => {
    const exprs = term.matchExpressions ?? [];
    const fields = term.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) return false;
    return exprs.every((r) => requirementMatches(r, labels[r.key])) &&
      fields.every((r) => requirementMatches(r, r.key === 'metadata.name' ? node.metadata.name : undefined));
  });
}

/** A class's allowedTopologies: empty allows every node; else one term whose every expression matches. */
export function topologyAllows(terms: TopologySelectorTerm[] | undefined, node: Node): boolean {
  if (!terms || terms.length === 0) return true;
  const labels = node.metadata.labels ?? {};
  return terms.some((t) => (t.matchLabelExpressions ?? []).every((e) => labels[e.key] !== undefined && e.values.includes(labels[e.key])));
}

/** The pod's own constraints: spec.nodeName, nodeSelector, required node affinity. */
export function podFitsNode(pod: Pod, node: Node): boolean {
  if (pod.spec.nodeName && pod.spec.nodeName !== node.metadata.name) return false;
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  return nodeSelectorMatches(pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, node);
}

/** Lookups the volume checks need. */
export interface ClaimWorld {
  getVolume(name: string): PersistentVolume | undefined;
  getClass(name: string): StorageClass | undefined;
}

/**
 * Why a claim keeps the pod off `node` (undefined when it fits): a bound claim's PV must accept the node;
 * an unbound claim must be WaitForFirstConsumer (immediate claims bind first), agree with any node already
 * selected for it, and the class's allowedTopologies must admit the node.
 */
export function claimBlocksNode(claim: PersistentVolumeClaim, className: string, node: Node, world: ClaimWorld): string | undefined {
  if (claim.metadata.deletionTimestamp) return `persistentvolumeclaim ${JSON.stringify(claim.metadata.name)} is being deleted`;
  if (claim.spec.volumeName) {
    const pv = world.getVolume(claim.spec.volumeName);
    if (!pv) return `persistentvolume ${JSON.stringify(claim.spec.volumeName)} not found`;
    return nodeSelectorMatches(pv.spec.nodeAffinity?.required, node) ? undefined : 'node(s) had volume node affinity conflict';
  }
  const cls = className ? world.getClass(className) : undefined;
  if (!isDelayBinding(cls)) return 'pod has unbound immediate PersistentVolumeClaims';
  const selected = claim.metadata.annotations?.[ANN_SELECTED_NODE];
  if (selected && selected !== node.metadata.name) return `claim is already provisioning on node ${JSON.stringify(selected)}`;
  return topologyAllows(cls?.allowedTopologies, node) ? undefined : 'node(s) did not match the storage class allowed topologies';
}
