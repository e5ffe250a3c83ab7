// The `apiVersion` string of a group and version, shared by the client's resource table and the embedded cluster.

/** `apiVersion` of a group/version (`v1` for the core group, else `storage.k8s.io/v1`). */
export function apiVersionOf(r: { group: string; version: string }): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}
