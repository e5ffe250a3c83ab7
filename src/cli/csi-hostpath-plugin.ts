// The reference CSI plugin: the hostpath provisioner behind the CSI Identity, Controller and Node services, so
// CSI mode runs end to end with no third-party code (tests, `dev --csi`, benchmarks). CreateVolume and DeleteVolume
// are HostPathProvisioner.provision() and delete() (its path rules, capacity ledger, records on disk and identity
// proofs), called with a claim and a class made from the request; the plugin talks to no Kubernetes API, so its
// ledger is the records on disk. A volume's id is its CreateVolume name (the PV name with the sidecar's default
// naming), which is also the "claim uid" of its record: DeleteVolume, ControllerExpandVolume and NodePublishVolume
// find the directory through that record, never through anything the caller sends. The Node service bind-mounts
// the directory at the target path (where the machine lets this process mount).
import { execFile } from 'node:child_process';
import { mkdir, readFile, realpath, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { IgnoredError, InfeasibleError, ProvisioningError } from '../controller/provisioner.ts';
import { CsiStatusError, type CsiPluginHandlers } from '../csi/csi-server.ts';
import type { CsiAccessMode } from '../csi/descriptors.ts';
import type { RequestOf, ResponseOf } from '../csi/services.ts';
import {
  allBasePaths,
  localBasePaths,
  nodeBasePaths,
  pathSetForClass,
  type ConfigHolder,
  type HostPathConfig,
} from '../hostpath/config/hostpath-config.ts';
import { VolumeIdentityError } from '../hostpath/delete/delete-identity.ts';
import { filesystemFreeBytes } from '../hostpath/provision/free-space.ts';
import { createVolumeDir } from '../hostpath/disk/volume-dirs.ts';
import type { OnDeletePolicy } from '../hostpath/config/class-parameters.ts';
import { checkExistingVolumePath, UnsafePathError } from '../hostpath/paths/path-safety.ts';
import { NoSpaceError } from '../hostpath/provision/placement.ts';
import { HostPathProvisioner } from '../hostpath/hostpath-provisioner.ts';
import { readVolumeRecord, readVolumeRecords, type VolumeRecord } from '../hostpath/records/volume-records.ts';
import { ANN_HOSTPATH_ON_DELETE, buildVolume, readVolumeLocation } from '../hostpath/volume/volume-spec.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { ANN_SELECTED_NODE, LABEL_HOSTNAME } from '../types/annotations.ts';
import type { AccessMode, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';

/** The plugin's default driver name. */
export const HOSTPATH_CSI_DRIVER = 'hostpath.csi.kube-provisioner.io';
/**
 * The StorageClass parameter that names the hostpath configuration's `storageClassConfigs` entry a class uses (the
 * plugin never sees the class's name). Without it, the top-level paths of the configuration.
 */
export const PARAM_CONFIG_CLASS = 'storageClassConfig';
/** The volume context key with the directory (informational: the Node service reads the record, not this). */
export const CONTEXT_PATH = `${HOSTPATH_CSI_DRIVER}/path`;
const RESERVED_PREFIX = 'csi.storage.k8s.io/';
const DEFAULT_BYTES = 1n << 30n;

/** CSI access mode → the Kubernetes one the hostpath provisioner checks. */
const K8S_MODES: Partial<Record<CsiAccessMode, AccessMode>> = {
  SINGLE_NODE_WRITER: 'ReadWriteOnce',
  SINGLE_NODE_MULTI_WRITER: 'ReadWriteOnce',
  SINGLE_NODE_SINGLE_WRITER: 'ReadWriteOncePod',
  SINGLE_NODE_READER_ONLY: 'ReadOnlyMany',
  MULTI_NODE_READER_ONLY: 'ReadOnlyMany',
  MULTI_NODE_MULTI_WRITER: 'ReadWriteMany',
  MULTI_NODE_SINGLE_WRITER: 'ReadWriteMany',
};

/** Bind mounts (the Node service). Replaceable in tests of a machine that does not let the process mount. */
export interface Mounter {
  bind(source: string, target: string, readOnly: boolean): Promise<void>;
  unmount(target: string): Promise<void>;
  isMountPoint(target: string): Promise<boolean>;
}

const run = promisify(execFile);

/** mount(8) and umount(8), and /proc/self/mountinfo to tell whether a path is a mount point. */
export const systemMounter: Mounter = {
  async bind(source, target, readOnly) {
    await run('mount', ['--bind', source, target]);
    if (readOnly) await run('mount', ['-o', 'remount,bind,ro', target]);
  },
  async unmount(target) {
    await run('umount', [target]);
  },
  async isMountPoint(target) {
    const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
    const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    return text.split('\n').some((line) => unescape(line.split(' ')[4] ?? '') === target);
  },
};

/** How the plugin runs. */
export interface HostPathCsiPluginOptions {
  /** The hostpath configuration (or a holder read on every call, for hot reload). */
  config: HostPathConfig | ConfigHolder;
  /** The node this plugin runs on: NodeGetInfo's node id and its topology value. */
  nodeName: string;
  /** GetPluginInfo's name (default hostpath.csi.kube-provisioner.io). */
  driverName?: string;
  /** The topology key (default kubernetes.io/hostname: the sidecar reads its value from the Node's labels). */
  topologyKey?: string;
  /** Free bytes of a base path without a configured capacity (default: its filesystem's, statfs). */
  freeSpace?: (basePath: string) => Promise<bigint>;
  mounter?: Mounter;
  logger?: Logger;
  version?: string;
}

/** The plugin: its handlers for serveCsiPlugin, and the provisioner underneath. */
export interface HostPathCsiPlugin {
  handlers: CsiPluginHandlers;
  provisioner: HostPathProvisioner;
  driverName: string;
}

type Topology = { segments?: Record<string, string> };

/** Builds the reference plugin's handlers on a HostPathProvisioner in deployment mode for `nodeName`. */
export function hostPathCsiPlugin(o: HostPathCsiPluginOptions): HostPathCsiPlugin {
  const driverName = o.driverName ?? HOSTPATH_CSI_DRIVER;
  const topologyKey = o.topologyKey ?? LABEL_HOSTNAME;
  const logger = (o.logger ?? silentLogger).child({ component: 'csi-hostpath-plugin' });
  const freeSpace = o.freeSpace ?? filesystemFreeBytes;
  const mounter = o.mounter ?? systemMounter;
  const config = (): HostPathConfig =>
    'current' in o.config && typeof o.config.current === 'function' ? o.config.current() : (o.config as HostPathConfig);
  const provisioner = new HostPathProvisioner({
    config: o.config,
    mode: 'deployment',
    nodeName: o.nodeName,
    freeSpace,
    logger,
  });

  async function findRecord(
    volumeId: string,
    bases: string[],
  ): Promise<{ base: string; record: VolumeRecord } | undefined> {
    for (const base of bases) {
      const record = await readVolumeRecord(base, volumeId);
      if (record && record.pvName === volumeId) return { base, record };
    }
    return undefined;
  }

  const topologyOf = (scope: string): Topology[] | undefined =>
    scope ? [{ segments: { [topologyKey]: scope } }] : undefined;

  const handlers: CsiPluginHandlers = {
    getPluginInfo: () => ({ name: driverName, vendorVersion: o.version ?? '0.0.0' }),
    getPluginCapabilities: () => ({
      capabilities: [
        { service: { type: 'CONTROLLER_SERVICE' } },
        { service: { type: 'VOLUME_ACCESSIBILITY_CONSTRAINTS' } },
        { volumeExpansion: { type: 'ONLINE' } },
      ],
    }),
    probe: () => {
      config();
      return { ready: { value: true } };
    },
    controllerGetCapabilities: () => ({
      capabilities: (
        ['CREATE_DELETE_VOLUME', 'EXPAND_VOLUME', 'GET_CAPACITY', 'LIST_VOLUMES', 'SINGLE_NODE_MULTI_WRITER'] as const
      ).map((type) => ({ rpc: { type } })),
    }),

    async createVolume(req, { signal }) {
      const name = req.name ?? '';
      if (!name) throw new CsiStatusError('InvalidArgument', 'name is required');
      const accessModes = accessModesOf(req.volumeCapabilities ?? []);
      if (req.volumeContentSource)
        throw new CsiStatusError(
          'InvalidArgument',
          'volume content sources (clones, snapshots) are not supported by the hostpath plugin',
        );
      const required = req.capacityRange?.requiredBytes ?? 0n;
      const limit = req.capacityRange?.limitBytes ?? 0n;
      if (required < 0n || limit < 0n || (limit > 0n && required > limit))
        throw new CsiStatusError('OutOfRange', `capacity range ${required}..${limit} is not valid`);
      const bytes = required > 0n ? required : limit > 0n && limit < DEFAULT_BYTES ? limit : DEFAULT_BYTES;
      const { className, hostpathParameters, claimName, claimNamespace } = splitParameters(req.parameters ?? {}, name);
      const node = selectedNode(req.accessibilityRequirements, topologyKey, o.nodeName);
      const mountFlags = req.volumeCapabilities?.find((c) => c.mount)?.mount?.mountFlags;
      const storageClass: StorageClass = {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: className },
        provisioner: driverName,
        parameters: hostpathParameters,
        reclaimPolicy: 'Delete',
        volumeBindingMode: node ? 'WaitForFirstConsumer' : 'Immediate',
        ...(mountFlags?.length ? { mountOptions: mountFlags } : {}),
      };
      const claim: PersistentVolumeClaim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name: claimName,
          namespace: claimNamespace,
          uid: name,
          ...(node ? { annotations: { [ANN_SELECTED_NODE]: node } } : {}),
        },
        spec: {
          accessModes,
          resources: { requests: { storage: bytes.toString() } },
          storageClassName: className,
          volumeMode: 'Filesystem',
        },
      };
      let pv: PersistentVolume;
      try {
        pv = (
          await provisioner.provision(
            { storageClass, claim, pvName: name, ...(node ? { selectedNodeName: node } : {}) },
            signal,
          )
        ).volume;
      } catch (err) {
        throw provisionStatus(err);
      }
      const loc = readVolumeLocation(pv);
      const policy = pv.metadata.annotations?.[ANN_HOSTPATH_ON_DELETE];
      if (loc.basePath && (policy === 'archive' || policy === 'retain' || policy === 'delete'))
        await writeOnDeletePolicy(loc.basePath, name, policy);
      const accessible = loc.kind === 'node' ? topologyOf(loc.node ?? '') : undefined;
      return {
        volume: {
          volumeId: name,
          capacityBytes: bytes,
          volumeContext: (loc.path ? { [CONTEXT_PATH]: loc.path } : {}) as Record<string, string>,
          ...(accessible ? { accessibleTopology: accessible } : {}),
        },
      };
    },

    async deleteVolume(req, { signal }) {
      const id = req.volumeId ?? '';
      if (!id) throw new CsiStatusError('InvalidArgument', 'volume_id is required');
      // Absent: already deleted (DeleteVolume is idempotent).
      const found = await findRecord(id, allBasePaths(config()));
      if (!found) return {};
      const policy = await readOnDeletePolicy(found.base, id);
      try {
        // delete() proves the directory is that volume's (the record names it and its "claim", the volume id) and
        // applies the policy the class had at CreateVolume.
        await provisioner.delete(recordVolume(id, found.base, found.record, policy), signal);
        await rm(policyFile(found.base, id), { force: true });
      } catch (err) {
        if (err instanceof VolumeIdentityError || err instanceof UnsafePathError || err instanceof IgnoredError)
          throw new CsiStatusError('FailedPrecondition', err.message, { cause: err });
        throw new CsiStatusError('Internal', (err as Error).message, { cause: err });
      }
      return {};
    },

    async controllerExpandVolume(req, { signal }) {
      const id = req.volumeId ?? '';
      if (!id) throw new CsiStatusError('InvalidArgument', 'volume_id is required');
      const found = await findRecord(id, allBasePaths(config()));
      if (!found) throw new CsiStatusError('NotFound', `volume ${id} does not exist`);
      const required = req.capacityRange?.requiredBytes ?? 0n;
      if (required <= 0n) throw new CsiStatusError('InvalidArgument', 'capacity_range.required_bytes is required');
      const { base, record } = found;
      const pv = recordVolume(id, base, record, 'delete');
      // The capacity of the base path is configured per class: the first class whose paths hold this base.
      const className = classOfBasePath(config(), base);
      if (className) pv.spec.storageClassName = className;
      try {
        await provisioner.expand!(pv, required.toString(), signal);
      } catch (err) {
        if (err instanceof InfeasibleError) throw new CsiStatusError('OutOfRange', err.message, { cause: err });
        throw new CsiStatusError('Internal', (err as Error).message, { cause: err });
      }
      return {
        capacityBytes: required > BigInt(record.bytes) ? required : BigInt(record.bytes),
        nodeExpansionRequired: false,
      };
    },

    async getCapacity(req) {
      const className = req.parameters?.[PARAM_CONFIG_CLASS] ?? '';
      const c = config();
      const set = pathSetForClass(c, className);
      if (!set) return { availableCapacity: 0n };
      const node = req.accessibleTopology?.segments?.[topologyKey] ?? o.nodeName;
      const bases = set.sharedFileSystemPath ? [set.sharedFileSystemPath] : (nodeBasePaths(set, node) ?? []);
      let total = 0n;
      let largest = 0n;
      for (const b of bases) {
        const allocated = (await readVolumeRecords(b.path)).reduce((sum, r) => sum + BigInt(r.bytes), 0n);
        const available = b.capacity !== undefined ? b.capacity - allocated : await freeSpace(b.path).catch(() => 0n);
        const a = available > 0n ? available : 0n;
        total += a;
        if (a > largest) largest = a;
      }
      return { availableCapacity: total, maximumVolumeSize: { value: largest } };
    },

    async listVolumes(req) {
      const byName = new Map<string, VolumeRecord>();
      for (const base of allBasePaths(config())) for (const r of await readVolumeRecords(base)) byName.set(r.pvName, r);
      const all = [...byName.values()].sort((a, b) => (a.pvName < b.pvName ? -1 : a.pvName > b.pvName ? 1 : 0));
      const start = req.startingToken ? Number(req.startingToken) : 0;
      if (!Number.isInteger(start) || start < 0 || start > all.length)
        throw new CsiStatusError('Aborted', `starting_token ${JSON.stringify(req.startingToken)} is not valid`);
      const max = req.maxEntries && req.maxEntries > 0 ? req.maxEntries : all.length;
      const page = all.slice(start, start + max);
      const next = start + page.length < all.length ? String(start + page.length) : '';
      const entries: NonNullable<ResponseOf<'listVolumes'>['entries']> = page.map((r) => {
        const accessible = topologyOf(r.scope);
        return {
          volume: {
            volumeId: r.pvName,
            capacityBytes: BigInt(r.bytes),
            ...(accessible ? { accessibleTopology: accessible } : {}),
          },
        };
      });
      return { entries, ...(next ? { nextToken: next } : {}) };
    },

    nodeGetInfo: () => ({ nodeId: o.nodeName, accessibleTopology: { segments: { [topologyKey]: o.nodeName } } }),
    nodeGetCapabilities: () => ({ capabilities: [] }),

    async nodePublishVolume(req) {
      const id = req.volumeId ?? '';
      const target = req.targetPath ?? '';
      if (!id) throw new CsiStatusError('InvalidArgument', 'volume_id is required');
      if (!target.startsWith('/')) throw new CsiStatusError('InvalidArgument', 'target_path must be an absolute path');
      if (!req.volumeCapability) throw new CsiStatusError('InvalidArgument', 'volume_capability is required');
      if (req.volumeCapability.block)
        throw new CsiStatusError('InvalidArgument', 'block access is not supported: hostpath volumes are directories');
      const found = await findRecord(
        id,
        localBasePaths(config(), o.nodeName).map((b) => b.path),
      );
      if (!found) throw new CsiStatusError('NotFound', `volume ${id} has no directory on node ${o.nodeName}`);
      const dir = await volumeDirectory(found.base, found.record);
      if (await mounter.isMountPoint(target)) return {};
      await mkdir(target, { recursive: true, mode: 0o750 });
      try {
        await mounter.bind(dir, target, req.readonly === true);
      } catch (err) {
        throw new CsiStatusError('Internal', `bind-mounting ${dir} at ${target}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      logger.info({ volume: id, dir, target, readOnly: req.readonly === true }, 'volume published');
      return {};
    },

    async nodeUnpublishVolume(req) {
      const id = req.volumeId ?? '';
      const target = req.targetPath ?? '';
      if (!id) throw new CsiStatusError('InvalidArgument', 'volume_id is required');
      if (!target.startsWith('/')) throw new CsiStatusError('InvalidArgument', 'target_path must be an absolute path');
      if (await mounter.isMountPoint(target)) {
        try {
          await mounter.unmount(target);
        } catch (err) {
          throw new CsiStatusError('Internal', `unmounting ${target}: ${(err as Error).message}`, { cause: err });
        }
      }
      // The target directory is the CO's; it is removed only when empty (never a volume's contents).
      await rmdir(target).catch(() => {});
      return {};
    },
  };
  return { handlers, provisioner, driverName };
}

// DeleteVolume carries only the volume id, so a class's onDelete other than delete (archive, retain: the shared
// path's default is archive) is kept next to the records at CreateVolume: <base>/.kube-provisioner/csi-on-delete/<id>.
const POLICY_SEGMENTS = ['.kube-provisioner', 'csi-on-delete'];
const policyFile = (base: string, id: string) => `${base}/${POLICY_SEGMENTS.join('/')}/${id}`;

async function writeOnDeletePolicy(base: string, id: string, policy: OnDeletePolicy): Promise<void> {
  if (policy === 'delete') {
    await rm(policyFile(base, id), { force: true });
    return;
  }
  // Created without following symlinks, private, as the records directory is.
  await createVolumeDir(base, POLICY_SEGMENTS, { mode: 0o700, parentMode: 0o700 });
  await writeFile(policyFile(base, id), policy, { mode: 0o600 });
}

async function readOnDeletePolicy(base: string, id: string): Promise<OnDeletePolicy> {
  const text = (await readFile(policyFile(base, id), 'utf8').catch(() => 'delete')).trim();
  return text === 'archive' || text === 'retain' ? text : 'delete';
}

// The directory of a record, checked as delete checks a PV's path, and with no symlink on the way (realpath).
async function volumeDirectory(base: string, record: VolumeRecord): Promise<string> {
  const dir = `${base}/${record.relativePath}`;
  try {
    checkExistingVolumePath(base, dir);
    const real = await realpath(dir);
    if (real !== join(await realpath(base), record.relativePath))
      throw new UnsafePathError('symlink', dir, `resolves to ${real}`);
    return real;
  } catch (err) {
    throw new CsiStatusError('FailedPrecondition', `volume ${record.pvName}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

// The PV the hostpath provisioner would have published for a record: its directory, base path, node, size, policy,
// and the volume id as the claim uid (what CreateVolume wrote in the record).
function recordVolume(id: string, base: string, record: VolumeRecord, onDelete: OnDeletePolicy): PersistentVolume {
  const pv = buildVolume({
    pvName: id,
    path: `${base}/${record.relativePath}`,
    basePath: base,
    kind: record.scope ? 'node' : 'shared',
    node: record.scope || undefined,
    volumeType: 'hostPath',
    capacity: record.bytes,
    accessModes: ['ReadWriteOnce'],
    reclaimPolicy: 'Delete',
    onDelete,
  });
  pv.spec.claimRef = { uid: id };
  return pv;
}

function classOfBasePath(c: HostPathConfig, base: string): string | undefined {
  for (const [name, set] of Object.entries(c.storageClassConfigs)) {
    if (set.sharedFileSystemPath?.path === base || set.nodePathMap.some((n) => n.paths.some((p) => p.path === base)))
      return name;
  }
  return undefined;
}

function accessModesOf(caps: RequestOf<'createVolume'>['volumeCapabilities'] & object): AccessMode[] {
  if (caps.length === 0) throw new CsiStatusError('InvalidArgument', 'volume_capabilities is required');
  const out = new Set<AccessMode>();
  for (const c of caps) {
    if (c.block)
      throw new CsiStatusError('InvalidArgument', 'block volumes are not supported: hostpath volumes are directories');
    const mode = K8S_MODES[c.accessMode?.mode ?? 'UNKNOWN'];
    if (!mode)
      throw new CsiStatusError('InvalidArgument', `access mode ${c.accessMode?.mode ?? 'UNKNOWN'} is not supported`);
    out.add(mode);
  }
  return [...out];
}

// The class's parameters for the hostpath provisioner (minus the sidecar's csi.storage.k8s.io/* metadata and the
// plugin's own storageClassConfig), and the claim's name and namespace when --extra-create-metadata sent them.
function splitParameters(parameters: Record<string, string>, volumeName: string) {
  const hostpathParameters: Record<string, string> = {};
  for (const [k, v] of Object.entries(parameters))
    if (k !== PARAM_CONFIG_CLASS && !k.startsWith(RESERVED_PREFIX)) hostpathParameters[k] = v;
  return {
    className: parameters[PARAM_CONFIG_CLASS] ?? '',
    hostpathParameters,
    claimName: parameters[`${RESERVED_PREFIX}pvc/name`] || volumeName,
    claimNamespace: parameters[`${RESERVED_PREFIX}pvc/namespace`] ?? '',
  };
}

// The node a node-local volume goes to: this plugin's node when the requirement allows it (preferred first),
// else the first preferred (or requisite) segment's; undefined without requirements.
function selectedNode(
  req: RequestOf<'createVolume'>['accessibilityRequirements'],
  key: string,
  self: string,
): string | undefined {
  const segments = [...(req?.preferred ?? []), ...(req?.requisite ?? [])]
    .map((t) => t.segments?.[key])
    .filter((v): v is string => !!v);
  if (segments.length === 0) return undefined;
  return segments.includes(self) ? self : segments[0];
}

// What a failed provision() means to the sidecar (external-provisioner's checkError reads the code).
function provisionStatus(err: unknown): CsiStatusError {
  const message = (err as Error)?.message ?? String(err);
  // Space as csi-driver-host-path answers it: bigger than any path is OUT_OF_RANGE, no room left RESOURCE_EXHAUSTED
  // (the sidecar then asks the scheduler for another node when one was selected).
  if (err instanceof NoSpaceError)
    return new CsiStatusError(err.tooLarge ? 'OutOfRange' : 'ResourceExhausted', message, { cause: err });
  if (err instanceof InfeasibleError || err instanceof UnsafePathError)
    return new CsiStatusError('InvalidArgument', message, { cause: err });
  if (err instanceof ProvisioningError && err.state === 'Reschedule')
    return new CsiStatusError('ResourceExhausted', message, { cause: err });
  if (err instanceof IgnoredError) return new CsiStatusError('ResourceExhausted', message, { cause: err });
  if ((err as Error)?.name === 'AbortError') return new CsiStatusError('Aborted', message, { cause: err });
  return new CsiStatusError('Internal', message, { cause: err });
}
