// Small pure helpers of provision(): the node-affinity value, turning configuration and tenant-input errors into
// InfeasibleError, and the free-space ordering and wording of base paths.
import type { ProvisionOptions } from '../controller/provisioner.ts';
import { InfeasibleError } from '../controller/provisioner.ts';
import { LABEL_HOSTNAME } from '../types/annotations.ts';
import { formatBytes } from '../types/quantity.ts';
import { StorageClassParameterError, type ClassParameters } from './class-parameters.ts';
import { PathTemplateError } from './path-template.ts';
import { UnsafePathError } from './path-safety.ts';

/** The value of the class's nodeAffinityKey label on the selected node (the node name for the hostname key). */
export function affinityValue(o: ProvisionOptions, params: ClassParameters, node: string): string {
  const labels = o.selectedNode?.metadata.labels ?? {};
  const v = Object.prototype.hasOwnProperty.call(labels, params.nodeAffinityKey) ? labels[params.nodeAffinityKey] : undefined;
  if (v) return v;
  if (params.nodeAffinityKey === LABEL_HOSTNAME) return node;
  throw new InfeasibleError(`node ${node} has no label ${params.nodeAffinityKey} (the class's nodeAffinityKey)`);
}

// Configuration and tenant-input errors can never succeed as they stand: InfeasibleError, with the cause.
export function infeasibleOn<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof StorageClassParameterError || e instanceof PathTemplateError || e instanceof UnsafePathError) {
      throw new InfeasibleError(e.message, { cause: e });
    }
    throw e;
  }
}

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
