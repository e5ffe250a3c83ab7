// Pure node-fitting rules of the scheduler stand-in (the subset of kube-scheduler's NodeName, NodeAffinity,
// NodeUnschedulable and VolumeBinding plugins that matters for storage): does a pod, with its claims, fit a node.
// A claim to provision must fit the class's allowedTopologies and, when the class's CSI driver asks for capacity
// tracking, some CSIStorageCapacity of that class (volumebinding binder.go checkVolumeProvisions, hasEnoughCapacity).
import type {
  Node,
  NodeSelector,
  NodeSelectorRequirement,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
  TopologySelectorTerm,
} from '../../types/k8s.ts';
import { ANN_SELECTED_NODE } from '../../types/annotations.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import type { CSIDriver, CSIStorageCapacity } from '../../types/storage-objects.ts';
import { labelSelectorToPredicate, SelectorError } from '../common/selectors.ts';
import { isDelayBinding } from './volume-match.ts';

/** Ready condition True and not cordoned. */
export function nodeIsSchedulable(node: Node): boolean {
  if (node.spec?.unschedulable || node.metadata.deletionTimestamp) return false;
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]))
        return false;
      return req.operator === 'Gt' ? BigInt(value) > BigInt(values[0]) : BigInt(value) < BigInt(values[0]);
    }
    default:
      return false;
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
    return (
      exprs.every((r) => requirementMatches(r, labels[r.key])) &&
      fields.every((r) => requirementMatches(r, r.key === 'metadata.name' ? node.metadata.name : undefined))
    );
  });
}

/** MatchTopologySelectorTerms: no terms allow every node; else one term, not empty, whose every expression matches. */
export function topologyAllows(terms: TopologySelectorTerm[] | undefined, node: Node): boolean {
  if (!terms || terms.length === 0) return true;
  const labels = node.metadata.labels ?? {};
  return terms.some((t) => {
    const exprs = t.matchLabelExpressions ?? [];
    return exprs.length > 0 && exprs.every((e) => labels[e.key] !== undefined && e.values.includes(labels[e.key]));
  });
}

/** capacitySufficient: maximumVolumeSize when reported (more precise), else capacity; neither means no room. */
function capacitySufficient(capacity: CSIStorageCapacity, bytes: bigint): boolean {
  const limit = capacity.maximumVolumeSize ?? capacity.capacity;
  return isQuantity(limit) && parseQuantity(limit) >= bytes;
}

/** nodeHasAccess: a capacity without nodeTopology is available nowhere; else its selector must match the node. */
function nodeHasAccess(capacity: CSIStorageCapacity, node: Node): boolean {
  if (!capacity.nodeTopology) return false;
  try {
    return labelSelectorToPredicate(capacity.nodeTopology)(node.metadata.labels ?? {});
  } catch (err) {
    if (err instanceof SelectorError) return false;
    throw err;
  }
}

/**
 * hasEnoughCapacity: only for a claim with a storage request whose class's provisioner is a CSIDriver with
 * `storageCapacity: true`; then some CSIStorageCapacity of the class must reach the node and hold the request.
 * `capacities` is that one class's list, so the cost does not grow with other classes' objects.
 */
export function hasEnoughCapacity(
  claim: PersistentVolumeClaim,
  cls: StorageClass,
  node: Node,
  driver: CSIDriver | undefined,
  capacities: Iterable<CSIStorageCapacity>,
): boolean {
  const request = claim.spec.resources?.requests?.storage;
  if (request === undefined) return true;
  if (driver?.spec?.storageCapacity !== true) return true;
  if (!isQuantity(request)) return false;
  const bytes = parseQuantity(request);
  for (const c of capacities)
    if (c.storageClassName === cls.metadata.name && capacitySufficient(c, bytes) && nodeHasAccess(c, node)) return true;
  return false;
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
  /** The CSIDriver of this name (a class's provisioner), if one exists. */
  getDriver?(name: string): CSIDriver | undefined;
  /** The CSIStorageCapacity objects of one storage class. */
  capacitiesFor?(className: string): Iterable<CSIStorageCapacity>;
}

/**
 * Why a claim keeps the pod off `node` (undefined when it fits): a bound claim's PV must accept the node;
 * an unbound claim must be WaitForFirstConsumer (immediate claims bind first), agree with any node already
 * selected for it, the class's allowedTopologies must admit the node, and its CSI driver's published capacity
 * (when it tracks capacity) must hold the claim there. Messages are kube-scheduler's.
 */
export function claimBlocksNode(
  claim: PersistentVolumeClaim,
  className: string,
  node: Node,
  world: ClaimWorld,
): string | undefined {
  if (claim.metadata.deletionTimestamp)
    return `persistentvolumeclaim ${JSON.stringify(claim.metadata.name)} is being deleted`;
  if (claim.spec.volumeName) {
    const pv = world.getVolume(claim.spec.volumeName);
    if (!pv) return `persistentvolume ${JSON.stringify(claim.spec.volumeName)} not found`;
    return nodeSelectorMatches(pv.spec.nodeAffinity?.required, node)
      ? undefined
      : 'node(s) had volume node affinity conflict';
  }
  const cls = className ? world.getClass(className) : undefined;
  if (!isDelayBinding(cls)) return 'pod has unbound immediate PersistentVolumeClaims';
  const selected = claim.metadata.annotations?.[ANN_SELECTED_NODE];
  if (selected && selected !== node.metadata.name)
    return `claim is already provisioning on node ${JSON.stringify(selected)}`;
  if (!topologyAllows(cls?.allowedTopologies, node))
    return 'node(s) did not match the storage class allowed topologies';
  if (
    cls &&
    !hasEnoughCapacity(
      claim,
      cls,
      node,
      world.getDriver?.(cls.provisioner),
      world.capacitiesFor?.(cls.metadata.name ?? '') ?? [],
    )
  ) {
    return 'node(s) did not have enough free storage';
  }
  return undefined;
}
