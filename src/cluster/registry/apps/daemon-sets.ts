// apps/v1 DaemonSet: its registry entry (SetDefaults_DaemonSet, status counters shown as 0, generation bumped
// by spec changes), validation (ValidateDaemonSetSpec, update strategy, immutable selector, non-negative
// counters) and kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, record, required, typeCheck, type JsonRecord } from '../../common/field-errors.ts';
import { ALL_VERBS, section, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import {
  ageColumn,
  column,
  nameColumn,
  rec,
  spec,
  status,
  str as cellText,
  type TableColumn,
} from '../table-columns.ts';
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

/** DaemonSetStatus fields without omitempty: kube always shows them, as 0 on a fresh object. */
const DAEMONSET_STATUS_ZEROES = [
  'currentNumberScheduled',
  'numberMisscheduled',
  'desiredNumberScheduled',
  'numberReady',
];

/** SetDefaults_DaemonSet (apps/v1). */
function defaultDaemonSet(o: KubeObject): void {
  const spec = section(o, 'spec');
  const strategy = section(spec, 'updateStrategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rollingUpdate = section(strategy, 'rollingUpdate');
    setDefault(rollingUpdate, 'maxUnavailable', 1);
    setDefault(rollingUpdate, 'maxSurge', 0);
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  defaultTemplate(spec);
  const status = section(o, 'status');
  for (const f of DAEMONSET_STATUS_ZEROES) setDefault(status, f, 0);
}

/** DaemonSet: ValidateDaemonSetSpec, the apps/v1 selector immutability, non-negative status counters. */
export function validateDaemonSet(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes = validateLabelSelector(spec.selector, p.child('selector'));
  const template = record(spec.template) ?? {};
  causes.push(...templateLabelsMismatch(spec.selector, template, p.child('template')));
  const sel = record(spec.selector);
  if (sel && isEmptySelector(sel))
    causes.push(rawInvalid(p.child('selector'), goLabelSelector(sel), 'empty selector is invalid for daemonset'));
  causes.push(
    ...validateTemplate(template, p.child('template'), 'activeDeadlineSeconds in DaemonSet is not Supported'),
  );
  causes.push(...nonNegative(spec.minReadySeconds, p.child('minReadySeconds')));
  causes.push(...validateDaemonSetUpdateStrategy(record(spec.updateStrategy) ?? {}, p.child('updateStrategy')));
  causes.push(...nonNegative(spec.revisionHistoryLimit, p.child('revisionHistoryLimit')));
  causes.push(...immutableSelector(obj, old));
  causes.push(
    ...statusCounters(obj, [
      'currentNumberScheduled',
      'numberMisscheduled',
      'desiredNumberScheduled',
      'numberReady',
      'observedGeneration',
      'updatedNumberScheduled',
      'numberAvailable',
      'numberUnavailable',
    ]),
  );
  return causes;
}

function validateDaemonSetUpdateStrategy(strategy: JsonRecord, p: FieldPath): StatusCause[] {
  const rollingUpdate = record(strategy.rollingUpdate);
  switch (strategy.type) {
    case 'OnDelete':
      return [];
    case 'RollingUpdate': {
      if (!rollingUpdate) return [required(p.child('rollingUpdate'))];
      const rp = p.child('rollingUpdate');
      const causes = [
        ...validatePositiveIntOrPercent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')),
        ...validatePositiveIntOrPercent(rollingUpdate.maxSurge, rp.child('maxSurge')),
        ...notMoreThan100Percent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')),
        ...notMoreThan100Percent(rollingUpdate.maxSurge, rp.child('maxSurge')),
      ];
      const hasUnavailable = intOrPercentValue(rollingUpdate.maxUnavailable) !== 0;
      const hasSurge = intOrPercentValue(rollingUpdate.maxSurge) !== 0;
      if (hasUnavailable && hasSurge)
        causes.push(
          rawInvalid(
            rp.child('maxSurge'),
            goIntOrString(rollingUpdate.maxSurge),
            'may not be set when maxUnavailable is non-zero',
          ),
        );
      if (!hasUnavailable && !hasSurge)
        causes.push(required(rp.child('maxUnavailable'), 'cannot be 0 when maxSurge is 0'));
      return causes;
    }
    default:
      return [
        {
          reason: 'FieldValueNotSupported',
          field: p.toString(),
          message: `Unsupported value: apps.DaemonSetUpdateStrategy{Type:${goString(strategy.type)}, RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"`,
        },
      ];
  }
}

const daemonSetColumns: TableColumn[] = [
  nameColumn,
  column(
    'Desired',
    'The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).',
    (o) => num(status(o).desiredNumberScheduled),
    0,
    'integer',
  ),
  column(
    'Current',
    'The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.',
    (o) => num(status(o).currentNumberScheduled),
    0,
    'integer',
  ),
  column(
    'Ready',
    'numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.',
    (o) => num(status(o).numberReady),
    0,
    'integer',
  ),
  column(
    'Up-to-date',
    'The total number of nodes that are running updated daemon pod',
    (o) => num(status(o).updatedNumberScheduled),
    0,
    'integer',
  ),
  column(
    'Available',
    'The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)',
    (o) => num(status(o).numberAvailable),
    0,
    'integer',
  ),
  column('Node Selector', 'NodeSelector is a selector which must be true for the pod to fit on a node.', (o) => {
    const selector = rec(rec(rec(spec(o).template).spec).nodeSelector);
    const text = Object.keys(selector)
      .sort()
      .map((k) => `${k}=${cellText(selector[k])}`)
      .join(',');
    return text === '' ? '<none>' : text;
  }),
  ageColumn,
  ...workloadWideColumns,
  column(
    'Selector',
    'A label query over pods that are managed by the daemon set.',
    (o) => labelSelectorString(spec(o).selector),
    1,
  ),
];

export const DAEMON_SETS: ResourceType = {
  ...APPS_FIELDS,
  resource: 'daemonsets',
  kind: 'DaemonSet',
  listKind: 'DaemonSetList',
  shortNames: ['ds'],
  singular: 'daemonset',
  verbs: [...ALL_VERBS],
  categories: ['all'],
  validate: (o, old) => validateDaemonSet(o, old),
  defaults: defaultDaemonSet,
  prepareForCreate(o) {
    o.status = {};
    o.metadata.generation = 1;
  },
  prepareForUpdate: bumpGeneration(false, defaultDaemonSet),
  columns: daemonSetColumns,
};
