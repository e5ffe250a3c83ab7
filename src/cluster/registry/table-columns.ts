// Building blocks of the kubectl columns every registry entry carries (and of tables.ts, which prints them): the
// column type, the Name and Age columns, kubectl's age formatting, small readers for untyped objects, and the
// cells PersistentVolume and PersistentVolumeClaim share (access modes, phase, storage class).
import type { KubeObject } from '../../types/k8s.ts';
import { ANN_BETA_STORAGE_CLASS } from '../../types/annotations.ts';

/** One column of a resource's Table: its definition as served, and how to compute its cell. */
export interface TableColumn {
  name: string;
  type: string;
  format?: string;
  description: string;
  /** 0 = always shown, 1 = only with `kubectl get -o wide`. */
  priority: number;
  cell(obj: KubeObject, now: number): unknown;
}

/** Formats a duration like apimachinery's duration.HumanDuration (`5s`, `3m2s`, `47m`, `5h3m`, `3d2h`, `2y10d`). */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  if (hours < 24 * 365 * 8) {
    const d = days % 365;
    return d === 0 ? `${Math.trunc(days / 365)}y` : `${Math.trunc(days / 365)}y${d}d`;
  }
  return `${Math.trunc(days / 365)}y`;
}

/** `translateTimestampSince`: age of a timestamp, `<unknown>` when unset or unparsable. */
export function age(timestamp: unknown, now: number): string {
  if (typeof timestamp !== 'string' || timestamp === '') return '<unknown>';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now - t);
}

export function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
export function str(v: unknown, fallback = ''): string {
  return typeof v === 'string' ? v : fallback;
}
export function nonEmpty(v: unknown, fallback: string): string {
  return typeof v === 'string' && v !== '' ? v : fallback;
}
export function spec(obj: KubeObject): Record<string, unknown> {
  return rec(obj.spec);
}
export function status(obj: KubeObject): Record<string, unknown> {
  return rec(obj.status);
}
export function countKeys(...maps: unknown[]): number {
  return maps.reduce<number>((n, m) => n + Object.keys(rec(m)).length, 0);
}

export const DESC_NAME =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.';
export const DESC_AGE =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.';

export const nameColumn: TableColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: DESC_NAME,
  priority: 0,
  cell: (o) => str(o.metadata.name),
};
export const ageColumn: TableColumn = {
  name: 'Age',
  type: 'string',
  description: DESC_AGE,
  priority: 0,
  cell: (o, now) => age(o.metadata.creationTimestamp, now),
};
export function column(
  name: string,
  description: string,
  cell: (o: KubeObject, now: number) => unknown,
  priority = 0,
  type = 'string',
): TableColumn {
  return { name, type, description, priority, cell };
}

const ACCESS_MODE_ABBREVIATIONS: Array<[string, string]> = [
  ['ReadWriteOnce', 'RWO'],
  ['ReadOnlyMany', 'ROX'],
  ['ReadWriteMany', 'RWX'],
  ['ReadWriteOncePod', 'RWOP'],
];

/** `GetAccessModesAsString`: abbreviations in fixed order, deduplicated (`RWO,RWX`). */
export function accessModesString(modes: unknown): string {
  const set = new Set(Array.isArray(modes) ? modes : []);
  return ACCESS_MODE_ABBREVIATIONS.filter(([mode]) => set.has(mode))
    .map(([, abbr]) => abbr)
    .join(',');
}

/** The phase a printer shows: `Terminating` wins over status.phase once deletion started. */
export function phaseOrTerminating(o: KubeObject): string {
  return o.metadata.deletionTimestamp ? 'Terminating' : str(status(o).phase);
}

/** Class of a PV or PVC: the legacy beta annotation wins over spec.storageClassName (GetPersistentVolume[Claim]Class). */
export function storageClassOf(o: KubeObject): string {
  const beta = o.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (beta !== undefined) return beta;
  return str(spec(o).storageClassName);
}
