// Events: core/v1 Event and events.k8s.io/v1 Event (a view over the same storage, events-view.ts), with their
// registry entries, field selectors, validation (k/k pkg/apis/core/validation ValidateEvent) and kubectl columns.
import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import { FieldPath, invalid, invalidEach, record, required, str } from '../common/field-errors.ts';
import { fieldString, readPath } from '../common/meta.ts';
import { isDNS1123Subdomain, isQualifiedName } from '../common/name-rules.ts';
import { eventFromStorage, eventToStorage } from './events-view.ts';
import { ALL_VERBS, path } from './registry-fields.ts';
import type { FieldGetter } from '../common/selectors.ts';
import type { ResourceType } from './resource-type.ts';
import { age, column, nameColumn, nonEmpty, rec, str as cellText, type TableColumn } from './table-columns.ts';

const REASON_LIMIT = 128;
const ACTION_LIMIT = 128;
const REPORTING_INSTANCE_LIMIT = 128;
const NOTE_LIMIT = 1024;

/**
 * core/v1 Event (legacyValidateEvent): involvedObject.namespace agrees with the event's namespace; events with an
 * eventTime (new-style, as events.k8s.io/v1 writes them) also need reportingComponent, reportingInstance, action,
 * reason, with kube's length limits.
 */
export function validateEvent(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const involved = record(obj.involvedObject);
  if (!involved) return [required(FieldPath.root('involvedObject'))];
  const ns = obj.metadata?.namespace ?? '';
  const involvedNs = str(involved.namespace) ?? '';
  const nsMismatch = () =>
    invalid(FieldPath.root('involvedObject', 'namespace'), involvedNs, 'does not match event.namespace');
  const eventTime = obj.eventTime;
  if (eventTime === undefined || eventTime === null || eventTime === '') {
    if (involvedNs === '' ? ns !== '' && ns !== 'default' : ns !== involvedNs) causes.push(nsMismatch());
  } else {
    if (involvedNs === '' && ns !== 'default' && ns !== 'kube-system') causes.push(nsMismatch());
    const controller = str(obj.reportingComponent) ?? '';
    if (controller === '') causes.push(required(FieldPath.root('reportingComponent')));
    else causes.push(...invalidEach(FieldPath.root('reportingComponent'), controller, isQualifiedName(controller)));
    const instance = str(obj.reportingInstance) ?? '';
    if (instance === '') causes.push(required(FieldPath.root('reportingInstance')));
    if (instance.length > REPORTING_INSTANCE_LIMIT)
      causes.push(
        invalid(FieldPath.root('reportingInstance'), '', `can have at most ${REPORTING_INSTANCE_LIMIT} characters`),
      );
    const action = str(obj.action) ?? '';
    if (action === '') causes.push(required(FieldPath.root('action')));
    if (action.length > ACTION_LIMIT)
      causes.push(invalid(FieldPath.root('action'), '', `can have at most ${ACTION_LIMIT} characters`));
    const reason = str(obj.reason) ?? '';
    if (reason === '') causes.push(required(FieldPath.root('reason')));
    if (reason.length > REASON_LIMIT)
      causes.push(invalid(FieldPath.root('reason'), '', `can have at most ${REASON_LIMIT} characters`));
    if ((str(obj.message) ?? '').length > NOTE_LIMIT)
      causes.push(invalid(FieldPath.root('message'), '', `can have at most ${NOTE_LIMIT} characters`));
  }
  causes.push(...invalidEach(FieldPath.root('namespace'), ns, isDNS1123Subdomain(ns)));
  return causes;
}

/** Normalises core/v1 and events.k8s.io/v1 events (same storage, different field names). */
function eventFields(o: KubeObject) {
  const involved = rec(o.involvedObject ?? o.regarding);
  const source = rec(o.source);
  const series = o.series === undefined || o.series === null ? undefined : rec(o.series);
  const first = nonEmpty(o.firstTimestamp ?? o.deprecatedFirstTimestamp, '') || cellText(o.eventTime);
  const last = nonEmpty(o.lastTimestamp ?? o.deprecatedLastTimestamp, '') || first;
  let count = typeof (o.count ?? o.deprecatedCount) === 'number' ? Number(o.count ?? o.deprecatedCount) : 0;
  if (series) count = typeof series.count === 'number' ? series.count : 0;
  else if (count === 0) count = 1;
  return {
    involved,
    first,
    count,
    last: series ? cellText(series.lastObservedTime) : last,
    component: nonEmpty(source.component, '') || cellText(o.reportingComponent ?? o.reportingController),
    host: nonEmpty(source.host, '') || cellText(o.reportingInstance),
    message: cellText(o.message ?? o.note).trim(),
  };
}

const eventColumns: TableColumn[] = [
  column('Last Seen', 'The time at which the most recent occurrence of this event was recorded.', (o, now) =>
    age(eventFields(o).last, now),
  ),
  column('Type', 'Type of this event (Normal, Warning), new types could be added in the future', (o) =>
    cellText(o.type),
  ),
  column(
    'Reason',
    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    (o) => cellText(o.reason),
  ),
  column('Object', 'The object that this event is about.', (o) => {
    const { involved } = eventFields(o);
    const kind = cellText(involved.kind).toLowerCase();
    return cellText(involved.name) !== '' ? `${kind}/${cellText(involved.name)}` : kind;
  }),
  column(
    'Subobject',
    'If the reference is to an object component rather than an entire object, a string such as "spec.containers{name}".',
    (o) => cellText(eventFields(o).involved.fieldPath),
    1,
  ),
  column(
    'Source',
    'The component reporting this event. Should be a short machine understandable string.',
    (o) => {
      const f = eventFields(o);
      return f.host === '' ? f.component : `${f.component}, ${f.host}`;
    },
    1,
  ),
  column('Message', 'A human-readable description of the status of this operation.', (o) => eventFields(o).message),
  column(
    'First Seen',
    'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)',
    (o, now) => age(eventFields(o).first, now),
    1,
  ),
  column('Count', 'The number of times this event has occurred.', (o) => eventFields(o).count, 1),
  { ...nameColumn, priority: 1 },
];

const eventFieldSelectors: Record<string, FieldGetter> = {
  'involvedObject.kind': path('involvedObject.kind'),
  'involvedObject.namespace': path('involvedObject.namespace'),
  'involvedObject.name': path('involvedObject.name'),
  'involvedObject.uid': path('involvedObject.uid'),
  'involvedObject.apiVersion': path('involvedObject.apiVersion'),
  'involvedObject.resourceVersion': path('involvedObject.resourceVersion'),
  'involvedObject.fieldPath': path('involvedObject.fieldPath'),
  reason: path('reason'),
  reportingComponent: path('reportingComponent'),
  source: (o) => fieldString(readPath(o, 'source.component')) || fieldString(o.reportingComponent),
  type: path('type'),
};

export const CORE_EVENTS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'events',
  kind: 'Event',
  listKind: 'EventList',
  namespaced: true,
  shortNames: ['ev'],
  singular: 'event',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateEvent(o, old),
  defaults(o) {
    // Go serializes these core/v1 fields even when zero: a MicroTime as null, plain strings as "".
    o.eventTime ??= null;
    o.reportingComponent ??= '';
    o.reportingInstance ??= '';
  },
  fieldSelectors: eventFieldSelectors,
  // The event strategy opts out of garbage collection: no orphan/foregroundDeletion finalizer is ever added.
  garbageCollectionPolicy: 'Unsupported',
  allowCreateOnUpdate: true,
  microTimeFields: ['eventTime', 'series.lastObservedTime'],
  columns: eventColumns,
};

export const EVENTS_V1: ResourceType = {
  ...CORE_EVENTS,
  group: 'events.k8s.io',
  view: { resource: 'events', toStorage: eventToStorage, fromStorage: eventFromStorage },
};
