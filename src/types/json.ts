// The one test for "a JSON object": not null, not an array. Every layer that reads untyped input (options,
// configuration files, patches, request bodies) uses it.

/** A JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
