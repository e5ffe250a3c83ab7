// Rules of the hostpath provisioner that need no provisioner state: which node label the PV's affinity names
// (looked up through the API when the controller has no node cache), the refusal of another node's claim in
// deployment mode, the error mapping of configuration and tenant input, and a logged script run.
import type { PersistentVolume, Node } from '../types/k8s.ts';
import { LABEL_HOSTNAME } from '../types/annotations.ts';
import { parseQuantity, isQuantity } from '../types/quantity.ts';
import { InfeasibleError, ProvisioningError, type ProvisionOptions } from '../controller/provisioner.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { StorageClassParameterError } from './class-parameters.ts';
import type { VolumeScripts } from './config.ts';
import { PathTemplateError } from './path-template.ts';
import { UnsafePathError } from './path-safety.ts';
import { runVolumeScript, VolumeScriptError, type ScriptName } from './scripts.ts';
import { VolumeTypeAnnotationError } from './volume-source.ts';
import { hostFsOf, type HostFs } from './host-fs.ts';

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

/**
 * A deployment-mode instance reaches only its own node's disks: a claim of another node is ignored (that node's
 * instance serves it) or refused with how to fix it.
 */
export function otherNodeRefusal(
  node: string,
  ownNode: string | undefined,
  policy: 'refuse' | 'ignore' | undefined,
): { ok: false; kind: 'ignored' | 'infeasible'; message: string } {
  if (policy === 'ignore')
    return {
      ok: false,
      kind: 'ignored',
      message: `claim is scheduled to node ${node}; node-local volumes are created by that node's instance`,
    };
  const here = ownNode ? `runs on node ${ownNode}` : 'does not know its node (--node-name)';
  return {
    ok: false,
    kind: 'infeasible',
    message:
      `claim is scheduled to node ${node}, but this deployment-mode instance ${here} and cannot create a directory on another node's disk. ` +
      'Fix: run the node-local DaemonSet (deploy/node-local) for this provisioner name and start the deployment with --other-node-claims=ignore, ' +
      'or use a class on a shared path (sharedFileSystemPath)',
  };
}

/** Runs a configured script (none configured: nothing), logging its output on failure. */
export async function runLoggedScript(r: {
  name: ScriptName;
  scripts: VolumeScripts;
  dir: string;
  bytes: bigint;
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
}): Promise<void> {
  const script = r.scripts[r.name];
  if (script === undefined) return;
  const log = r.logger.child({ path: r.dir, script: r.name });
  try {
    const { output } = await runVolumeScript({
      script,
      name: r.name,
      volumeDir: r.dir,
      sizeBytes: r.bytes,
      timeoutMs: r.scripts.timeoutMs,
      signal: r.signal,
      clock: r.clock,
    });
    if (output.trim()) log.debug({ output }, `${r.name} script output`);
  } catch (e) {
    if (e instanceof VolumeScriptError) log.warn({ output: e.output, ...e.outcome }, `${r.name} script failed`);
    throw e;
  }
}

/** The script is handed a path, and `sh` follows symlinks: run it only when no component of that path is one. */
export async function isRealDirectory(p: string, o?: { fs?: HostFs }): Promise<boolean> {
  const fs = hostFsOf(o);
  const st = await fs.lstat(p).catch(() => undefined);
  return st?.isDirectory() === true && (await fs.realpath(p).catch(() => undefined)) === p;
}

/** The PV's capacity in bytes (0 when it has none). */
export function volumeBytes(pv: PersistentVolume): bigint {
  const s = pv.spec.capacity?.storage;
  return isQuantity(s) ? parseQuantity(s) : 0n;
}

/** Configuration and tenant-input errors can never succeed as they stand: InfeasibleError, with the cause. */
export function infeasibleOn<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (
      e instanceof StorageClassParameterError ||
      e instanceof PathTemplateError ||
      e instanceof UnsafePathError ||
      e instanceof VolumeTypeAnnotationError
    ) {
      throw new InfeasibleError(e.message, { cause: e });
    }
    throw e;
  }
}
