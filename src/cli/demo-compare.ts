// `dev --demo N --demo-compare`: the same demo against an instant in-memory provisioner (no filesystem work),
// in the same process and cluster right after the hostpath run, so the share of the filesystem in the time to
// Bound can be read off. The in-memory claims are deleted afterwards (their PVs point nowhere).
import type { Registry } from 'prom-client';
import { ProvisionController } from '../controller/provision-controller.ts';
import type { ProvisionOptions, ProvisionResult, Provisioner } from '../controller/provisioner.ts';
import type { KubeClient } from '../runtime/client.ts';
import { AlreadyExistsError } from '../runtime/status-errors.ts';
import type { Logger } from '../types/logger.ts';
import { persistentVolumeClaims, persistentVolumes, storageClasses } from '../runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../types/annotations.ts';
import { DEMO_LABEL, runDemo, type DemoOptions, type DemoResult } from './demo.ts';

export const MEMORY_PROVISIONER_NAME = 'kube-provisioner.io/demo-memory';
export const MEMORY_CLASS = 'demo-memory';

/** Provisions nothing: returns a PV at once. The baseline of the comparison. */
export class InstantProvisioner implements Provisioner {
  async provision(o: ProvisionOptions): Promise<ProvisionResult> {
    return {
      volume: {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: o.pvName },
        spec: {
          capacity: { storage: o.claim.spec.resources?.requests?.storage ?? '1Mi' },
          accessModes: o.claim.spec.accessModes ?? ['ReadWriteOnce'],
          hostPath: { path: `/nonexistent/kube-provisioner-demo-memory/${o.pvName}` },
        },
      } as PersistentVolume,
    };
  }

  async delete(): Promise<void> {}
}

/** Runs the demo against the instant provisioner, then removes its claims and volumes. */
export async function runMemoryDemo(
  o: { client: KubeClient; registry: Registry; logger: Logger; threadiness: number } & Pick<
    DemoOptions,
    'count' | 'timeoutMs' | 'progress' | 'signal'
  >,
): Promise<DemoResult> {
  const sc: StorageClass = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: MEMORY_CLASS },
    provisioner: MEMORY_PROVISIONER_NAME,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
  };
  await o.client.create(storageClasses, sc).catch((err: unknown) => {
    if (!(err instanceof AlreadyExistsError)) throw err;
  });
  const stop = new AbortController();
  const controller = new ProvisionController(o.client, MEMORY_PROVISIONER_NAME, new InstantProvisioner(), {
    leaderElection: { mode: 'none' },
    threadiness: o.threadiness,
    logger: o.logger,
    registry: o.registry,
  });
  const running = controller.run(stop.signal);
  try {
    const result = await runDemo({ ...o, storageClassName: MEMORY_CLASS });
    await cleanUp(o.client, result.runId);
    return result;
  } finally {
    stop.abort();
    await running;
  }
}

// Deletes the run's claims and waits (bounded) for the controller to delete their volumes.
async function cleanUp(client: KubeClient, runId: string): Promise<void> {
  const claims = await client.listAll<PersistentVolumeClaim>(persistentVolumeClaims, {
    namespace: 'default',
    labelSelector: `${DEMO_LABEL}=${runId}`,
  });
  await Promise.all(
    claims.items.map((c) =>
      client.delete(persistentVolumeClaims, c.metadata.name ?? '', { namespace: 'default' }).catch(() => undefined),
    ),
  );
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const pvs = await client.listAll<PersistentVolume>(persistentVolumes);
    if (!pvs.items.some((pv) => pv.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED] === MEMORY_PROVISIONER_NAME))
      return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The comparison line printed after both summaries. */
export function formatComparison(hostpath: DemoResult, memory: DemoResult): string {
  const share = (a: number, b: number) => (a > 0 ? Math.max(0, Math.round((100 * (a - b)) / a)) : 0);
  return (
    `demo: the instant in-memory provisioner reached ${memory.claimsPerSecond.toFixed(1)} claims/s vs ${hostpath.claimsPerSecond.toFixed(1)} with directories; ` +
    `filesystem share of the time to Bound: ${share(hostpath.p50Ms, memory.p50Ms)}% at p50, ${share(hostpath.p99Ms, memory.p99Ms)}% at p99`
  );
}
