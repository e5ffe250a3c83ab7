// Shared fixtures of the reliability tests: filesystem snapshots that prove a tree did not change (names,
// types, modes, mtimes), an inventory of the volume directories below a root, object builders and a
// polling wait (timeouts only, never timing assertions).
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { ApiError } from '../../src/runtime/status-errors.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { waitFor as poll, type Probe } from '../support/wait.ts';

/** lstat of every entry below `dir` (and `dir` itself as "."): relative path -> "type mode mtime size". */
export async function treeSnapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const describe = async (p: string, rel: string) => {
    const st = await fsp.lstat(p);
    const type = st.isSymbolicLink()
      ? `link->${await fsp.readlink(p)}`
      : st.isDirectory()
        ? 'dir'
        : st.isFile()
          ? 'file'
          : 'other';
    out.set(rel, `${type} ${(st.mode & 0o7777).toString(8)} ${st.mtimeMs} ${st.isDirectory() ? '' : st.size}`);
    if (st.isDirectory()) {
      for (const name of (await fsp.readdir(p)).sort())
        await describe(path.join(p, name), rel === '.' ? name : `${rel}/${name}`);
    }
  };
  await describe(dir, '.');
  return out;
}

/** Differences between two snapshots, as readable lines (empty when equal). */
export function diffSnapshots(before: Map<string, string>, after: Map<string, string>): string[] {
  const lines: string[] = [];
  for (const [k, v] of before) {
    if (!after.has(k)) lines.push(`removed ${k} (${v})`);
    else if (after.get(k) !== v) lines.push(`changed ${k}: ${v} -> ${after.get(k)}`);
  }
  for (const [k, v] of after) if (!before.has(k)) lines.push(`created ${k} (${v})`);
  return lines;
}

/** Every directory below `root` (absolute paths), skipping the provisioner's reserved `.kube-provisioner`. */
export async function directoriesBelow(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      if (d === root && e.name === '.kube-provisioner') continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        out.push(p);
        await walk(p);
      }
    }
  };
  await walk(root).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
  return out.sort();
}

/** Names of the volume records in `<root>/.kube-provisioner/volumes` (without `.json`). */
export async function volumeRecords(root: string): Promise<string[]> {
  const dir = path.join(root, '.kube-provisioner', 'volumes');
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  return names
    .filter((n) => n.endsWith('.json'))
    .map((n) => n.slice(0, -5))
    .sort();
}

/** The directory a PV points at. */
export function volumePath(pv: PersistentVolume): string | undefined {
  return pv.spec.hostPath?.path ?? pv.spec.local?.path;
}

/** The directory of every PV plus its ancestors below `root`: what may legitimately exist there. */
export function expectedDirectories(root: string, volumes: PersistentVolume[]): Set<string> {
  const out = new Set<string>();
  for (const pv of volumes) {
    let p = volumePath(pv);
    while (p && p.startsWith(`${root}/`)) {
      out.add(p);
      p = path.dirname(p);
    }
  }
  return out;
}

export function storageClass(name: string, provisioner: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    ...extra,
  };
}

export function claim(
  name: string,
  namespace: string,
  className: string | undefined,
  extra: {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    spec?: Partial<PersistentVolumeClaim['spec']>;
  } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace,
      ...(extra.labels ? { labels: extra.labels } : {}),
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Mi' } },
      ...(className !== undefined ? { storageClassName: className } : {}),
      ...(extra.spec ?? {}),
    },
  };
}

/** Events whose involved object is `name`, recorded by a component starting with `component` (any when omitted). */
export function eventsOf(events: CoreEvent[], name: string, component?: string): CoreEvent[] {
  return events.filter(
    (e) =>
      e.involvedObject.name === name &&
      (component === undefined || (e.reportingComponent ?? e.source?.component ?? '').startsWith(component)),
  );
}

/** Polls `fn` until it returns a truthy value (default timeout 30,000 ms here). */
export const waitFor = <T>(what: string, fn: Probe<T>, timeoutMs = 30_000): Promise<T> => poll(what, fn, timeoutMs);

/** Runs `fn` and returns the ApiError it threw (fails the test when it did not throw one). */
export async function apiErrorOf(
  fn: () => Promise<unknown>,
  isApiError: (e: unknown) => e is ApiError,
): Promise<ApiError> {
  try {
    await fn();
  } catch (e) {
    if (isApiError(e)) return e;
    throw e;
  }
  throw new Error('expected the API to refuse the request, but it was accepted');
}
