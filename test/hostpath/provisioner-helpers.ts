// Shared fixtures of the hostpath provisioner tests: claims, classes, temp trees and tree snapshots.
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AccessMode, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { ProvisionOptions } from '../../src/controller/provisioner.ts';

export interface ClaimSpec {
  name?: string;
  namespace?: string;
  uid?: string;
  size?: string;
  modes?: AccessMode[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  node?: string;
  block?: boolean;
}

let counter = 0;

export function claim(s: ClaimSpec = {}): PersistentVolumeClaim {
  const uid = s.uid ?? `00000000-0000-0000-0000-${String(++counter).padStart(12, '0')}`;
  const annotations = { ...(s.annotations ?? {}), ...(s.node ? { [ANN_SELECTED_NODE]: s.node } : {}) };
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: s.name ?? `claim-${counter}`,
      namespace: s.namespace ?? 'team-a',
      uid,
      labels: s.labels,
      annotations,
    },
    spec: {
      accessModes: s.modes ?? ['ReadWriteOnce'],
      resources: { requests: { storage: s.size ?? '1Gi' } },
      ...(s.block ? { volumeMode: 'Block' as const } : {}),
    },
  };
}

export function storageClass(
  name: string,
  parameters?: Record<string, string>,
  reclaimPolicy: 'Delete' | 'Retain' = 'Delete',
): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: 'kube-provisioner.io/hostpath',
    parameters,
    reclaimPolicy,
    volumeBindingMode: 'WaitForFirstConsumer',
  };
}

export function provisionOptions(c: PersistentVolumeClaim, sc: StorageClass): ProvisionOptions {
  const node = c.metadata.annotations?.[ANN_SELECTED_NODE];
  return {
    claim: c,
    storageClass: sc,
    pvName: `pvc-${c.metadata.uid}`,
    ...(node
      ? {
          selectedNodeName: node,
          selectedNode: { metadata: { name: node, labels: { 'kubernetes.io/hostname': `host-${node}`, zone: 'z1' } } },
        }
      : {}),
  };
}

export async function tempTree(prefix: string): Promise<string> {
  return fsp.mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Every entry below `dir` (relative, sorted), to prove a tree did or did not change. */
export async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      out.push(path.relative(dir, path.join(d, e.name)));
      if (e.isDirectory()) await walk(path.join(d, e.name));
    }
  };
  await walk(dir);
  return out.sort();
}

export const signal = (): AbortSignal => new AbortController().signal;
