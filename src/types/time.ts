// Kubernetes time formats, shared by the lock records, the event recorder and the embedded cluster.

/** metav1.Time: RFC 3339 in UTC with whole seconds (`2006-01-02T15:04:05Z`). */
export function formatTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits (`2006-01-02T15:04:05.000000Z`). */
export function formatMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}
