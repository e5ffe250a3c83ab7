// The event-sink contract: where the controller, the leader elector and the config source send Kubernetes
// events (the runtime EventRecorder implements it; tests pass a recording fake).
import type { KubeObject } from './k8s.ts';

/** A sink for Kubernetes events about `obj`. */
export interface EventSink<T extends KubeObject = KubeObject> {
  event(obj: T, type: 'Normal' | 'Warning', reason: string, message: string): void;
}
