// Size bounds of event messages. Error messages can carry tenant input (a rendered path, an annotation value)
// of any size, and an event is stored, listed and printed by every `kubectl describe`: every event the
// controller emits goes through boundedEventSink, so no single code path can forget the bound.
import type { EventSink } from '../types/events.ts';
import type { KubeObject } from '../types/k8s.ts';
import { shortenText } from '../types/text.ts';

/** The most bytes (UTF-8) of an event message we emit, like the 4 KiB kube applies to event messages. */
export const MAX_EVENT_MESSAGE_BYTES = 4096;
/** An EventSink that shortens every message to MAX_EVENT_MESSAGE_BYTES before passing it on. */
export function boundedEventSink(sink: EventSink, maxBytes: number = MAX_EVENT_MESSAGE_BYTES): EventSink {
  return {
    event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
      sink.event(obj, type, reason, shortenText(message, maxBytes));
    },
  };
}
