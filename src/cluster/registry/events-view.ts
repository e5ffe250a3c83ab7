// The events.k8s.io/v1 view of core/v1 Events: both APIs share one storage (core/v1 shape), like
// kube-apiserver; these conversions map the renamed fields (k/k pkg/apis/events/v1/conversion.go).
import type { KubeObject } from '../../types/k8s.ts';

/** [events.k8s.io/v1 field, core/v1 field] pairs; fields with the same name in both are copied as they are. */
const RENAMED: Array<[string, string]> = [
  ['regarding', 'involvedObject'],
  ['note', 'message'],
  ['deprecatedSource', 'source'],
  ['deprecatedFirstTimestamp', 'firstTimestamp'],
  ['deprecatedLastTimestamp', 'lastTimestamp'],
  ['deprecatedCount', 'count'],
  ['reportingController', 'reportingComponent'],
];

function rename(obj: KubeObject, pairs: Array<[string, string]>, apiVersion: string): KubeObject {
  const out: KubeObject = { ...obj, apiVersion, kind: 'Event' };
  for (const [from, to] of pairs) {
    if (from in out) {
      const v = out[from];
      delete out[from];
      if (v !== undefined) out[to] = v;
    }
  }
  return out;
}

/** events.k8s.io/v1 Event -> stored core/v1 Event. */
export function eventToStorage(obj: KubeObject): KubeObject {
  return rename(obj, RENAMED, 'v1');
}

/** Stored core/v1 Event -> events.k8s.io/v1 Event. */
export function eventFromStorage(obj: KubeObject): KubeObject {
  const out = rename(
    obj,
    RENAMED.map(([a, b]) => [b, a]),
    'events.k8s.io/v1',
  );
  // Zero-valued core fields are not part of the v1 shape.
  if (out.deprecatedCount === 0) delete out.deprecatedCount;
  if (out.reportingController === '') delete out.reportingController;
  if (out.reportingInstance === '') delete out.reportingInstance;
  return out;
}
