// The Node object for this machine, created at start as a kubelet would register it: the name is the
// hostname (lower-cased into a valid DNS subdomain), labelled kubernetes.io/hostname, with a Ready condition.
// WaitForFirstConsumer provisioning needs a node to select and a provisioner GETs that node.
import os from 'node:os';
import type { Node } from '../../types/k8s.ts';
import { LABEL_HOSTNAME } from '../../types/annotations.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { formatMicroTime, formatTime } from '../common/meta.ts';

export const KUBELET_VERSION = 'v1.32.0';

/** `os.hostname()` turned into a DNS-1123 subdomain (what kubelet does with --hostname-override unset). */
export function localNodeName(hostname: string = os.hostname()): string {
  const name = hostname
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .slice(0, 253);
  return name || 'localhost';
}

function internalIp(): string | undefined {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

/** The node as registered now. */
export function localNodeObject(name: string, now: number): Node {
  const time = formatTime(now);
  const ip = internalIp();
  const ready = {
    type: 'Ready',
    status: 'True',
    reason: 'KubeletReady',
    message: 'kubelet is posting ready status',
    lastHeartbeatTime: time,
    lastTransitionTime: time,
  };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        [LABEL_HOSTNAME]: name,
        'kubernetes.io/os': os.platform() === 'win32' ? 'windows' : os.platform(),
        'kubernetes.io/arch': os.arch() === 'x64' ? 'amd64' : os.arch(),
        'beta.kubernetes.io/os': os.platform(),
        'beta.kubernetes.io/arch': os.arch() === 'x64' ? 'amd64' : os.arch(),
      },
    },
    spec: {},
    status: {
      conditions: [ready],
      addresses: [...(ip ? [{ type: 'InternalIP', address: ip }] : []), { type: 'Hostname', address: name }],
      capacity: { cpu: String(os.cpus().length), memory: `${Math.floor(os.totalmem() / 1024)}Ki`, pods: '110' },
      allocatable: { cpu: String(os.cpus().length), memory: `${Math.floor(os.totalmem() / 1024)}Ki`, pods: '110' },
      nodeInfo: {
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: KUBELET_VERSION,
        operatingSystem: os.platform(),
        architecture: os.arch() === 'x64' ? 'amd64' : os.arch(),
        kernelVersion: os.release(),
        osImage: `${os.type()} ${os.release()}`,
        containerRuntimeVersion: '',
        machineID: '',
        systemUUID: '',
        bootID: '',
      },
    } as Node['status'],
  };
}

/**
 * Registers the node (or marks an existing one, e.g. from a persistent data dir, Ready again).
 * Status is written through /status as well, since a store may ignore status on create.
 */
export function ensureLocalNode(store: ClusterStore, name: string, now: number = Date.now()): Node {
  const desired = localNodeObject(name, now);
  let current = store.get('nodes', undefined, name) as Node | undefined;
  if (!current) {
    try {
      current = store.create('nodes', desired, { user: `system:node:${name}` }) as Node;
    } catch (err) {
      if (!(err instanceof ClusterApiError && err.code === 409)) throw err;
      current = store.get('nodes', undefined, name) as Node;
    }
  }
  const ready = current.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'True' || !(current.status as Record<string, unknown> | undefined)?.nodeInfo) {
    current = store.update(
      'nodes',
      { ...current, status: desired.status },
      { subresource: 'status', user: `system:node:${name}` },
    ) as Node;
  }
  ensureNodeLease(store, current, now);
  return current;
}

/** The node's heartbeat Lease in kube-node-lease (kubectl describe node shows it; missing reads as an error). */
function ensureNodeLease(store: ClusterStore, node: Node, now: number): void {
  const name = node.metadata.name ?? '';
  if (!store.get('namespaces', undefined, 'kube-node-lease')) return;
  const spec = { holderIdentity: name, leaseDurationSeconds: 40, renewTime: formatMicroTime(now) };
  const existing = store.get('leases', 'kube-node-lease', name);
  try {
    if (existing)
      store.update(
        'leases',
        { ...existing, spec: { ...(existing.spec as object), ...spec } },
        { user: `system:node:${name}` },
      );
    else {
      store.create(
        'leases',
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name,
            namespace: 'kube-node-lease',
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata.uid ?? '' }],
          },
          spec,
        },
        { user: `system:node:${name}` },
      );
    }
  } catch (err) {
    if (!(err instanceof ClusterApiError)) throw err;
  }
}
