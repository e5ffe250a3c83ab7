// The secrets a StorageClass names for each CSI operation (`csi.storage.k8s.io/<op>-secret-name` and
// `-namespace`, falling back to `secret-name`/`secret-namespace`; the provisioner and the three publish/stage
// secrets also read their deprecated `csiProvisionerSecretName`-style keys), with external-provisioner's templates:
// the namespace may use `${pv.name}` and `${pvc.namespace}`; the name also `${pvc.name}` and
// `${pvc.annotations['key']}`. Pure: the provisioner fetches the data of the references made here.
import { InfeasibleError } from '../controller/provisioner.ts';
import type { PersistentVolumeClaim } from '../types/k8s.ts';
import { isDnsLabel, isDnsSubdomain } from '../types/names.ts';
import { CSI_PARAMETER_PREFIX } from './parameters.ts';

/** A Secret by namespace and name (a PV's `*SecretRef`). */
export interface SecretReference {
  name: string;
  namespace: string;
}

/** The operations a class may name a secret for. */
export type SecretOperation =
  | 'provisioner'
  | 'controllerPublish'
  | 'nodeStage'
  | 'nodePublish'
  | 'controllerExpand'
  | 'nodeExpand'
  | 'controllerModify';

interface SecretKeys {
  label: string;
  name: string;
  namespace: string;
  deprecatedName?: string;
  deprecatedNamespace?: string;
}

const keys = (label: string, op: string, deprecated?: string): SecretKeys => ({
  label,
  name: `${CSI_PARAMETER_PREFIX}${op}-secret-name`,
  namespace: `${CSI_PARAMETER_PREFIX}${op}-secret-namespace`,
  ...(deprecated
    ? { deprecatedName: `csi${deprecated}SecretName`, deprecatedNamespace: `csi${deprecated}SecretNamespace` }
    : {}),
});

/** Each operation's parameter keys. */
export const SECRET_PARAMETERS: Readonly<Record<SecretOperation, SecretKeys>> = Object.freeze({
  provisioner: keys('Provisioner', 'provisioner', 'Provisioner'),
  controllerPublish: keys('ControllerPublish', 'controller-publish', 'ControllerPublish'),
  nodeStage: keys('NodeStage', 'node-stage', 'NodeStage'),
  nodePublish: keys('NodePublish', 'node-publish', 'NodePublish'),
  controllerExpand: keys('ControllerExpand', 'controller-expand'),
  nodeExpand: keys('NodeExpand', 'node-expand'),
  controllerModify: keys('ControllerModify', 'controller-modify'),
});
const DEFAULT_KEYS: SecretKeys = {
  label: 'Default',
  name: `${CSI_PARAMETER_PREFIX}secret-name`,
  namespace: `${CSI_PARAMETER_PREFIX}secret-namespace`,
};

/** PV annotation remembering the provisioner secret's name for DeleteVolume (the class may be gone by then). */
export const ANN_DELETION_SECRET_NAME = 'volume.kubernetes.io/provisioner-deletion-secret-name';
/** PV annotation remembering the provisioner secret's namespace for DeleteVolume. */
export const ANN_DELETION_SECRET_NAMESPACE = 'volume.kubernetes.io/provisioner-deletion-secret-namespace';
/** PV annotation remembering the controller-modify secret's name (for the resizer's ControllerModifyVolume). */
export const ANN_MODIFY_SECRET_NAME = 'volume.kubernetes.io/controller-modify-secret-name';
/** PV annotation remembering the controller-modify secret's namespace. */
export const ANN_MODIFY_SECRET_NAMESPACE = 'volume.kubernetes.io/controller-modify-secret-namespace';

function templates(
  k: SecretKeys,
  params: Readonly<Record<string, string>>,
): { name: string; namespace: string } | undefined {
  let names = 0;
  let namespaces = 0;
  let name = '';
  let namespace = '';
  for (const [key, isName] of [
    [k.deprecatedName, true],
    [k.deprecatedNamespace, false],
    [k.name, true],
    [k.namespace, false],
  ] as const) {
    if (key === undefined || !Object.hasOwn(params, key)) continue;
    if (isName) {
      name = params[key];
      names++;
    } else {
      namespace = params[key];
      namespaces++;
    }
  }
  if (names > 1 || namespaces > 1)
    throw new InfeasibleError(
      `${k.label} secrets specified in parameters with both "csi" and "${CSI_PARAMETER_PREFIX}" keys`,
    );
  if (names !== namespaces)
    throw new InfeasibleError(`either name and namespace for ${k.label} secrets specified, Both must be specified`);
  if (names === 0) return undefined;
  if (name === '' || namespace === '')
    throw new InfeasibleError(
      `${k.label} secrets specified in parameters but value of either namespace or name is empty`,
    );
  return { name, namespace };
}

/** Go's os.Expand over `params`: `${key}` and `$key`; unknown keys are an error naming them. */
export function resolveTemplate(template: string, params: Readonly<Record<string, string>>): string {
  const missing = new Set<string>();
  let out = '';
  for (let i = 0; i < template.length; i++) {
    if (template[i] !== '$' || i + 1 >= template.length) {
      out += template[i];
      continue;
    }
    let name: string;
    let width: number;
    const next = template[i + 1];
    if (next === '{') {
      const close = template.indexOf('}', i + 2);
      if (close < 0 || close === i + 2) throw new InfeasibleError(`bad substitution in "${template}"`);
      name = template.slice(i + 2, close);
      width = close - i;
    } else if ('*#$@!?-0123456789'.includes(next)) {
      name = next;
      width = 1;
    } else {
      const m = /^[A-Za-z0-9_]+/.exec(template.slice(i + 1));
      if (!m) {
        out += '$';
        continue;
      }
      name = m[0];
      width = m[0].length;
    }
    if (Object.hasOwn(params, name)) out += params[name];
    else missing.add(name);
    i += width;
  }
  if (missing.size > 0) throw new InfeasibleError(`invalid tokens: ${JSON.stringify([...missing].sort())}`);
  return out;
}

/**
 * external-provisioner's getSecretReference: the secret `op` names in the class parameters (or the default
 * secret), with its templates resolved for this claim and PV; undefined when the class names none. `claim` is
 * absent when only the PV is known (then only `${pv.name}` resolves).
 */
export function secretReference(
  op: SecretOperation,
  params: Readonly<Record<string, string>>,
  pvName: string,
  claim: Pick<PersistentVolumeClaim, 'metadata'> | undefined,
): SecretReference | undefined {
  const t = templates(SECRET_PARAMETERS[op], params) ?? templates(DEFAULT_KEYS, params);
  if (!t) return undefined;
  const nsParams: Record<string, string> = { 'pv.name': pvName };
  if (claim) nsParams['pvc.namespace'] = claim.metadata.namespace ?? '';
  const namespace = resolveTemplate(t.namespace, nsParams);
  if (!isDnsLabel(namespace)) {
    throw new InfeasibleError(
      namespace !== t.namespace
        ? `"${t.namespace}" resolved to "${namespace}" which is not a valid namespace name`
        : `"${t.namespace}" is not a valid namespace name`,
    );
  }
  const nameParams: Record<string, string> = { 'pv.name': pvName };
  if (claim) {
    nameParams['pvc.name'] = claim.metadata.name ?? '';
    nameParams['pvc.namespace'] = claim.metadata.namespace ?? '';
    for (const [k, v] of Object.entries(claim.metadata.annotations ?? {})) nameParams[`pvc.annotations['${k}']`] = v;
  }
  const name = resolveTemplate(t.name, nameParams);
  if (!isDnsSubdomain(name)) {
    throw new InfeasibleError(
      name !== t.name
        ? `"${t.name}" resolved to "${name}" which is not a valid secret name`
        : `"${t.name}" is not a valid secret name`,
    );
  }
  return { name, namespace };
}

/** Every operation's reference for a claim (those the class names). */
export function secretReferences(
  params: Readonly<Record<string, string>>,
  pvName: string,
  claim: Pick<PersistentVolumeClaim, 'metadata'>,
): Partial<Record<SecretOperation, SecretReference>> {
  const out: Partial<Record<SecretOperation, SecretReference>> = {};
  for (const op of Object.keys(SECRET_PARAMETERS) as SecretOperation[]) {
    const ref = secretReference(op, params, pvName, claim);
    if (ref) out[op] = ref;
  }
  return out;
}

/** A Secret's data as CSI wants it: base64-decoded strings. */
export function secretData(data: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}
