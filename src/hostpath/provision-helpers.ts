// Small pure helpers of provision(): the free-space ordering and wording of base paths (the node-affinity value
// and the error mapping are in provision-rules.ts).
import type { ProvisionOptions } from '../controller/provisioner.ts';
import { formatBytes } from '../types/quantity.ts';

/** Orders free space, undefined (unlimited) last. */
export function cmpFree(a: bigint | undefined, b: bigint | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The claim's storage request, for messages. */
export const requestOf = (o: ProvisionOptions) => o.claim.spec.resources?.requests?.storage ?? '?';
/** Free bytes, for messages. */
export const freeText = (f: bigint | undefined) => (f === undefined ? 'unlimited' : f <= 0n ? '0' : formatBytes(f));
