// external-provisioner's prepareProvision: from a claim, its class and the selected node, the CreateVolumeRequest
// and the parts of the PV known before the call (the CSI source without its handle, the secret references, the
// deletion-secret annotations). The checks that need no I/O are one pure function (checkCsiClaim, also the
// provisioner's checkClaim hook for `explain`); the rest reads the cluster through CsiClusterAccess.
// Errors carry the state external-provisioner gives them: a bad class or claim is an InfeasibleError (Finished,
// slow retry until it changes), a failed read of the cluster is NoChange, a missing CSINode or Node is Reschedule.
import { InfeasibleError, ProvisioningError, type ProvisionOptions } from '../controller/provisioner.ts';
import type { PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { errorMessage } from '../types/errors.ts';
import { isQuantity, parseQuantity } from '../types/quantity.ts';
import { volumeCapabilities, type VolumeCapability } from './access-modes.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import {
  cloneSource,
  dataSourceOf,
  FINALIZER_CLONE_PROTECTION,
  FINALIZER_SNAPSHOT_SOURCE_PROTECTION,
  snapshotSource,
  sourceKindOf,
  type DataSource,
} from './content-source.ts';
import type { ControllerRpcType } from './descriptors.ts';
import {
  fsTypeOf,
  PARAMETER_PV_NAME,
  PARAMETER_PVC_NAME,
  PARAMETER_PVC_NAMESPACE,
  removePrefixedParameters,
} from './parameters.ts';
import { secretData, secretReferences, type SecretReference, type SecretOperation } from './secrets.ts';
import type { RequestOf } from './services.ts';
import { accessibilityRequirements, TopologyNotFoundError } from './topology.ts';

/** How CsiProvisioner builds requests (external-provisioner's flags of the same names). */
export interface CsiRequestOptions {
  /** `--default-fstype`: the fstype when the class names none (default: none, the plugin decides). */
  defaultFsType: string;
  /** `--strict-topology`: only the selected node's segment is requisite and preferred. */
  strictTopology: boolean;
  /** `--immediate-topology` (default true): Immediate claims get all nodes' segments; false: no requirement. */
  immediateTopology: boolean;
  /** `--extra-create-metadata`: add the claim's name and namespace and the PV's name to the parameters. */
  extraCreateMetadata: boolean;
  /**
   * `--prevent-volume-mode-conversion` (default true): a restore whose volume mode differs from the snapshot's
   * source volume mode is refused unless the VolumeSnapshotContent carries
   * `snapshot.storage.kubernetes.io/allow-volume-mode-change: "true"`.
   */
  preventVolumeModeConversion: boolean;
}

/** What the request builder knows about the plugin. */
export interface PluginFacts {
  driverName: string;
  controllerCapabilities: ReadonlySet<ControllerRpcType>;
  /** VOLUME_ACCESSIBILITY_CONSTRAINTS. */
  topology: boolean;
}

/** The outcome of the pure checks. */
export interface CheckedClaim {
  fsType: string;
  parameters: Record<string, string>;
  capabilities: VolumeCapability[];
  requiredBytes: bigint;
  secretRefs: Partial<Record<SecretOperation, SecretReference>>;
  dataSource?: DataSource;
  sourceKind?: 'clone' | 'snapshot';
}

function requiredCapability(facts: PluginFacts, cap: ControllerRpcType, what: string): void {
  if (!facts.controllerCapabilities.has(cap))
    throw new InfeasibleError(`CSI driver does not support ${what}: controller ${cap} capability is not reported`);
}

/** Every check that needs only the claim, its class and the plugin's capabilities. Throws InfeasibleError (or IgnoredError for a populator's source). */
export function checkCsiClaim(
  claim: PersistentVolumeClaim,
  sc: StorageClass,
  pvName: string,
  facts: PluginFacts,
  o: CsiRequestOptions,
): CheckedClaim {
  const dataSource = dataSourceOf(claim);
  const sourceKind = dataSource ? sourceKindOf(dataSource) : undefined;
  if (sourceKind === 'snapshot') requiredCapability(facts, 'CREATE_DELETE_SNAPSHOT', 'snapshot restore');
  if (sourceKind === 'clone') requiredCapability(facts, 'CLONE_VOLUME', 'clone operations');
  if (claim.spec.volumeAttributesClassName) requiredCapability(facts, 'MODIFY_VOLUME', 'VolumeAttributesClass');
  if (claim.spec.selector) throw new InfeasibleError('claim Selector is not supported');
  const params = sc.parameters ?? {};
  const fsType = fsTypeOf(params, o.defaultFsType);
  const request = claim.spec.resources?.requests?.storage;
  if (request !== undefined && !isQuantity(request))
    throw new InfeasibleError(`the claim's storage request ${JSON.stringify(request)} is not a quantity`);
  const requiredBytes = request === undefined ? 0n : parseQuantity(request);
  const capabilities = volumeCapabilities(
    claim.spec.accessModes ?? [],
    claim.spec.volumeMode,
    fsType,
    sc.mountOptions,
    facts.controllerCapabilities.has('SINGLE_NODE_MULTI_WRITER'),
  );
  const secretRefs = secretReferences(params, pvName, claim);
  const parameters = removePrefixedParameters(params);
  return {
    fsType,
    parameters,
    capabilities,
    requiredBytes,
    secretRefs,
    ...(dataSource ? { dataSource } : {}),
    ...(sourceKind ? { sourceKind } : {}),
  };
}

/** The request and what the PV needs from the preparation. */
export interface PreparedProvision {
  request: RequestOf<'createVolume'>;
  checked: CheckedClaim;
  /** The provisioner secret's data (also for a cleanup DeleteVolume). */
  provisionerSecrets: Record<string, string> | undefined;
  /** Whether the plugin has topology and a node was selected: RESOURCE_EXHAUSTED then means Reschedule. */
  mayReschedule: boolean;
}

const noChange = (what: string, err: unknown) =>
  new ProvisioningError(`${what}: ${errorMessage(err)}`, 'NoChange', { cause: err });

/** Reads a secret's data; a missing secret or a failed read is NoChange (it may be created, the API may recover). */
export async function readSecret(
  cluster: CsiClusterAccess,
  ref: SecretReference,
  signal: AbortSignal,
): Promise<Record<string, string>> {
  let secret;
  try {
    secret = await cluster.getSecret(ref.namespace, ref.name, signal);
  } catch (err) {
    throw noChange(`error getting secret ${ref.name} in namespace ${ref.namespace}`, err);
  }
  if (!secret)
    throw new ProvisioningError(
      `error getting secret ${ref.name} in namespace ${ref.namespace}: secrets "${ref.name}" not found`,
      'NoChange',
    );
  return secretData(secret.data);
}

/** prepareProvision: the CreateVolumeRequest for `options`, with the cluster reads and source finalizers it takes. */
export async function prepareProvision(
  options: ProvisionOptions,
  facts: PluginFacts,
  o: CsiRequestOptions,
  cluster: CsiClusterAccess,
  signal: AbortSignal,
): Promise<PreparedProvision> {
  const { claim, storageClass: sc, pvName } = options;
  const checked = checkCsiClaim(claim, sc, pvName, facts, o);
  const request: RequestOf<'createVolume'> = {
    name: pvName,
    parameters: checked.parameters,
    volumeCapabilities: checked.capabilities,
    capacityRange: { requiredBytes: checked.requiredBytes },
  };
  const ds = checked.dataSource;
  if (ds && checked.sourceKind) {
    request.volumeContentSource =
      checked.sourceKind === 'clone'
        ? await cloneSource(claim, sc, ds, cluster, signal)
        : await snapshotSource(claim, sc, ds, cluster, signal, o.preventVolumeModeConversion);
    const [kind, finalizer] =
      checked.sourceKind === 'clone'
        ? (['PersistentVolumeClaim', FINALIZER_CLONE_PROTECTION] as const)
        : (['VolumeSnapshot', FINALIZER_SNAPSHOT_SOURCE_PROTECTION] as const);
    try {
      await cluster.addFinalizer(kind, ds.namespace, ds.name, finalizer, signal);
    } catch (err) {
      throw noChange(`could not add ${finalizer} to ${kind} ${ds.namespace}/${ds.name}`, err);
    }
  }
  const node = options.selectedNodeName;
  if (facts.topology) {
    try {
      const requirement = await accessibilityRequirements(
        {
          driverName: facts.driverName,
          claimName: claim.metadata.name ?? '',
          allowedTopologies: sc.allowedTopologies,
          selectedNodeName: node,
          strictTopology: o.strictTopology,
          immediateTopology: o.immediateTopology,
        },
        cluster,
        signal,
      );
      if (requirement) request.accessibilityRequirements = requirement;
    } catch (err) {
      if (err instanceof TopologyNotFoundError) throw new ProvisioningError(err.message, 'Reschedule', { cause: err });
      throw noChange('error generating accessibility requirements', err);
    }
  }
  const provisionerRef = checked.secretRefs.provisioner;
  const provisionerSecrets = provisionerRef ? await readSecret(cluster, provisionerRef, signal) : undefined;
  if (provisionerSecrets) request.secrets = provisionerSecrets;
  if (o.extraCreateMetadata) {
    request.parameters = {
      ...request.parameters,
      [PARAMETER_PVC_NAME]: claim.metadata.name ?? '',
      [PARAMETER_PVC_NAMESPACE]: claim.metadata.namespace ?? '',
      [PARAMETER_PV_NAME]: pvName,
    };
  }
  const vacName = claim.spec.volumeAttributesClassName;
  if (vacName) {
    let vac;
    try {
      vac = await cluster.getVolumeAttributesClass(vacName, signal);
    } catch (err) {
      throw noChange(`error getting VolumeAttributesClass ${vacName}`, err);
    }
    if (!vac) throw new ProvisioningError(`volumeattributesclass.storage.k8s.io "${vacName}" not found`, 'NoChange');
    if (vac.driverName !== facts.driverName) {
      throw new InfeasibleError(
        `VAC ${vacName} referenced in PVC is for driver ${vac.driverName} which does not match driver name ${facts.driverName}`,
      );
    }
    request.mutableParameters = { ...(vac.parameters ?? {}) };
  }
  return { request, checked, provisionerSecrets, mayReschedule: facts.topology && node !== undefined };
}
