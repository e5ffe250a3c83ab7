// The hostpath provisioner's parameter and feasibility checks as one pure function of (claim, class, node,
// configuration): no I/O, no reservation. provision() runs it and then places the volume; the Provisioner
// contract's checkClaim hook and `kube-provisioner explain` run exactly the same function, so explain cannot
// say "provision" for a claim provision() refuses. Capacity (live allocations, free space) is not part of it.
import type { AccessMode, Node, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { LABEL_HOSTNAME } from '../types/annotations.ts';
import { isQuantity, parseQuantity } from '../types/quantity.ts';
import type { ClaimCheckResult } from '../controller/provisioner.ts';
import { shortenText } from '../controller/event-bounds.ts';
import { nodeBasePaths, pathSetForClass, type BasePath, type HostPathConfig, type PathSet } from './config.ts';
import { parseClassParameters, StorageClassParameterError, type ClassParameters, type VolumeType } from './class-parameters.ts';
import { SHARED_SCOPE } from './capacity.ts';

/** Everything the check looks at. */
export interface HostPathClaimCheckInput {
  claim: PersistentVolumeClaim;
  storageClass: StorageClass;
  pvName?: string;
  selectedNodeName?: string;
  selectedNode?: Node;
  config: HostPathConfig;
  mode: 'deployment' | 'daemonset';
  /** The node this instance runs on. */
  nodeName?: string;
}

/** What provision() needs once the checks passed. */
export interface HostPathPlan {
  className: string;
  params: ClassParameters;
  accessModes: AccessMode[];
  request: string;
  bytes: bigint;
  set: PathSet;
  /** The shared path, when the class uses one. */
  shared?: BasePath;
  /** The node the volume goes to (node paths), or the default node (shared). */
  node?: string;
  /** Base paths the volume may go to, before capacity. */
  candidates: BasePath[];
  /** Allocation scope: the node, or SHARED_SCOPE. */
  scope: string;
  volumeType: VolumeType;
  affinity?: { key: string; value: string };
}

/** A failed check: the contract's verdict kinds. */
export type HostPathCheckFailure = Extract<ClaimCheckResult, { ok: false }>;

const PV_NAME_RE = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
// DNS-1123 subdomain: what the API server requires of a Node name.
const NODE_NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NODE_ONLY_MODES: AccessMode[] = ['ReadWriteOnce', 'ReadWriteOncePod'];

const infeasible = (message: string): HostPathCheckFailure => ({ ok: false, kind: 'infeasible', message });

// With a selected node, another node may do: Reschedule (the controller clears selected-node). Without, give up.
function rescheduleOrInfeasible(i: HostPathClaimCheckInput, message: string): HostPathCheckFailure {
  return i.selectedNodeName ? { ok: false, kind: 'reschedule', message: `${message}; asking the scheduler for another node` } : infeasible(message);
}

/** Runs every check in provision()'s order; the first failure wins. */
export function planHostPathClaim(i: HostPathClaimCheckInput): { ok: true; plan: HostPathPlan } | HostPathCheckFailure {
  const { claim, storageClass } = i;
  const className = storageClass.metadata.name ?? '';
  if (i.mode === 'daemonset' && i.selectedNodeName !== i.nodeName) {
    return { ok: false, kind: 'ignored', message: `claim is ${i.selectedNodeName ? `scheduled to node ${i.selectedNodeName}` : 'not scheduled to a node'}; this instance serves node ${i.nodeName}` };
  }
  // Tenant-writable annotation that ends up in the node affinity, the ledger scope and the path lookup.
  if (i.selectedNodeName !== undefined && (i.selectedNodeName.length > 253 || !NODE_NAME_RE.test(i.selectedNodeName))) {
    return infeasible(`the claim's selected node ${shortenText(JSON.stringify(i.selectedNodeName), 256)} is not a valid node name (a DNS-1123 subdomain)`);
  }
  if (i.pvName !== undefined && !PV_NAME_RE.test(i.pvName)) return infeasible(`volume name ${JSON.stringify(i.pvName)} is not a valid DNS subdomain`);
  if (claim.spec.volumeMode === 'Block') return infeasible('volumeMode Block is not supported by the hostpath provisioner: its volumes are directories');
  if (claim.spec.dataSource || claim.spec.dataSourceRef) return infeasible('claims with a dataSource (clones, snapshots, populators) are not supported by the hostpath provisioner');
  if (claim.spec.selector) return infeasible('claims with a label selector cannot be provisioned: hostpath volumes are created, not matched');
  let params: ClassParameters;
  try {
    params = parseClassParameters(storageClass.parameters);
  } catch (e) {
    if (e instanceof StorageClassParameterError) return infeasible(e.message);
    throw e;
  }
  const accessModes = claim.spec.accessModes ?? [];
  if (accessModes.length === 0) return infeasible('the claim has no accessModes');
  const request = claim.spec.resources?.requests?.storage;
  if (!isQuantity(request) || parseQuantity(request) <= 0n) return infeasible(`the claim's storage request ${JSON.stringify(request)} is not a positive quantity`);
  const bytes = parseQuantity(request);

  const set = pathSetForClass(i.config, className);
  if (!set) return infeasible(`storage class ${className} is not listed in the hostpath configuration's storageClassConfigs`);
  const shared = set.sharedFileSystemPath;
  const node = i.selectedNodeName ?? (i.mode === 'deployment' ? i.nodeName : undefined);
  let candidates: BasePath[];
  let scope: string;
  if (shared) {
    candidates = [shared];
    scope = SHARED_SCOPE;
  } else {
    if (!node) return infeasible(`storage class ${className} uses node-local paths: it needs volumeBindingMode WaitForFirstConsumer (no node was selected)`);
    const bad = accessModes.filter((m) => !NODE_ONLY_MODES.includes(m));
    if (bad.length > 0) return infeasible(`access mode ${bad.join(', ')} is not possible on node-local paths (only ReadWriteOnce, ReadWriteOncePod; use sharedFileSystemPath for shared volumes)`);
    candidates = nodeBasePaths(set, node) ?? [];
    scope = node;
    if (candidates.length === 0) return rescheduleOrInfeasible(i, `node ${node} has no paths for storage class ${className}`);
  }
  const volumeType = params.volumeType ?? (shared ? 'hostPath' : 'local');
  if (shared && volumeType === 'local') return infeasible('volumeType local needs node affinity; volumes on the shared path are hostPath volumes');
  if (params.nodePath !== undefined) {
    candidates = candidates.filter((c) => c.path === params.nodePath);
    if (candidates.length === 0) {
      const anywhere = shared ? shared.path === params.nodePath : set.nodePathMap.some((n) => n.paths.some((p) => p.path === params.nodePath));
      if (!anywhere) return infeasible(`nodePath ${params.nodePath} is not a configured path for storage class ${className}`);
      return rescheduleOrInfeasible(i, `nodePath ${params.nodePath} is not configured on node ${node}`);
    }
  }
  let affinity: HostPathPlan['affinity'];
  if (!shared) {
    const labels = i.selectedNode?.metadata.labels ?? {};
    const v = Object.prototype.hasOwnProperty.call(labels, params.nodeAffinityKey) ? labels[params.nodeAffinityKey] : undefined;
    if (v) affinity = { key: params.nodeAffinityKey, value: v };
    else if (params.nodeAffinityKey === LABEL_HOSTNAME) affinity = { key: params.nodeAffinityKey, value: node! };
    else return infeasible(`node ${node} has no label ${params.nodeAffinityKey} (the class's nodeAffinityKey)`);
  }
  return { ok: true, plan: { className, params, accessModes, request: request as string, bytes, set, shared, node, candidates, scope, volumeType, affinity } };
}
