// Server-side printing: the meta.k8s.io/v1 Table answers `kubectl get` asks for, with the columns and cell
// formats of kube-apiserver 1.32 (k/k pkg/printers/internalversion/printers.go). The server always prints
// "wide": priority-1 cells are present in every row and kubectl hides them unless `-o wide`.
import type { KubeObject } from '../../types/k8s.ts';
import { ANN_BETA_STORAGE_CLASS } from '../../types/annotations.ts';
import { DESC_AGE, ageColumn, column, countKeys, nameColumn, nonEmpty, rec, spec, status, str, type TableColumn } from './table-columns.ts';
import { daemonSetColumns, deploymentColumns, serviceAccountColumns } from './tables-apps-rbac.ts';

export { age, humanDuration, type TableColumn } from './table-columns.ts';
export { labelSelectorString } from './tables-apps-rbac.ts';

const ACCESS_MODE_ABBREVIATIONS: Array<[string, string]> = [
  ['ReadWriteOnce', 'RWO'], ['ReadOnlyMany', 'ROX'], ['ReadWriteMany', 'RWX'], ['ReadWriteOncePod', 'RWOP'],
];

/** `GetAccessModesAsString`: abbreviations in fixed order, deduplicated (`RWO,RWX`). */
export function accessModesString(modes: unknown): string {
  const set = new Set(Array.isArray(modes) ? modes : []);
  return ACCESS_MODE_ABBREVIATIONS.filter(([mode]) => set.has(mode)).map(([, abbr]) => abbr).join(',');
}


/** The phase a printer shows: `Terminating` wins over status.phase once deletion started. */
function phaseOrTerminating(o: KubeObject): string {
  return o.metadata.deletionTimestamp ? 'Terminating' : str(status(o).phase);
}

/** Class of a PV or PVC: the legacy beta annotation wins over spec.storageClassName (GetPersistentVolume[Claim]Class). */
function storageClassOf(o: KubeObject): string {
  const beta = o.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (beta !== undefined) return beta;
  return str(spec(o).storageClassName);
}

const pvcColumns: TableColumn[] = [
  nameColumn,
  column('Status', 'phase represents the current phase of PersistentVolumeClaim.', phaseOrTerminating),
  column('Volume', 'volumeName is the binding reference to the PersistentVolume backing this claim.', (o) => str(spec(o).volumeName)),
  column('Capacity', 'capacity represents the actual resources of the underlying volume.', (o) =>
    str(spec(o).volumeName) !== '' ? str(rec(status(o).capacity).storage, '0') : ''),
  column('Access Modes', 'accessModes contains the actual access modes the volume backing the PVC has.', (o) =>
    str(spec(o).volumeName) !== '' ? accessModesString(status(o).accessModes) : ''),
  column('StorageClass', 'StorageClass of the pvc', storageClassOf),
  column('VolumeAttributesClass', 'VolumeAttributesClass of the pvc', (o) => nonEmpty(spec(o).volumeAttributesClassName, '<unset>')),
  ageColumn,
  column('VolumeMode', 'volumeMode defines what type of volume is required by the claim.', (o) => nonEmpty(spec(o).volumeMode, '<unset>'), 1),
];

const pvColumns: TableColumn[] = [
  nameColumn,
  column('Capacity', 'capacity is the description of the persistent volume\'s resources and capacity.', (o) => str(rec(spec(o).capacity).storage, '0')),
  column('Access Modes', 'accessModes contains all ways the volume can be mounted.', (o) => accessModesString(spec(o).accessModes)),
  column('Reclaim Policy', 'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.', (o) => str(spec(o).persistentVolumeReclaimPolicy)),
  column('Status', 'phase indicates if a volume is available, bound to a claim, or released by a claim.', phaseOrTerminating),
  column('Claim', 'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.', (o) => {
    const ref = spec(o).claimRef;
    if (ref === undefined || ref === null) return '';
    return `${str(rec(ref).namespace)}/${str(rec(ref).name)}`;
  }),
  column('StorageClass', 'StorageClass of the pv', storageClassOf),
  column('VolumeAttributesClass', 'VolumeAttributesClass of the pv', (o) => nonEmpty(spec(o).volumeAttributesClassName, '<unset>')),
  column('Reason', 'reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.', (o) => str(status(o).reason)),
  ageColumn,
  column('VolumeMode', 'volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.', (o) => nonEmpty(spec(o).volumeMode, '<unset>'), 1),
];

function nodeInfo(o: KubeObject): Record<string, unknown> {
  return rec(status(o).nodeInfo);
}
function nodeAddress(o: KubeObject, type: string): string {
  const addresses = Array.isArray(status(o).addresses) ? (status(o).addresses as unknown[]) : [];
  const found = addresses.map(rec).find((a) => a.type === type);
  return found ? str(found.address, '<none>') : '<none>';
}

const nodeColumns: TableColumn[] = [
  nameColumn,
  column('Status', 'The status of the node', (o) => {
    const conditions = Array.isArray(status(o).conditions) ? (status(o).conditions as unknown[]).map(rec) : [];
    const ready = conditions.find((c) => c.type === 'Ready');
    const parts = [ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
    if (spec(o).unschedulable === true) parts.push('SchedulingDisabled');
    return parts.join(',');
  }),
  column('Roles', 'The roles of the node', (o) => {
    const roles = new Set<string>();
    for (const [k, v] of Object.entries(o.metadata.labels ?? {})) {
      if (k.startsWith('node-role.kubernetes.io/')) roles.add(k.slice('node-role.kubernetes.io/'.length));
      else if (k === 'kubernetes.io/role' && v !== '') roles.add(v);
    }
    return roles.size === 0 ? '<none>' : [...roles].sort().join(',');
  }),
  ageColumn,
  column('Version', 'Kubelet Version reported by the node.', (o) => str(nodeInfo(o).kubeletVersion)),
  column('Internal-IP', 'List of internal IPs assigned to the node.', (o) => nodeAddress(o, 'InternalIP'), 1),
  column('External-IP', 'List of external IPs assigned to the node.', (o) => nodeAddress(o, 'ExternalIP'), 1),
  column('OS-Image', 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).', (o) => nonEmpty(nodeInfo(o).osImage, '<unknown>'), 1),
  column('Kernel-Version', 'Kernel Version reported by the node from \'uname -r\' (e.g. 3.16.0-0.bpo.4-amd64).', (o) => nonEmpty(nodeInfo(o).kernelVersion, '<unknown>'), 1),
  column('Container-Runtime', 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).', (o) => nonEmpty(nodeInfo(o).containerRuntimeVersion, '<unknown>'), 1),
];

function containerStatuses(o: KubeObject): Array<Record<string, unknown>> {
  const list = status(o).containerStatuses;
  return Array.isArray(list) ? list.map(rec) : [];
}

const podColumns: TableColumn[] = [
  nameColumn,
  column('Ready', 'The aggregate readiness state of this pod for accepting traffic.', (o) => {
    const containers = Array.isArray(spec(o).containers) ? (spec(o).containers as unknown[]).length : 0;
    return `${containerStatuses(o).filter((c) => c.ready === true).length}/${containers}`;
  }),
  column('Status', 'The aggregate status of the containers in this pod.', (o) => {
    if (o.metadata.deletionTimestamp) return status(o).reason === 'NodeLost' ? 'Unknown' : 'Terminating';
    return nonEmpty(status(o).reason, '') || nonEmpty(status(o).phase, 'Pending');
  }),
  column('Restarts', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.', (o) =>
    String(containerStatuses(o).reduce((n, c) => n + (typeof c.restartCount === 'number' ? c.restartCount : 0), 0))),
  ageColumn,
  column('IP', 'podIP address allocated to the pod.', (o) => nonEmpty(status(o).podIP, '<none>'), 1),
  column('Node', 'NodeName indicates in which node this pod is scheduled.', (o) => nonEmpty(spec(o).nodeName, '<none>'), 1),
  column('Nominated Node', 'nominatedNodeName is set only when this pod preempts other pods on the node.', (o) => nonEmpty(status(o).nominatedNodeName, '<none>'), 1),
  column('Readiness Gates', 'If specified, all readiness gates will be evaluated for pod readiness.', () => '<none>', 1),
];

const namespaceColumns: TableColumn[] = [
  nameColumn,
  column('Status', 'The status of the namespace', (o) => str(status(o).phase, 'Active')),
  ageColumn,
];

const configMapColumns: TableColumn[] = [
  nameColumn,
  column('Data', 'Number of data in configmap', (o) => countKeys(o.data, o.binaryData), 0, 'integer'),
  ageColumn,
];

const secretColumns: TableColumn[] = [
  nameColumn,
  column('Type', 'The type of the secret', (o) => str(o.type, 'Opaque')),
  column('Data', 'The number of entries in the secret', (o) => countKeys(o.data), 0, 'integer'),
  ageColumn,
];

/** Column sets keyed by resource plural; a resource not listed gets the generic Name / Created At table. */
export const TABLE_COLUMNS: Record<string, TableColumn[]> = {
  persistentvolumeclaims: pvcColumns,
  persistentvolumes: pvColumns,
  nodes: nodeColumns,
  pods: podColumns,
  namespaces: namespaceColumns,
  configmaps: configMapColumns,
  secrets: secretColumns,
  serviceaccounts: serviceAccountColumns,
  deployments: deploymentColumns,
  daemonsets: daemonSetColumns,
  // The rbac kinds carry their columns on their entries (rbac.ts).
};

/** The apiserver's default table convertor, for resources without a printer. */
export const DEFAULT_TABLE_COLUMNS: TableColumn[] = [
  nameColumn,
  { name: 'Created At', type: 'date', description: DESC_AGE, priority: 0, cell: (o) => str(o.metadata.creationTimestamp) },
];

/** What `includeObject` asks each row to carry. */
export type IncludeObject = 'None' | 'Object' | 'Metadata';

/**
 * Builds the meta.k8s.io/v1 Table for a list (or a single object, or one watch event). `includeObject` =
 * Metadata (kubectl's default) attaches a PartialObjectMetadata per row, which kubectl needs for `-A`,
 * `--show-labels` and `-L`.
 */
export function toTable(
  rt: { resource: string; kind: string; group: string; version: string; columns?: TableColumn[] },
  objects: KubeObject[],
  listMeta: { resourceVersion?: string; continue?: string },
  includeObject: IncludeObject,
  now: number = Date.now(),
): object {
  const columns = rt.columns ?? TABLE_COLUMNS[rt.resource] ?? DEFAULT_TABLE_COLUMNS;
  const metadata: Record<string, string> = {};
  if (listMeta.resourceVersion !== undefined) metadata.resourceVersion = listMeta.resourceVersion;
  if (listMeta.continue) metadata.continue = listMeta.continue;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata,
    columnDefinitions: columns.map((c) => {
      const def: Record<string, unknown> = { name: c.name, type: c.type, format: c.format ?? '', description: c.description, priority: c.priority };
      return def;
    }),
    rows: objects.map((obj) => ({
      cells: columns.map((c) => c.cell(obj, now)),
      object: rowObject(rt, obj, includeObject),
    })),
  };
}

function rowObject(rt: { kind: string; group: string; version: string }, obj: KubeObject, includeObject: IncludeObject): unknown {
  if (includeObject === 'None') return null;
  if (includeObject === 'Object') {
    return { ...obj, apiVersion: obj.apiVersion ?? (rt.group ? `${rt.group}/${rt.version}` : rt.version), kind: obj.kind ?? rt.kind };
  }
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}
