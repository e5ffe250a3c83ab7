// StorageClass parameters on their way to CreateVolume, as external-provisioner handles them: the
// `csi.storage.k8s.io/` keys are ours and are stripped (an unknown one is refused: it is a typo or a feature we
// lack), the fstype comes from `csi.storage.k8s.io/fstype` (or the deprecated `fstype`) else `--default-fstype`, and
// `--extra-create-metadata` adds the claim's and PV's names.
import { InfeasibleError } from '../controller/provisioner.ts';

/** The reserved prefix. */
export const CSI_PARAMETER_PREFIX = 'csi.storage.k8s.io/';
/** The fstype parameter. */
export const PARAMETER_FSTYPE = `${CSI_PARAMETER_PREFIX}fstype`;
/** `--extra-create-metadata`: the claim's name. */
export const PARAMETER_PVC_NAME = `${CSI_PARAMETER_PREFIX}pvc/name`;
/** `--extra-create-metadata`: the claim's namespace. */
export const PARAMETER_PVC_NAMESPACE = `${CSI_PARAMETER_PREFIX}pvc/namespace`;
/** `--extra-create-metadata`: the PV's name. */
export const PARAMETER_PV_NAME = `${CSI_PARAMETER_PREFIX}pv/name`;

const SECRET_KINDS = [
  'provisioner',
  'controller-publish',
  'node-stage',
  'node-publish',
  'controller-expand',
  'node-expand',
  'controller-modify',
];

/** The reserved keys we know: fstype and every secret's name and namespace (and the default secret's). */
export const KNOWN_PREFIXED_PARAMETERS: ReadonlySet<string> = new Set([
  PARAMETER_FSTYPE,
  `${CSI_PARAMETER_PREFIX}secret-name`,
  `${CSI_PARAMETER_PREFIX}secret-namespace`,
  ...SECRET_KINDS.flatMap((k) => [
    `${CSI_PARAMETER_PREFIX}${k}-secret-name`,
    `${CSI_PARAMETER_PREFIX}${k}-secret-namespace`,
  ]),
]);

/** The parameters the plugin sees: the class's, minus the reserved keys. An unknown reserved key is refused. */
export function removePrefixedParameters(parameters: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parameters)) {
    if (!k.startsWith(CSI_PARAMETER_PREFIX)) out[k] = v;
    else if (!KNOWN_PREFIXED_PARAMETERS.has(k)) {
      throw new InfeasibleError(
        `failed to strip CSI Parameters of prefixed keys: found unknown parameter key "${k}" with reserved namespace ${CSI_PARAMETER_PREFIX}`,
      );
    }
  }
  return out;
}

/** The filesystem type: `csi.storage.k8s.io/fstype` or `fstype` (any case; both is an error), else the default. */
export function fsTypeOf(parameters: Readonly<Record<string, string>>, defaultFsType: string): string {
  let found = 0;
  let fsType = '';
  for (const [k, v] of Object.entries(parameters)) {
    if (k.toLowerCase() === 'fstype' || k === PARAMETER_FSTYPE) {
      fsType = v;
      found++;
    }
  }
  if (found > 1)
    throw new InfeasibleError(`fstype specified in parameters with both "fstype" and "${PARAMETER_FSTYPE}" keys`);
  return fsType || defaultFsType;
}
