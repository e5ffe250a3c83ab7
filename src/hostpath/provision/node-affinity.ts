// The value of a node-local PV's node affinity (the class's nodeAffinityKey): the selected node's label, looked up
// through the API when the controller did not hand the node over. The pure part, for a node at hand, is
// claim-check.ts's; this is the lookup provision() does after it.
import type { Node } from '../../types/k8s.ts';
import { LABEL_HOSTNAME } from '../../types/annotations.ts';
import { InfeasibleError, ProvisioningError, type ProvisionOptions } from '../../controller/provisioner.ts';

/**
 * The value of the PV's node affinity for `key`: the selected node's label (from the controller's node, else
 * one GET through `getNode`); the node name for the hostname key when the label is missing. A missing node is
 * a Reschedule (the scheduler picks again); a node without the label is infeasible as the class stands.
 */
export async function nodeAffinityValue(
  o: ProvisionOptions,
  key: string,
  node: string,
  getNode: ((name: string, signal: AbortSignal) => Promise<Node | undefined>) | undefined,
  signal: AbortSignal,
): Promise<string> {
  if (key === LABEL_HOSTNAME && !o.selectedNode) return node;
  const nodeObject = o.selectedNode ?? (await getNode?.(node, signal));
  const labels = nodeObject?.metadata.labels ?? {};
  const v = Object.prototype.hasOwnProperty.call(labels, key) ? labels[key] : undefined;
  if (v) return v;
  if (key === LABEL_HOSTNAME) return node;
  if (!nodeObject) {
    if (!getNode)
      throw new InfeasibleError(
        `nodeAffinityKey ${key} needs the node's labels, and this provisioner has no way to look node ${node} up`,
      );
    throw new ProvisioningError(
      `node ${node} was not found; cannot read its label ${key} (the class's nodeAffinityKey)`,
      'Reschedule',
    );
  }
  throw new InfeasibleError(`node ${node} has no label ${key} (the class's nodeAffinityKey)`);
}
