// apps/v1 Deployment: its registry entry (SetDefaults_Deployment, generation bumped by spec and annotation
// changes), validation (ValidateDeploymentSpec, rollout strategy, immutable selector, non-negative counters) and
// kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  FieldPath,
  forbidden,
  invalid,
  record,
  required,
  typeCheck,
  type JsonRecord,
} from '../../common/field-errors.ts';
import { ALL_VERBS, section, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, spec, status, type TableColumn } from '../table-columns.ts';
import { validateLabelSelector } from '../validation.ts';
import {
  APPS_FIELDS,
  bumpGeneration,
  defaultTemplate,
  goIntOrString,
  goLabelSelector,
  goString,
  immutableSelector,
  intOrPercentValue,
  isEmptySelector,
  labelSelectorString,
  nonNegative,
  notMoreThan100Percent,
  num,
  rawInvalid,
  statusCounters,
  templateLabelsMismatch,
  validatePositiveIntOrPercent,
  validateTemplate,
  workloadWideColumns,
} from './workloads.ts';

/** SetDefaults_Deployment (apps/v1). */
function defaultDeployment(o: KubeObject): void {
  const spec = section(o, 'spec');
  if (spec.replicas === undefined || spec.replicas === null) spec.replicas = 1;
  const strategy = section(spec, 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rollingUpdate = section(strategy, 'rollingUpdate');
    setDefault(rollingUpdate, 'maxUnavailable', '25%');
    setDefault(rollingUpdate, 'maxSurge', '25%');
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  setDefault(spec, 'progressDeadlineSeconds', 600);
  defaultTemplate(spec);
}

/** Deployment: ValidateDeploymentSpec, the apps/v1 selector immutability, non-negative status counters. */
export function validateDeployment(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes = nonNegative(spec.replicas, p.child('replicas'));
  const sel = record(spec.selector);
  if (spec.selector === undefined || spec.selector === null) causes.push(required(p.child('selector')));
  else {
    causes.push(...validateLabelSelector(spec.selector, p.child('selector')));
    if (sel && isEmptySelector(sel))
      causes.push(rawInvalid(p.child('selector'), goLabelSelector(sel), 'empty selector is invalid for deployment'));
  }
  const template = record(spec.template) ?? {};
  // An empty selector selects everything (the match is not checked); a nil one selects nothing.
  if (!(sel && isEmptySelector(sel)))
    causes.push(...templateLabelsMismatch(spec.selector, template, p.child('template')));
  causes.push(
    ...validateTemplate(template, p.child('template'), 'activeDeadlineSeconds in ReplicaSet is not Supported'),
  );
  causes.push(...validateDeploymentStrategy(record(spec.strategy) ?? {}, p.child('strategy')));
  causes.push(...nonNegative(spec.minReadySeconds, p.child('minReadySeconds')));
  causes.push(...nonNegative(spec.revisionHistoryLimit, p.child('revisionHistoryLimit')));
  if (typeof spec.progressDeadlineSeconds === 'number') {
    causes.push(...nonNegative(spec.progressDeadlineSeconds, p.child('progressDeadlineSeconds')));
    const minReady = typeof spec.minReadySeconds === 'number' ? spec.minReadySeconds : 0;
    if (spec.progressDeadlineSeconds <= minReady)
      causes.push(
        invalid(
          p.child('progressDeadlineSeconds'),
          spec.progressDeadlineSeconds,
          'must be greater than minReadySeconds',
        ),
      );
  }
  causes.push(...immutableSelector(obj, old));
  causes.push(
    ...statusCounters(obj, [
      'observedGeneration',
      'replicas',
      'updatedReplicas',
      'readyReplicas',
      'availableReplicas',
      'unavailableReplicas',
    ]),
  );
  return causes;
}

function validateDeploymentStrategy(strategy: JsonRecord, p: FieldPath): StatusCause[] {
  const rollingUpdate = record(strategy.rollingUpdate);
  switch (strategy.type) {
    case 'Recreate':
      return rollingUpdate
        ? [forbidden(p.child('rollingUpdate'), "may not be specified when strategy `type` is 'Recreate'")]
        : [];
    case 'RollingUpdate': {
      if (!rollingUpdate) return [required(p.child('rollingUpdate'), 'this should be defaulted and never be nil')];
      const rp = p.child('rollingUpdate');
      const causes = [
        ...validatePositiveIntOrPercent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')),
        ...validatePositiveIntOrPercent(rollingUpdate.maxSurge, rp.child('maxSurge')),
      ];
      if (intOrPercentValue(rollingUpdate.maxUnavailable) === 0 && intOrPercentValue(rollingUpdate.maxSurge) === 0) {
        causes.push(
          rawInvalid(
            rp.child('maxUnavailable'),
            goIntOrString(rollingUpdate.maxUnavailable ?? 0),
            'may not be 0 when `maxSurge` is 0',
          ),
        );
      }
      causes.push(...notMoreThan100Percent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')));
      return causes;
    }
    default:
      return [
        {
          reason: 'FieldValueNotSupported',
          field: p.toString(),
          message: `Unsupported value: apps.DeploymentStrategy{Type:${goString(strategy.type)}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", "RollingUpdate"`,
        },
      ];
  }
}

const deploymentColumns: TableColumn[] = [
  nameColumn,
  column(
    'Ready',
    'Number of the pod with ready state',
    (o) => `${num(status(o).readyReplicas)}/${num(spec(o).replicas)}`,
  ),
  column(
    'Up-to-date',
    'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
    (o) => num(status(o).updatedReplicas),
  ),
  column(
    'Available',
    'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
    (o) => num(status(o).availableReplicas),
  ),
  ageColumn,
  ...workloadWideColumns,
  column(
    'Selector',
    'Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.',
    (o) => (spec(o).selector ? labelSelectorString(spec(o).selector).replace(/^<none>$/, '') : ''),
    1,
  ),
];

export const DEPLOYMENTS: ResourceType = {
  ...APPS_FIELDS,
  resource: 'deployments',
  kind: 'Deployment',
  listKind: 'DeploymentList',
  shortNames: ['deploy'],
  singular: 'deployment',
  verbs: [...ALL_VERBS],
  categories: ['all'],
  validate: (o, old) => validateDeployment(o, old),
  defaults: defaultDeployment,
  prepareForCreate(o) {
    o.status = {};
    o.metadata.generation = 1;
  },
  prepareForUpdate: bumpGeneration(true, defaultDeployment),
  columns: deploymentColumns,
};
