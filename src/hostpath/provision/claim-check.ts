// The hostpath provisioner's parameter and feasibility checks as one pure function of (claim, class, node,
// configuration): no I/O, no reservation. provision() runs it and then places the volume; the Provisioner
// contract's checkClaim hook and `kube-provisioner explain` run exactly the same function, so explain cannot
// say "provision" for a claim provision() refuses. It covers the request and class parameters, the path kind and
// node, deployment mode's refusal of another node's claim, the PV type (parameter and local-path annotations, NFS
// exports), the node affinity when the node's labels are at hand, and the directory name the pattern renders.
// What depends on live state is provision()'s alone: capacity, the live volumes a directory may collide with
// (stable names), and a node's labels that need a GET.
import type { AccessMode, Node, PersistentVolumeClaim, StorageClass } from '../../types/k8s.ts';
import { LABEL_HOSTNAME } from '../../types/annotations.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import { isDnsSubdomain } from '../../types/names.ts';
import { shortenText } from '../../types/text.ts';
import type { ClaimCheckResult } from '../../controller/provisioner.ts';
import {
  nodeBasePaths,
  pathSetForClass,
  type BasePath,
  type HostPathConfig,
  type NfsExport,
  type PathSet,
} from '../config/hostpath-config.ts';
import { parseClassParameters, StorageClassParameterError, type ClassParameters } from '../config/class-parameters.ts';
import { defaultVolumeDirName, nfsSubdirVolumeDirName, PathTemplateError } from '../paths/path-template.ts';
import { checkRelativeVolumePath, UnsafePathError } from '../paths/path-safety.ts';
import { canonicalRenderedPath } from '../paths/canonical-path.ts';
import {
  chooseVolumeType,
  exportOfPathSet,
  VolumeTypeAnnotationError,
  type MountedExport,
  type PublishedType,
} from '../volume/volume-source.ts';
import { SHARED_SCOPE } from '../ledger/volume-ledger.ts';

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
  /** The export the top-level shared path is mounted from when the configuration does not say (NFS_SERVER/NFS_PATH). */
  nfs?: NfsExport;
  /** deployment mode, a node-local claim of another node: refuse (default) or ignore. */
  otherNodeClaims?: 'refuse' | 'ignore';
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
  volumeType: PublishedType;
  /** The export the shared path is mounted from (its PVs are nfs unless the class says otherwise). */
  nfsExport?: MountedExport;
  /** Node paths: the affinity, when the node's labels were at hand (or the key is the hostname). */
  affinity?: { key: string; value: string };
  /** The directory below the base path the pattern renders (only with a pvName). */
  relativePath?: string;
}

/** A failed check: the contract's verdict kinds. */
export type HostPathCheckFailure = Extract<ClaimCheckResult, { ok: false }>;

const PV_NAME_RE = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const NODE_ONLY_MODES: AccessMode[] = ['ReadWriteOnce', 'ReadWriteOncePod'];

const infeasible = (message: string, cause?: unknown): HostPathCheckFailure =>
  cause === undefined ? { ok: false, kind: 'infeasible', message } : { ok: false, kind: 'infeasible', message, cause };

// With a selected node, another node may do: Reschedule (the controller clears selected-node). Without, give up.
function rescheduleOrInfeasible(i: HostPathClaimCheckInput, message: string): HostPathCheckFailure {
  return i.selectedNodeName
    ? { ok: false, kind: 'reschedule', message: `${message}; asking the scheduler for another node` }
    : infeasible(message);
}

// Configuration and tenant-input errors: infeasible as they stand.
function tenantError(e: unknown): HostPathCheckFailure {
  if (
    e instanceof StorageClassParameterError ||
    e instanceof PathTemplateError ||
    e instanceof UnsafePathError ||
    e instanceof VolumeTypeAnnotationError
  ) {
    return infeasible(e.message, e);
  }
  throw e;
}

/** Runs every check in provision()'s order; the first failure wins. */
export function planHostPathClaim(i: HostPathClaimCheckInput): { ok: true; plan: HostPathPlan } | HostPathCheckFailure {
  const { claim, storageClass } = i;
  const className = storageClass.metadata.name ?? '';
  if (i.mode === 'daemonset' && i.selectedNodeName !== i.nodeName) {
    return {
      ok: false,
      kind: 'ignored',
      message: `claim is ${i.selectedNodeName ? `scheduled to node ${i.selectedNodeName}` : 'not scheduled to a node'}; this instance serves node ${i.nodeName}`,
    };
  }
  // Tenant-writable annotation that ends up in the node affinity, the ledger scope and the path lookup.
  if (i.selectedNodeName !== undefined && !isDnsSubdomain(i.selectedNodeName)) {
    return infeasible(
      `the claim's selected node ${shortenText(JSON.stringify(i.selectedNodeName), 256)} is not a valid node name (a DNS-1123 subdomain)`,
    );
  }
  if (i.pvName !== undefined && !PV_NAME_RE.test(i.pvName))
    return infeasible(`volume name ${JSON.stringify(i.pvName)} is not a valid DNS subdomain`);
  if (claim.spec.volumeMode === 'Block')
    return infeasible('volumeMode Block is not supported by the hostpath provisioner: its volumes are directories');
  if (claim.spec.dataSource || claim.spec.dataSourceRef)
    return infeasible(
      'claims with a dataSource (clones, snapshots, populators) are not supported by the hostpath provisioner',
    );
  if (claim.spec.selector)
    return infeasible('claims with a label selector cannot be provisioned: hostpath volumes are created, not matched');
  let params: ClassParameters;
  try {
    params = parseClassParameters(storageClass.parameters);
  } catch (e) {
    return tenantError(e);
  }
  const accessModes = claim.spec.accessModes ?? [];
  if (accessModes.length === 0) return infeasible('the claim has no accessModes');
  const request = claim.spec.resources?.requests?.storage;
  if (!isQuantity(request) || parseQuantity(request) <= 0n)
    return infeasible(`the claim's storage request ${JSON.stringify(request)} is not a positive quantity`);
  const bytes = parseQuantity(request);

  const set = pathSetForClass(i.config, className);
  if (!set)
    return infeasible(
      `storage class ${className} is not listed in the hostpath configuration's storageClassConfigs, which has no top-level path for the classes it does not list`,
    );
  const shared = set.sharedFileSystemPath;
  const node = i.selectedNodeName ?? (i.mode === 'deployment' ? i.nodeName : undefined);
  let candidates: BasePath[];
  let scope: string;
  if (shared) {
    candidates = [shared];
    scope = SHARED_SCOPE;
  } else {
    if (!node)
      return infeasible(
        `storage class ${className} uses node-local paths: it needs volumeBindingMode WaitForFirstConsumer (no node was selected)`,
      );
    const bad = accessModes.filter((m) => !NODE_ONLY_MODES.includes(m));
    if (bad.length > 0)
      return infeasible(
        `access mode ${bad.join(', ')} is not possible on node-local paths (only ReadWriteOnce, ReadWriteOncePod; use sharedFileSystemPath for shared volumes)`,
      );
    candidates = nodeBasePaths(set, node) ?? [];
    scope = node;
    if (candidates.length === 0)
      return rescheduleOrInfeasible(i, `node ${node} has no paths for storage class ${className}`);
  }
  if (params.nodePath !== undefined) {
    candidates = candidates.filter((c) => c.path === params.nodePath);
    if (candidates.length === 0) {
      const anywhere = shared
        ? shared.path === params.nodePath
        : set.nodePathMap.some((n) => n.paths.some((p) => p.path === params.nodePath));
      if (!anywhere)
        return infeasible(`nodePath ${params.nodePath} is not a configured path for storage class ${className}`);
      return rescheduleOrInfeasible(i, `nodePath ${params.nodePath} is not configured on node ${node}`);
    }
  }
  // A deployment-mode instance reaches only its own node's disks.
  if (!shared && i.mode === 'deployment' && node !== i.nodeName)
    return otherNodeRefusal(node!, i.nodeName, i.otherNodeClaims);
  const nfsExport = exportOfPathSet(set, i.config, i.nfs);
  let volumeType: PublishedType;
  try {
    volumeType = chooseVolumeType({
      claimAnnotations: claim.metadata.annotations,
      classAnnotations: storageClass.metadata.annotations,
      parameter: params.volumeType,
      shared: shared !== undefined,
      nfs: nfsExport !== undefined,
    });
  } catch (e) {
    return tenantError(e);
  }
  if (shared && volumeType === 'local')
    return infeasible('volumeType local needs node affinity; volumes on the shared path are hostPath volumes');
  const affinity = shared ? undefined : knownAffinity(i, params.nodeAffinityKey, node!);
  if (affinity && 'message' in affinity) return affinity;
  let relativePath: string | undefined;
  if (i.pvName !== undefined) {
    const data = {
      pvName: i.pvName,
      claim: {
        namespace: claim.metadata.namespace ?? '',
        name: claim.metadata.name ?? '',
        labels: claim.metadata.labels,
        annotations: claim.metadata.annotations,
      },
    };
    const defaultName = nfsExport ? nfsSubdirVolumeDirName : defaultVolumeDirName;
    try {
      relativePath = canonicalRenderedPath(params.pathPattern ? params.pathPattern.render(data) : defaultName(data));
      checkRelativeVolumePath(relativePath);
    } catch (e) {
      return tenantError(e);
    }
  }
  return {
    ok: true,
    plan: {
      className,
      params,
      accessModes,
      request: request as string,
      bytes,
      set,
      shared,
      node,
      candidates,
      scope,
      volumeType,
      nfsExport,
      affinity,
      relativePath,
    },
  };
}

// The affinity from the node object at hand (or the node name for the hostname key); undefined when the labels
// need a lookup (provision() does it); a failure when the node at hand lacks the label.
function knownAffinity(
  i: HostPathClaimCheckInput,
  key: string,
  node: string,
): HostPathPlan['affinity'] | HostPathCheckFailure {
  const labels = i.selectedNode?.metadata.labels;
  const v = labels && Object.prototype.hasOwnProperty.call(labels, key) ? labels[key] : undefined;
  if (v) return { key, value: v };
  if (key === LABEL_HOSTNAME) return { key, value: node };
  if (i.selectedNode) return infeasible(`node ${node} has no label ${key} (the class's nodeAffinityKey)`);
  return undefined;
}

/**
 * A deployment-mode instance reaches only its own node's disks: a claim of another node is ignored (that node's
 * instance serves it) or refused with how to fix it.
 */
function otherNodeRefusal(
  node: string,
  ownNode: string | undefined,
  policy: 'refuse' | 'ignore' | undefined,
): { ok: false; kind: 'ignored' | 'infeasible'; message: string } {
  if (policy === 'ignore')
    return {
      ok: false,
      kind: 'ignored',
      message: `claim is scheduled to node ${node}; node-local volumes are created by that node's instance`,
    };
  const here = ownNode ? `runs on node ${ownNode}` : 'does not know its node (--node-name)';
  return {
    ok: false,
    kind: 'infeasible',
    message:
      `claim is scheduled to node ${node}, but this deployment-mode instance ${here} and cannot create a directory on another node's disk. ` +
      'Fix: run the node-local DaemonSet (deploy/node-local) for this provisioner name and start the deployment with --other-node-claims=ignore, ' +
      'or use a class on a shared path (sharedFileSystemPath)',
  };
}
