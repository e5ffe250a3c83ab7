// CsiProvisioner: a Provisioner (the controller's contract) that drives a CSI plugin with external-provisioner's
// semantics: CreateVolume with the prepared request and checkError's states, the capacity and content-source
// checks of the reply (cleanup + InBackground), the PV as external-provisioner writes it, DeleteVolume with the
// deletion secrets and refused while a VolumeAttachment names the PV, expansion through ControllerExpandVolume
// (resize.ts), and the leak inventory through ListVolumes. Built after the plugin's start-up, so its optional
// hooks (expand, listVolumes) exist exactly when the plugin has the capability.
import { randomInt } from 'node:crypto';
import type { Registry } from 'prom-client';
import {
  IgnoredError,
  InfeasibleError,
  ProvisioningError,
  type ClaimCheckInput,
  type ClaimCheckResult,
  type ExpandResult,
  type Provisioner,
  type ProvisionOptions,
  type ProvisionResult,
} from '../controller/provisioner.ts';
import type { ProvisionControllerOptions } from '../controller/options/controller-options.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import type { EventSink } from '../types/events.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import { ANN_SELECTED_NODE } from '../types/annotations.ts';
import { errorMessage } from '../types/errors.ts';
import { claimProvisionerName } from '../controller/claim/decide-claim.ts';
import { CsiClient } from './csi-client.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import { FINALIZER_SNAPSHOT_SOURCE_PROTECTION } from './content-source.ts';
import { CsiError, GRPC_CODES, provisioningStateOf } from './grpc-status.ts';
import { DEFAULT_VOLUME_NAMING, checkVolumeNaming, volumeNameHook, type VolumeNaming } from './volume-names.ts';
import {
  checkCsiClaim,
  prepareProvision,
  readSecret,
  type CsiRequestOptions,
  type PluginFacts,
} from './provision-request.ts';
import { NodeOwnership, type ClaimAccess, type NodeFit } from './node-ownership.ts';
import { expandCsiVolume, type ExpansionMode } from './resize.ts';
import { ANN_DELETION_SECRET_NAME, ANN_DELETION_SECRET_NAMESPACE, secretReference } from './secrets.ts';
import { CsiStartupError, waitForPlugin, type CsiDriverInfo } from './startup.ts';
import { accessibilityRequirements } from './topology.ts';
import { persistentVolumeFor } from './volume.ts';

/** CsiProvisioner's settings (external-provisioner's flags); every field has its default. */
export interface CsiProvisionerSettings extends Partial<CsiRequestOptions> {
  /** `--volume-name-prefix` (default `pvc`) and `--volume-name-uuid-length` (default -1, the whole uid). */
  naming?: VolumeNaming;
  /** `--controller-publish-readonly`: a claim whose only mode is ReadOnlyMany gets a read-only PV source. */
  controllerPublishReadOnly?: boolean;
  /** The value of the PV's `storage.kubernetes.io/csiProvisionerIdentity` attribute (default `<ms>-<random>-<driver>`). */
  identity?: string;
  /**
   * `--node-deployment`: this instance serves one node. Only claims whose selected node is `name` are provisioned
   * (external-provisioner's checkNode), and only PVs whose node affinity admits a node with `labels` are deleted
   * or expanded here. With `immediateBinding` (`--node-deployment-immediate-binding`), an Immediate claim that no
   * node was selected for is raced for (NodeOwnership): the first instance whose node fits selects itself.
   */
  node?: { name: string; labels: Record<string, string>; immediateBinding?: NodeImmediateBinding };
}

/** `--node-deployment-immediate-binding` and its delays. */
export interface NodeImmediateBinding {
  claims: ClaimAccess;
  /** `--node-deployment-base-delay` (20 s). */
  baseDelayMs?: number;
  /** `--node-deployment-max-delay` (60 s). */
  maxDelayMs?: number;
  /** [0, 1) for the jitter (default Math.random). */
  random?: () => number;
}

/** Everything a CsiProvisioner works with. */
export interface CsiProvisionerDeps extends CsiProvisionerSettings {
  client: CsiClient;
  /** What the plugin said at start-up (waitForPlugin). */
  driver: CsiDriverInfo;
  cluster: CsiClusterAccess;
  /** Where the populator event goes (default: nowhere). */
  events?: EventSink;
  logger?: Logger;
  clock?: Clock;
}

/** Options of CsiProvisioner.start: the plugin's address and the client's settings besides the provisioner's. */
export interface CsiProvisionerStartOptions extends Omit<CsiProvisionerDeps, 'client' | 'driver'> {
  /** The plugin's socket (`--csi-address`). */
  address: string;
  /** `--timeout` of each call, in ms (default 10 s). */
  timeoutMs?: number;
  /** Where csi_sidecar_operations_seconds is registered. */
  registry?: Registry;
  /** Aborts the start-up waits. */
  signal?: AbortSignal;
  /** Between two looks for the socket and two probes (default 1 s). */
  startupIntervalMs?: number;
}

/** DeleteVolume attempts of the cleanup after an unusable CreateVolume reply (external-provisioner's count). */
const CLEANUP_ATTEMPTS = 5;

/** A Provisioner that drives a CSI plugin. */
export class CsiProvisioner implements Provisioner {
  /** The driver name: the provisioner name StorageClasses use. */
  readonly driverName: string;
  readonly client: CsiClient;
  readonly driver: CsiDriverInfo;
  readonly naming: VolumeNaming;
  readonly identity: string;
  /** Expansion (present when the plugin expands on the controller, or only on the node). */
  readonly expand?: (volume: PersistentVolume, newSize: string, signal: AbortSignal) => Promise<ExpandResult>;
  /** Leak inventory (present when the plugin has LIST_VOLUMES). */
  readonly listVolumes?: (signal: AbortSignal) => Promise<Array<{ name: string; createdAt?: Date }>>;
  private readonly cluster: CsiClusterAccess;
  private readonly facts: PluginFacts;
  private readonly request: CsiRequestOptions;
  private readonly publishReadOnly: boolean;
  private readonly events: EventSink | undefined;
  private readonly logger: Logger;
  private readonly inUseErrors = new Set<string>();
  private readonly node: { name: string; labels: Record<string, string> } | undefined;
  /** The race for unselected Immediate claims (node deployment with immediate binding). */
  readonly ownership?: NodeOwnership;

  constructor(d: CsiProvisionerDeps) {
    const caps = d.driver.controllerCapabilities;
    if (!d.driver.pluginCapabilities.has('CONTROLLER_SERVICE'))
      throw new CsiStartupError(
        'CSI driver does not support dynamic provisioning: plugin CONTROLLER_SERVICE capability is not reported',
      );
    if (!caps.has('CREATE_DELETE_VOLUME'))
      throw new CsiStartupError(
        'CSI driver does not support dynamic provisioning: controller CREATE_DELETE_VOLUME capability is not reported',
      );
    this.naming = d.naming ?? DEFAULT_VOLUME_NAMING;
    checkVolumeNaming(this.naming);
    this.client = d.client;
    this.driver = d.driver;
    this.driverName = d.driver.name;
    this.cluster = d.cluster;
    this.identity = d.identity ?? `${(d.clock ?? realClock).now()}-${randomInt(10_000)}-${d.driver.name}`;
    this.facts = {
      driverName: d.driver.name,
      controllerCapabilities: caps,
      topology: d.driver.pluginCapabilities.has('VOLUME_ACCESSIBILITY_CONSTRAINTS'),
    };
    this.request = {
      defaultFsType: d.defaultFsType ?? '',
      strictTopology: d.strictTopology ?? false,
      immediateTopology: d.immediateTopology ?? true,
      extraCreateMetadata: d.extraCreateMetadata ?? false,
      preventVolumeModeConversion: d.preventVolumeModeConversion ?? true,
    };
    this.publishReadOnly = d.controllerPublishReadOnly ?? false;
    this.node = d.node;
    const ib = d.node?.immediateBinding;
    if (d.node && ib) {
      this.ownership = new NodeOwnership({
        nodeName: d.node.name,
        claims: ib.claims,
        fits: (claim, check, signal) => this.nodeFits(claim, check.capacity, signal),
        ...(ib.baseDelayMs !== undefined ? { baseDelayMs: ib.baseDelayMs } : {}),
        ...(ib.maxDelayMs !== undefined ? { maxDelayMs: ib.maxDelayMs } : {}),
        ...(ib.random ? { random: ib.random } : {}),
        ...(d.clock ? { clock: d.clock } : {}),
        ...(d.logger ? { logger: d.logger } : {}),
      });
    }
    this.events = d.events;
    this.logger = (d.logger ?? silentLogger).child({ driver: d.driver.name });
    const mode: ExpansionMode = caps.has('EXPAND_VOLUME') ? 'controller' : d.driver.volumeExpansion ? 'node' : 'none';
    if (mode !== 'none') {
      const r = {
        client: this.client,
        cluster: this.cluster,
        mode,
        singleNodeMultiWriter: caps.has('SINGLE_NODE_MULTI_WRITER'),
        logger: this.logger,
        inUseErrors: this.inUseErrors,
      };
      this.expand = (volume, newSize, signal) => expandCsiVolume(r, volume, newSize, signal);
    }
    if (caps.has('LIST_VOLUMES')) this.listVolumes = (signal) => this.inventory(signal);
  }

  /**
   * external-provisioner's start-up: connect, wait for the socket, Probe until ready, read the driver's name and
   * capabilities, refuse a plugin without CONTROLLER_SERVICE + CREATE_DELETE_VOLUME (CsiStartupError).
   */
  static async start(o: CsiProvisionerStartOptions): Promise<CsiProvisioner> {
    const client = await CsiClient.connect({
      address: o.address,
      ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      ...(o.registry ? { registry: o.registry } : {}),
      ...(o.clock ? { clock: o.clock } : {}),
      ...(o.logger ? { logger: o.logger } : {}),
    });
    try {
      const driver = await waitForPlugin(client, o.signal ?? new AbortController().signal, {
        clock: o.clock ?? realClock,
        logger: o.logger ?? silentLogger,
        ...(o.startupIntervalMs !== undefined ? { intervalMs: o.startupIntervalMs } : {}),
      });
      return new CsiProvisioner({ ...o, client, driver });
    } catch (err) {
      client.close();
      throw err;
    }
  }

  /**
   * The controller options CSI mode runs with, as external-provisioner configures the library: retries from 1 s
   * doubling to 5 min (`--retry-interval-start`, `--retry-interval-max`), never given up, PVs saved in the
   * background (the volume is never deleted because a PV write failed), the PV finalizer, `--worker-threads` 100,
   * PV names `<prefix>-<uid>`, and the leak inventory when the plugin has LIST_VOLUMES. Layer the user's options
   * over it with mergeOptions.
   */
  controllerOptions(): ProvisionControllerOptions {
    return {
      threadiness: 100,
      retry: {
        backoffBaseMs: 1000,
        backoffMaxMs: 300_000,
        infeasibleDelayMs: 300_000,
        failedProvisionThreshold: 0,
        failedDeleteThreshold: 0,
      },
      volumeSave: { mode: 'background' },
      addFinalizer: true,
      volumeNameHook: volumeNameHook(this.naming),
      ...(this.listVolumes ? { leakInventory: { enabled: true } } : {}),
    };
  }

  /** CSI plugins decide block support per CreateVolume (external-provisioner always answers true). */
  supportsBlock(): boolean {
    return true;
  }

  /** Expansion of PVs of this driver only (external-resizer's CanSupport: spec.csi.driver), of this node's in a node deployment. */
  shouldExpand(volume: PersistentVolume): boolean {
    return volume.spec.csi?.driver === this.driverName && this.onThisNode(volume);
  }

  /**
   * A node deployment provisions the claims selected for its node only (external-provisioner's checkNode). With
   * immediate binding, a claim of this driver that no node was selected for starts the race to select this node
   * (it is provisioned here once the annotation names this node).
   */
  shouldProvision(claim: PersistentVolumeClaim): boolean {
    if (!this.node) return true;
    if (this.ownership && claimProvisionerName(claim) === this.driverName) this.ownership.observe(claim);
    return claim.metadata.annotations?.[ANN_SELECTED_NODE] === this.node.name;
  }

  /**
   * Whether this node may take an unselected claim (node deployment, immediate binding): its class must be an
   * Immediate class of this driver, the class's allowed topologies must admit the node, and with `capacity` the
   * plugin's GetCapacity for this node's segment must have room for the request (external-provisioner's
   * checkCapacity asks every requisite segment; a node's plugin can answer for its own only).
   */
  async nodeFits(claim: PersistentVolumeClaim, capacity: boolean, signal: AbortSignal): Promise<NodeFit> {
    const node = this.node;
    const className = claim.spec.storageClassName;
    if (!node || !className) return 'not-immediate';
    const sc = await this.cluster.getStorageClass(className, signal);
    if (!sc || sc.provisioner !== this.driverName) return 'not-immediate';
    if ((sc.volumeBindingMode ?? 'Immediate') !== 'Immediate') return 'not-immediate';
    let segment: Record<string, string> | undefined;
    if (this.facts.topology) {
      try {
        const req = await accessibilityRequirements(
          {
            driverName: this.driverName,
            claimName: claim.metadata.name ?? '',
            allowedTopologies: sc.allowedTopologies,
            selectedNodeName: node.name,
            strictTopology: this.request.strictTopology,
            immediateTopology: this.request.immediateTopology,
          },
          this.cluster,
          signal,
        );
        segment = req?.preferred?.[0]?.segments;
      } catch (err) {
        // "allowed topologies is not compatible": not this node's claim. Other failures surface when provisioning.
        if ((sc.allowedTopologies ?? []).length > 0) return 'no';
        this.logger.info({ pvc: claim.metadata.name, err: errorMessage(err) }, 'topology check failed; trying anyway');
      }
    }
    if (!capacity || !this.facts.controllerCapabilities.has('GET_CAPACITY')) return 'yes';
    const checked = checkCsiClaim(claim, sc, volumeNameHook(this.naming)(claim), this.facts, this.request);
    if (checked.requiredBytes === 0n) return 'yes';
    const reply = await this.client.call(
      'getCapacity',
      {
        volumeCapabilities: checked.capabilities,
        parameters: checked.parameters,
        ...(segment ? { accessibleTopology: { segments: segment } } : {}),
      },
      { signal },
    );
    return checked.requiredBytes <= (reply.availableCapacity ?? 0n) ? 'yes' : 'no';
  }

  /** A node deployment deletes the volumes of its node only: those whose node affinity admits this node. */
  shouldDelete(volume: PersistentVolume): boolean {
    return this.onThisNode(volume);
  }

  private onThisNode(volume: PersistentVolume): boolean {
    if (!this.node) return true;
    const terms = volume.spec.nodeAffinity?.required?.nodeSelectorTerms ?? [];
    const labels = this.node.labels;
    return terms.some((t) =>
      (t.matchExpressions ?? []).every((e) => {
        const v = labels[e.key];
        if (e.operator === 'In') return v !== undefined && (e.values ?? []).includes(v);
        if (e.operator === 'NotIn') return v === undefined || !(e.values ?? []).includes(v);
        if (e.operator === 'Exists') return v !== undefined;
        if (e.operator === 'DoesNotExist') return v === undefined;
        return false;
      }),
    );
  }

  /** The checks that need no I/O, for `explain`: the same function provision() runs first. */
  checkClaim(input: ClaimCheckInput): ClaimCheckResult {
    try {
      checkCsiClaim(
        input.claim,
        input.storageClass,
        input.pvName ?? volumeNameHook(this.naming)(input.claim),
        this.facts,
        this.request,
      );
      return { ok: true };
    } catch (err) {
      const kind = err instanceof InfeasibleError ? 'infeasible' : 'ignored';
      return { ok: false, kind, message: errorMessage(err), cause: err };
    }
  }

  async provision(options: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    const { claim } = options;
    let prepared;
    try {
      prepared = await prepareProvision(options, this.facts, this.request, this.cluster, signal);
    } catch (err) {
      if (err instanceof IgnoredError)
        this.events?.event(
          claimObject(claim),
          'Normal',
          'Provisioning',
          'Assuming an external populator will provision the volume',
        );
      throw err;
    }
    let reply;
    try {
      reply = await this.client.call('createVolume', prepared.request, { signal });
    } catch (err) {
      // The library's infeasible rule (InvalidArgument: slow retry), then checkError's states.
      if (err instanceof CsiError && err.code === GRPC_CODES.InvalidArgument)
        throw new InfeasibleError(err.message, { cause: err });
      throw new ProvisioningError(errorMessage(err), provisioningStateOf(err, prepared.mayReschedule), { cause: err });
    }
    const volume = reply.volume ?? {};
    const required = prepared.request.capacityRange?.requiredBytes ?? 0n;
    let capacity = volume.capacityBytes ?? 0n;
    // capacity_bytes 0 means unknown (NFS-like plugins); the API server needs a size, so the PV gets the request.
    if (capacity === 0n) capacity = required;
    else if (capacity < required) {
      throw await this.cleanUp(
        volume.volumeId ?? '',
        prepared.provisionerSecrets,
        `created volume capacity ${capacity} less than requested capacity ${required}`,
        signal,
      );
    }
    if (prepared.request.volumeContentSource && !volume.contentSource) {
      throw await this.cleanUp(
        volume.volumeId ?? '',
        prepared.provisionerSecrets,
        'volume content source missing',
        signal,
      );
    }
    const pv = persistentVolumeFor(options, prepared, volume, capacity, {
      driverName: this.driverName,
      identity: this.identity,
      topology: this.facts.topology,
      controllerPublishReadOnly: this.publishReadOnly,
    });
    const ds = prepared.checked.dataSource;
    if (ds && prepared.checked.sourceKind === 'snapshot') {
      // The restore is done: the snapshot may go (a failure here only leaves the finalizer for a later sweep).
      await this.cluster
        .removeFinalizer('VolumeSnapshot', ds.namespace, ds.name, FINALIZER_SNAPSHOT_SOURCE_PROTECTION, signal)
        .catch((err: unknown) =>
          this.logger.warn(
            { snapshot: `${ds.namespace}/${ds.name}`, err: errorMessage(err) },
            'could not remove the snapshot source finalizer',
          ),
        );
    }
    return { volume: pv };
  }

  /** DeleteVolume of an unusable volume; the error to throw is InBackground (the next attempt asks again). */
  private async cleanUp(
    volumeId: string,
    secrets: Record<string, string> | undefined,
    reason: string,
    signal: AbortSignal,
  ): Promise<ProvisioningError> {
    let last: unknown;
    for (let i = 0; i < CLEANUP_ATTEMPTS; i++) {
      try {
        await this.client.call('deleteVolume', { volumeId, ...(secrets ? { secrets } : {}) }, { signal });
        return new ProvisioningError(reason, 'InBackground');
      } catch (err) {
        last = err;
        if (signal.aborted) break;
      }
    }
    return new ProvisioningError(
      `${reason}. Cleanup of volume ${volumeId} failed, volume is orphaned: ${errorMessage(last)}`,
      'InBackground',
      { cause: last },
    );
  }

  async delete(volume: PersistentVolume, signal: AbortSignal): Promise<void> {
    const name = volume.metadata.name ?? '';
    const csi = volume.spec.csi;
    // The leak inventory's stand-in for a listed volume without a PV has no uid and no CSI source: its name is the handle.
    const volumeId = csi?.volumeHandle ?? (volume.metadata.uid === undefined ? name : undefined);
    if (!volumeId) throw new InfeasibleError(`invalid CSI PV ${name}: no spec.csi.volumeHandle`);
    const secrets = await this.deletionSecrets(volume, signal);
    const attachments = await this.cluster.volumeAttachmentsOf(name, signal);
    if (attachments.length > 0)
      throw new Error(`persistentvolume ${name} is still attached to node ${attachments[0].spec.nodeName}`);
    await this.client.call('deleteVolume', { volumeId, ...(secrets ? { secrets } : {}) }, { signal });
  }

  /** handleSecretsForDeletion: the PV's annotations, else the class's provisioner secret (a missing secret is logged, not fatal). */
  private async deletionSecrets(
    volume: PersistentVolume,
    signal: AbortSignal,
  ): Promise<Record<string, string> | undefined> {
    const ann = volume.metadata.annotations ?? {};
    let ref: { name: string; namespace: string } | undefined;
    if (Object.hasOwn(ann, ANN_DELETION_SECRET_NAME) && Object.hasOwn(ann, ANN_DELETION_SECRET_NAMESPACE)) {
      const [name, namespace] = [ann[ANN_DELETION_SECRET_NAME], ann[ANN_DELETION_SECRET_NAMESPACE]];
      if (name && namespace) ref = { name, namespace };
    } else {
      const className = volume.spec.storageClassName;
      const sc = className ? await this.cluster.getStorageClass(className, signal) : undefined;
      const claimRef = volume.spec.claimRef;
      if (sc && claimRef) {
        ref = secretReference('provisioner', sc.parameters ?? {}, volume.metadata.name ?? '', {
          metadata: { name: claimRef.name, namespace: claimRef.namespace },
        });
      }
    }
    if (!ref) return undefined;
    try {
      return await readSecret(this.cluster, ref, signal);
    } catch (err) {
      this.logger.error(
        { pv: volume.metadata.name, err: errorMessage(err) },
        'failed to get deletion credentials; deleting without them',
      );
      return undefined;
    }
  }

  /**
   * The leak inventory's view of the plugin: every listed volume, named by its PV when one has that handle, else
   * by its handle when the handle has our name prefix (a volume we created whose PV was never saved). Handles of
   * neither kind are not provably ours and are left out.
   */
  private async inventory(signal: AbortSignal): Promise<Array<{ name: string }>> {
    const ids: string[] = [];
    let token = '';
    do {
      const page = await this.client.call('listVolumes', token ? { startingToken: token } : {}, { signal });
      for (const e of page.entries ?? []) if (e.volume?.volumeId) ids.push(e.volume.volumeId);
      token = page.nextToken ?? '';
    } while (token);
    const pvByHandle = new Map<string, string>();
    for (const pv of await this.cluster.listVolumes(signal)) {
      if (pv.spec.csi?.driver === this.driverName) pvByHandle.set(pv.spec.csi.volumeHandle, pv.metadata.name ?? '');
    }
    const prefix = `${this.naming.prefix}-`;
    const out: Array<{ name: string }> = [];
    for (const id of ids) {
      const pvName = pvByHandle.get(id);
      if (pvName !== undefined) out.push({ name: pvName });
      else if (id.startsWith(prefix)) out.push({ name: id });
    }
    return out;
  }

  /** Closes the gRPC channel (and stops the node deployment's ownership attempts). */
  close(): void {
    this.ownership?.stop();
    this.client.close();
  }
}

function claimObject(claim: PersistentVolumeClaim): PersistentVolumeClaim {
  return claim.kind ? claim : { ...claim, apiVersion: 'v1', kind: 'PersistentVolumeClaim' };
}
