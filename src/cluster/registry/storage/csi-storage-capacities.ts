// storage.k8s.io/v1 CSIStorageCapacity: its registry entry, validation after k/k pkg/apis/storage/validation
// (nodeTopology a valid label selector, storageClassName a DNS subdomain, capacity not negative; nodeTopology and
// storageClassName immutable, as the inputs of the GetCapacity call that produced the object) and quantities read
// back canonically. It has no columns: kube-apiserver serves this kind with the default table convertor
// (NAME, CREATED AT), although a printer for it exists.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, invalid, invalidEach } from '../../common/field-errors.ts';
import { isDNS1123Subdomain } from '../../common/name-rules.ts';
import { canonicalizeQuantityFields } from '../quantity-canonical.ts';
import { ALL_VERBS } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { canonical, validateLabelSelector, validateQuantity } from '../validation.ts';

/** CSIStorageCapacity: topology selector, class name, capacities; the GetCapacity inputs are immutable. */
export function validateCSIStorageCapacity(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateLabelSelector(obj.nodeTopology, FieldPath.root('nodeTopology'));
  const className = obj.storageClassName ?? '';
  if (typeof className !== 'string')
    causes.push(invalid(FieldPath.root('storageClassName'), className, 'must be a string'));
  else causes.push(...invalidEach(FieldPath.root('storageClassName'), className, isDNS1123Subdomain(className)));
  for (const f of ['capacity', 'maximumVolumeSize']) {
    if (obj[f] !== undefined && obj[f] !== null) causes.push(...validateQuantity(obj[f], FieldPath.root(f), false));
  }
  if (old !== undefined) {
    if (JSON.stringify(canonical(obj.nodeTopology ?? null)) !== JSON.stringify(canonical(old.nodeTopology ?? null))) {
      causes.push(invalid(FieldPath.root('nodeTopology'), obj.nodeTopology ?? null, 'field is immutable'));
    }
    if (obj.storageClassName !== old.storageClassName)
      causes.push(invalid(FieldPath.root('storageClassName'), obj.storageClassName, 'field is immutable'));
  }
  return causes;
}

export const CSI_STORAGE_CAPACITIES: ResourceType = {
  group: 'storage.k8s.io',
  version: 'v1',
  resource: 'csistoragecapacities',
  kind: 'CSIStorageCapacity',
  listKind: 'CSIStorageCapacityList',
  namespaced: true,
  singular: 'csistoragecapacity',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateCSIStorageCapacity(o, old),
  defaults(o) {
    canonicalizeQuantityFields(o, ['capacity', 'maximumVolumeSize']);
  },
  fieldSelectors: {},
};
