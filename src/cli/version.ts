// The package's version, read once from package.json (dist/cli/ and src/cli/ are both two levels below it), and
// the user agent the command's clients send, so audit logs name the version that actually runs.
import { readFileSync } from 'node:fs';

export const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** `kube-provisioner/<version> (<what>)`: the user agent of one of the command's clients. */
export function userAgent(what: string): string {
  return `kube-provisioner/${VERSION} (${what})`;
}
