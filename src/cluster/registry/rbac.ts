// The rbac.authorization.k8s.io/v1 group: Role, ClusterRole, RoleBinding and ClusterRoleBinding, each with its
// registry entry, validation and kubectl columns. Validated as
// kube-apiserver 1.32 does (k/k pkg/apis/rbac/validation, ValidateServiceAccount): policy rules need verbs and
// either apiGroups + resources or nonResourceURLs (the latter cluster-wide only), bindings need a roleRef of a
// supported kind (immutable once created) and subjects of a known kind. Privilege-escalation checks are not
// done: the embedded cluster has one all-powerful user, and RBAC authorizes nothing.
import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import {
  FieldPath,
  invalid,
  invalidEach,
  list,
  notSupported,
  record,
  required,
  str,
  typeCheck,
} from '../common/field-errors.ts';
import { isDNS1123Subdomain } from '../common/name-rules.ts';
import { ALL_VERBS } from './registry-fields.ts';
import type { ResourceType } from './resource-type.ts';
import { ageColumn, column, nameColumn, rec, str as cellText, type TableColumn } from './table-columns.ts';
import { pathSegmentName, validateLabelSelector } from './validation.ts';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
const SUBJECT_KINDS = ['ServiceAccount', 'User', 'Group'];

const strings = (v: unknown): string[] => list(v).filter((x): x is string => typeof x === 'string');

/** ValidatePolicyRule. */
function validatePolicyRule(raw: unknown, namespaced: boolean, p: FieldPath): StatusCause[] {
  const rule = record(raw) ?? {};
  const causes: StatusCause[] = [];
  for (const f of ['verbs', 'apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'])
    causes.push(...typeCheck(p.child(f), rule[f], 'array'));
  if (causes.length) return causes;
  if (list(rule.verbs).length === 0) causes.push(required(p.child('verbs'), 'verbs must contain at least one value'));
  const urls = strings(rule.nonResourceURLs);
  if (list(rule.nonResourceURLs).length > 0) {
    if (namespaced)
      causes.push(invalid(p.child('nonResourceURLs'), urls, 'namespaced rules cannot apply to non-resource URLs'));
    if (list(rule.apiGroups).length > 0 || list(rule.resources).length > 0 || list(rule.resourceNames).length > 0) {
      causes.push(
        invalid(p.child('nonResourceURLs'), urls, 'rules cannot apply to both regular resources and non-resource URLs'),
      );
    }
    return causes;
  }
  if (list(rule.apiGroups).length === 0)
    causes.push(required(p.child('apiGroups'), 'resource rules must supply at least one api group'));
  if (list(rule.resources).length === 0)
    causes.push(required(p.child('resources'), 'resource rules must supply at least one resource'));
  return causes;
}

function validateRules(obj: KubeObject, namespaced: boolean): StatusCause[] {
  const p = FieldPath.root('rules');
  const typeErrs = typeCheck(p, obj.rules, 'array');
  if (typeErrs.length) return typeErrs;
  return list(obj.rules).flatMap((r, i) => validatePolicyRule(r, namespaced, p.index(i)));
}

/** Role: every rule valid (namespaced: no nonResourceURLs). */
export function validateRole(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  return validateRules(obj, true);
}

/** ClusterRole: every rule valid; an aggregationRule needs at least one valid clusterRoleSelector. */
export function validateClusterRole(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const causes = validateRules(obj, false);
  const aggregation = record(obj.aggregationRule);
  if (aggregation) {
    const p = FieldPath.root('aggregationRule', 'clusterRoleSelectors');
    const selectors = list(aggregation.clusterRoleSelectors);
    if (selectors.length === 0)
      causes.push(required(p, 'at least one clusterRoleSelector required if aggregationRule is non-nil'));
    selectors.forEach((s, i) => causes.push(...validateLabelSelector(s, p.index(i))));
  }
  return causes;
}

/** Go's %#v of the internal rbac.RoleRef, as kube prints it in `cannot change roleRef`. */
function goRoleRef(ref: Record<string, unknown>): string {
  const q = (v: unknown) => JSON.stringify(str(v) ?? '');
  return `rbac.RoleRef{APIGroup:${q(ref.apiGroup)}, Kind:${q(ref.kind)}, Name:${q(ref.name)}}`;
}

/** ValidateRoleBindingSubject. */
function validateSubject(raw: unknown, namespaced: boolean, p: FieldPath): StatusCause[] {
  const s = record(raw) ?? {};
  const causes: StatusCause[] = [];
  const name = str(s.name) ?? '';
  const apiGroup = str(s.apiGroup) ?? '';
  if (name === '') causes.push(required(p.child('name')));
  switch (s.kind) {
    case 'ServiceAccount':
      if (name !== '') causes.push(...invalidEach(p.child('name'), name, isDNS1123Subdomain(name)));
      if (apiGroup !== '') causes.push(notSupported(p.child('apiGroup'), apiGroup, ['']));
      if (!namespaced && !str(s.namespace)) causes.push(required(p.child('namespace')));
      break;
    case 'User':
    case 'Group':
      if (apiGroup !== RBAC_GROUP) causes.push(notSupported(p.child('apiGroup'), apiGroup, [RBAC_GROUP]));
      break;
    default:
      causes.push(notSupported(p.child('kind'), s.kind ?? '', SUBJECT_KINDS));
  }
  return causes;
}

function validateBinding(
  obj: KubeObject,
  old: KubeObject | undefined,
  roleKinds: string[],
  namespaced: boolean,
): StatusCause[] {
  const causes: StatusCause[] = [];
  const refPath = FieldPath.root('roleRef');
  const refErrs = typeCheck(refPath, obj.roleRef, 'object');
  if (refErrs.length) return refErrs;
  const ref = record(obj.roleRef) ?? {};
  if (ref.apiGroup !== RBAC_GROUP)
    causes.push(notSupported(refPath.child('apiGroup'), ref.apiGroup ?? '', [RBAC_GROUP]));
  if (!roleKinds.includes(String(ref.kind)))
    causes.push(notSupported(refPath.child('kind'), ref.kind ?? '', roleKinds));
  const refName = str(ref.name) ?? '';
  if (refName === '') causes.push(required(refPath.child('name')));
  else causes.push(...invalidEach(refPath.child('name'), refName, pathSegmentName(refName, false)));
  const subjectsPath = FieldPath.root('subjects');
  const subjectErrs = typeCheck(subjectsPath, obj.subjects, 'array');
  if (subjectErrs.length) causes.push(...subjectErrs);
  else list(obj.subjects).forEach((s, i) => causes.push(...validateSubject(s, namespaced, subjectsPath.index(i))));
  if (old !== undefined) {
    const oldRef = record(old.roleRef) ?? {};
    const same = ['apiGroup', 'kind', 'name'].every((k) => (str(ref[k]) ?? '') === (str(oldRef[k]) ?? ''));
    if (!same)
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'roleRef',
        message: `Invalid value: ${goRoleRef(ref)}: cannot change roleRef`,
      });
  }
  return causes;
}

/** RoleBinding: roleRef to a Role or ClusterRole (immutable), subjects of a known kind. */
export function validateRoleBinding(obj: KubeObject, old?: KubeObject): StatusCause[] {
  return validateBinding(obj, old, ['Role', 'ClusterRole'], true);
}

/** ClusterRoleBinding: roleRef to a ClusterRole (immutable); ServiceAccount subjects need a namespace. */
export function validateClusterRoleBinding(obj: KubeObject, old?: KubeObject): StatusCause[] {
  return validateBinding(obj, old, ['ClusterRole'], false);
}

/** SetDefaults_RoleBinding / SetDefaults_ClusterRoleBinding / SetDefaults_Subject. */
export function defaultBinding(obj: KubeObject): void {
  const ref = record(obj.roleRef);
  if (ref && !ref.apiGroup) ref.apiGroup = RBAC_GROUP;
  for (const raw of list(obj.subjects)) {
    const s = record(raw);
    // ServiceAccount subjects default to the core group "", which the omitempty field does not show.
    if (s && !s.apiGroup && (s.kind === 'User' || s.kind === 'Group')) s.apiGroup = RBAC_GROUP;
  }
}

// ---------------------------------------------------------------------------------- kubectl columns

/** rbac.SubjectsStrings: users, groups and service accounts (`namespace/name`) of a binding. */
function subjectsOfKind(o: KubeObject, kind: string): string {
  const subjects = Array.isArray(o.subjects) ? o.subjects.map(rec) : [];
  return subjects
    .filter((s) => s.kind === kind)
    .map((s) => (kind === 'ServiceAccount' ? `${cellText(s.namespace)}/${cellText(s.name)}` : cellText(s.name)))
    .join(', ');
}

const bindingColumns: TableColumn[] = [
  nameColumn,
  column(
    'Role',
    'RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.',
    (o) => `${cellText(rec(o.roleRef).kind)}/${cellText(rec(o.roleRef).name)}`,
  ),
  ageColumn,
  column('Users', 'Users in the roleBinding', (o) => subjectsOfKind(o, 'User'), 1),
  column('Groups', 'Groups in the roleBinding', (o) => subjectsOfKind(o, 'Group'), 1),
  column('ServiceAccounts', 'ServiceAccounts in the roleBinding', (o) => subjectsOfKind(o, 'ServiceAccount'), 1),
];

// ---------------------------------------------------------------------------------- registry entries

/** The fields every RBAC entry shares; RBAC names are path segments (ValidateRBACName); deletions answer a Status. */
const rbac = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  verbs: ALL_VERBS,
  hasStatus: false,
  nameRule: 'path',
  fieldSelectors: {},
} as const satisfies Partial<ResourceType>;

export const CLUSTER_ROLES: ResourceType = {
  ...rbac,
  resource: 'clusterroles',
  kind: 'ClusterRole',
  listKind: 'ClusterRoleList',
  namespaced: false,
  singular: 'clusterrole',
  verbs: [...ALL_VERBS],
  validate: (o, old) => validateClusterRole(o, old),
};

export const CLUSTER_ROLE_BINDINGS: ResourceType = {
  ...rbac,
  resource: 'clusterrolebindings',
  kind: 'ClusterRoleBinding',
  listKind: 'ClusterRoleBindingList',
  namespaced: false,
  singular: 'clusterrolebinding',
  verbs: [...ALL_VERBS],
  validate: (o, old) => validateClusterRoleBinding(o, old),
  defaults: defaultBinding,
  columns: bindingColumns,
};

export const ROLES: ResourceType = {
  ...rbac,
  resource: 'roles',
  kind: 'Role',
  listKind: 'RoleList',
  namespaced: true,
  singular: 'role',
  verbs: [...ALL_VERBS],
  validate: (o, old) => validateRole(o, old),
};

export const ROLE_BINDINGS: ResourceType = {
  ...rbac,
  resource: 'rolebindings',
  kind: 'RoleBinding',
  listKind: 'RoleBindingList',
  namespaced: true,
  singular: 'rolebinding',
  verbs: [...ALL_VERBS],
  validate: (o, old) => validateRoleBinding(o, old),
  defaults: defaultBinding,
  columns: bindingColumns,
};
