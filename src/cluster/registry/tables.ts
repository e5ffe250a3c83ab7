// Server-side printing: the meta.k8s.io/v1 Table answers `kubectl get` asks for, with the columns and cell
// formats of kube-apiserver 1.32 (k/k pkg/printers/internalversion/printers.go). Each kind's columns live on its
// registry entry (`columns`); a kind without them gets the generic Name / Created At table. The server always
// prints "wide": priority-1 cells are present in every row and kubectl hides them unless `-o wide`.
import type { KubeObject } from '../../types/k8s.ts';
import { DESC_AGE, nameColumn, str, type TableColumn } from './table-columns.ts';

/** The apiserver's default table convertor, for resources without a printer. */
export const DEFAULT_TABLE_COLUMNS: TableColumn[] = [
  nameColumn,
  {
    name: 'Created At',
    type: 'date',
    description: DESC_AGE,
    priority: 0,
    cell: (o) => str(o.metadata.creationTimestamp),
  },
];

/** What `includeObject` asks each row to carry. */
export type IncludeObject = 'None' | 'Object' | 'Metadata';

/**
 * Builds the meta.k8s.io/v1 Table for a list (or a single object, or one watch event). `includeObject` =
 * Metadata (kubectl's default) attaches a PartialObjectMetadata per row, which kubectl needs for `-A`,
 * `--show-labels` and `-L`.
 */
export function toTable(
  rt: { resource: string; kind: string; group: string; version: string; columns?: TableColumn[] },
  objects: KubeObject[],
  listMeta: { resourceVersion?: string; continue?: string },
  includeObject: IncludeObject,
  now: number = Date.now(),
): object {
  const columns = rt.columns ?? DEFAULT_TABLE_COLUMNS;
  const metadata: Record<string, string> = {};
  if (listMeta.resourceVersion !== undefined) metadata.resourceVersion = listMeta.resourceVersion;
  if (listMeta.continue) metadata.continue = listMeta.continue;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata,
    columnDefinitions: columns.map((c) => {
      const def: Record<string, unknown> = {
        name: c.name,
        type: c.type,
        format: c.format ?? '',
        description: c.description,
        priority: c.priority,
      };
      return def;
    }),
    rows: objects.map((obj) => ({
      cells: columns.map((c) => c.cell(obj, now)),
      object: rowObject(rt, obj, includeObject),
    })),
  };
}

function rowObject(
  rt: { kind: string; group: string; version: string },
  obj: KubeObject,
  includeObject: IncludeObject,
): unknown {
  if (includeObject === 'None') return null;
  if (includeObject === 'Object') {
    return {
      ...obj,
      apiVersion: obj.apiVersion ?? (rt.group ? `${rt.group}/${rt.version}` : rt.version),
      kind: obj.kind ?? rt.kind,
    };
  }
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata };
}
