// StorageClass `parameters` of the hostpath provisioner: one row per parameter, in the row format of the controller's
// options (src/controller/options/option-spec.ts: name, kind and bounds, default, docs text, parse), read strictly
// into typed values by the same machinery (parseTextTable), and rendered into docs/configuration.md's table by it
// (`npm run gen:docs`). Names follow local-path (nodePath, pathPattern, nodeAffinityKey, volumeType) and nfs-subdir
// (onDelete, archiveOnDelete) so existing classes carry over; an unknown or invalid parameter is an error (the
// provisioner reports it as InfeasibleError with this message), never silently ignored.
import { parseTextTable } from '../../controller/options/option-parse.ts';
import {
  boolean,
  choice,
  integer,
  OptionValueError,
  outOfBounds,
  parsed,
  text,
} from '../../controller/options/option-spec.ts';
import { compilePathPattern, PathTemplateError, type CompiledPathPattern } from '../paths/path-template.ts';
import { checkBasePath, UnsafePathError } from '../paths/path-safety.ts';

/** What happens to the directory when its Delete-policy PV is released. */
export type OnDeletePolicy = 'delete' | 'retain' | 'archive';
/** The PV source type: `local` (fsGroup and kubelet stats work) or `hostPath` (type Directory). */
export type VolumeType = 'local' | 'hostPath';

/** The StorageClass `parameters` the hostpath provisioner understands, validated and typed. */
export interface ClassParameters {
  /** Use only this base path (it must be configured for the node or the shared path). */
  nodePath?: string;
  /** The directory layout below the base path; undefined = `<pv>_<namespace>_<claim>`. */
  pathPattern?: CompiledPathPattern;
  /**
   * From `onDelete`, else `archiveOnDelete` (false = delete, true = archive); undefined = neither is set, and
   * the provisioner applies the path kind's default (shared path: archive, node path: delete).
   */
  onDelete?: OnDeletePolicy;
  /** Permission bits of the volume directory. Default 0o777 (hostPath ignores fsGroup: see docs). */
  mode: number;
  uid?: number;
  gid?: number;
  /** Undefined = the default for the path kind: `local` for node paths, `hostPath` for the shared path. */
  volumeType?: VolumeType;
  /** Node label used in the PV's node affinity. Default `kubernetes.io/hostname`. */
  nodeAffinityKey: string;
}

/** An invalid StorageClass parameter; `parameter` names it. */
export class StorageClassParameterError extends Error {
  override name = 'StorageClassParameterError';
  constructor(
    readonly parameter: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`StorageClass parameter ${JSON.stringify(parameter)}: ${message}`, options);
  }
}

/** Permission bits of a new volume directory when the class sets none (0777, as local-path does). */
export const DEFAULT_VOLUME_MODE_BITS = 0o777;
const MAX_ID = 4294967294; // (uid_t)-1 means "unchanged" to chown, so it is not a valid id
const ID_BOUNDS = { min: 0, max: MAX_ID };

const DOC_PATH_PATTERN =
  'the directory below the base path. Variables: nfs-subdir\'s `${.PVC.namespace}`, `${.PVC.name}`, `${.PVC.labels.KEY}`, `${.PVC.annotations.KEY}`, `${.PV.name}`, or local-path\'s `{{ .PVC.Namespace }}`, `{{ .PVC.Name }}`, `{{ .PVC.Labels.KEY }}`, `{{ .PVC.Annotations.KEY }}`, `{{ .PV.Name }}`, `{{ .PVName }}`, `{{ index .PVC.Labels "KEY" }}`. `/` makes subdirectories. The PV name is optional: without it a claim gets a stable directory (see "Stable names, delete identity, adopted volumes" below). A missing or empty value is an error (never `<no value>` or an empty segment); a value taken from the claim may not hold a glob or shell metacharacter, whitespace or a control character. Trailing `/`s are dropped, as `filepath.Join` drops them (local-path\'s `{{ .PVC.Namespace }}/{{ .PVC.Name }}/`). The result is checked: no absolute path, no `..`, `.` or empty segment, no control characters, segments ≤ 255 bytes, not a base path, not inside or above another live volume (however that volume\'s PV spells its directory), no symlinked parent. There is no `allowUnsafePathPattern`.';

/** A parameter's value refused by its row (the table reader names the parameter). */
function refuse(message: string, cause?: unknown): never {
  throw new OptionValueError('', message, cause === undefined ? undefined : { cause });
}

/** Every parameter, in the order they are read (onDelete after archiveOnDelete: nfs-subdir's onDelete wins). */
export const CLASS_PARAMETERS = {
  nodePath: text({
    docDefault:
      'any configured path: the one with the most free space (unlimited first), then the least allocated, then configuration order',
    doc: 'use only this base path; it must be configured for the node (or be the shared path)',
    parse: (v) => {
      try {
        checkBasePath(v);
      } catch (e) {
        if (e instanceof UnsafePathError)
          refuse(`${JSON.stringify(v)} must be an absolute, normalised path other than /`, e);
        throw e;
      }
      return v;
    },
  }),
  pathPattern: parsed<CompiledPathPattern>({
    docDefault:
      "`<pv>_<namespace>_<claim>` (local-path's); on a shared path published as NFS (`nfs`, `NFS_SERVER`) `<namespace>-<claim>-<pv>` (nfs-subdir's)",
    doc: DOC_PATH_PATTERN,
    parse: (v) => {
      if (v.length > 1024) refuse('is longer than 1024 characters');
      try {
        return compilePathPattern(v);
      } catch (e) {
        if (e instanceof PathTemplateError) refuse(e.message, e);
        throw e;
      }
    },
  }),
  archiveOnDelete: boolean({
    docDefault: '—',
    doc: "nfs-subdir's form, parsed exactly like Go's `strconv.ParseBool`: `1`, `t`, `T`, `TRUE`, `true`, `True` = `onDelete: archive`; `0`, `f`, `F`, `FALSE`, `false`, `False` = `delete`; anything else is a Warning event on the claim naming the parameter. `onDelete` wins.",
    parse: (v) =>
      parseGoBool(v) ??
      refuse(`${JSON.stringify(v)} is not a boolean (one of ${GO_TRUE.join(', ')}, ${GO_FALSE.join(', ')})`),
  }),
  // No row default: it depends on the path kind, which only the provisioner knows (onDeleteFor below).
  onDelete: choice<OnDeletePolicy>(['delete', 'retain', 'archive'], {
    docDefault: '**`archive` on a shared path, `delete` on node paths** (when `archiveOnDelete` is not set either)',
    doc: 'when a Delete-policy PV is released: `delete` the directory, `retain` it, or `archive` it: renamed `archived-<directory name>` in its parent directory, as nfs-subdir names archives; only when that name is taken is a suffix added (`-<UTC time>`, then `-<UTC time>-<random>`), so an archive is never overwritten',
  }),
  mode: integer({
    min: 0,
    max: 0o7777,
    default: DEFAULT_VOLUME_MODE_BITS,
    docDefault: '`0777`',
    doc: 'permission bits of the volume directory, octal (`"0770"`, `"2775"`); applied exactly with chmod after mkdir (the umask does not apply); parent directories a pattern creates get `0755`',
    parse: (v) => {
      if (!/^0?[0-7]{3,4}$/.test(v))
        refuse(`${JSON.stringify(v)} must be an octal permission string such as "0770" or "2775"`);
      return parseInt(v, 8);
    },
  }),
  uid: integer({
    ...ID_BOUNDS,
    docDefault: "unchanged (the provisioner's)",
    doc: 'numeric owner of the volume directory',
    parse: parseId,
  }),
  gid: integer({
    ...ID_BOUNDS,
    docDefault: "unchanged (the provisioner's)",
    doc: 'numeric group of the volume directory',
    parse: parseId,
  }),
  volumeType: choice<VolumeType>(['local', 'hostPath'], {
    docDefault: '`local` for node paths, `hostPath` for the shared path (`nfs` when it is an NFS export)',
    doc: 'the PV source: `local` (fsGroup and kubelet volume stats work) or `hostPath` (type `Directory`, never `DirectoryOrCreate`)',
    // Case-insensitive, as local-path reads it.
    parse: (value) => {
      const v = value.toLowerCase();
      if (v !== 'local' && v !== 'hostpath') refuse(`${JSON.stringify(value)} is not one of local, hostPath`);
      return v === 'local' ? 'local' : 'hostPath';
    },
  }),
  nodeAffinityKey: text({
    default: 'kubernetes.io/hostname',
    docDefault: '`kubernetes.io/hostname`',
    doc: "node label used in the PV's node affinity (node paths); its value is read from the selected Node (one GET through the API, or the `--node-cache`)",
    parse: (v) => {
      if (!/^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(v))
        refuse(`${JSON.stringify(v)} is not a valid label key`);
      return v;
    },
  }),
};

/**
 * The onDelete policy of a volume of this class: the class's (onDelete, else archiveOnDelete), else the path
 * kind's default, which is what the anchor of that shape does: nfs-subdir (a shared path) archives, local-path
 * (node paths) deletes. A table row cannot hold that default, as it depends on where the volume is.
 */
export function onDeleteFor(params: Pick<ClassParameters, 'onDelete'>, shared: boolean): OnDeletePolicy {
  return params.onDelete ?? (shared ? 'archive' : 'delete');
}

/** Parameters refused on purpose, with why (another provisioner has them). */
const REFUSED: Readonly<Record<string, string>> = {
  allowUnsafePathPattern:
    'is not supported: every pathPattern result is checked (absolute paths and ".." are never allowed)',
};

/** Parses a class's parameters. Throws StorageClassParameterError for anything unknown or invalid. */
export function parseClassParameters(params: Record<string, string> | undefined): ClassParameters {
  let read: Record<string, unknown>;
  try {
    read = parseTextTable(CLASS_PARAMETERS, params, { noun: 'parameter', refused: REFUSED });
  } catch (err) {
    if (err instanceof OptionValueError)
      throw new StorageClassParameterError(
        err.option,
        err.message,
        err.cause === undefined ? undefined : { cause: err.cause },
      );
    throw err;
  }
  // Two names set one field: nfs-subdir's archiveOnDelete sets onDelete, and onDelete (read after it) wins.
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(read)) {
    if (key === 'archiveOnDelete') out.onDelete = value ? 'archive' : 'delete';
    else out[key] = value;
  }
  return out as unknown as ClassParameters;
}

// Exactly the spellings Go's strconv.ParseBool accepts, which is how nfs-subdir reads archiveOnDelete.
const GO_TRUE = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const GO_FALSE = ['0', 'f', 'F', 'FALSE', 'false', 'False'];

/** Go's strconv.ParseBool: true, false, or undefined for anything else (no trimming, no other case mixes). */
export function parseGoBool(value: string): boolean | undefined {
  if (GO_TRUE.includes(value)) return true;
  if (GO_FALSE.includes(value)) return false;
  return undefined;
}

function parseId(value: string): number {
  if (!/^\d{1,10}$/.test(value) || outOfBounds({ type: 'integer', ...ID_BOUNDS }, Number(value)))
    refuse(`${JSON.stringify(value)} must be a numeric id between ${ID_BOUNDS.min} and ${ID_BOUNDS.max}`);
  return Number(value);
}
