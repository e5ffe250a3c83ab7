// StorageClass `parameters` of the hostpath provisioner: parsed strictly into typed values. Names follow
// local-path (nodePath, pathPattern, nodeAffinityKey, volumeType) and nfs-subdir (onDelete,
// archiveOnDelete) so existing classes carry over; an unknown or invalid parameter is an error (the
// provisioner reports it as InfeasibleError with this message), never silently ignored.
import { compilePathPattern, PathTemplateError, type CompiledPathPattern } from './path-template.ts';
import { checkBasePath, UnsafePathError } from './path-safety.ts';

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
  onDelete: OnDeletePolicy;
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
  constructor(readonly parameter: string, message: string, options?: { cause?: unknown }) {
    super(`StorageClass parameter ${JSON.stringify(parameter)}: ${message}`, options);
  }
}

/** Permission bits of a new volume directory when the class sets none (0777, as local-path does). */
export const DEFAULT_VOLUME_MODE_BITS = 0o777;
const MAX_ID = 4294967294; // (uid_t)-1 means "unchanged" to chown, so it is not a valid id
const KNOWN = ['nodePath', 'pathPattern', 'onDelete', 'archiveOnDelete', 'mode', 'uid', 'gid', 'volumeType', 'nodeAffinityKey'];

/** Parses a class's parameters. Throws StorageClassParameterError for anything unknown or invalid. */
export function parseClassParameters(params: Record<string, string> | undefined): ClassParameters {
  const p = params ?? {};
  for (const key of Object.keys(p)) {
    if (key === 'allowUnsafePathPattern') {
      throw new StorageClassParameterError(key, 'is not supported: every pathPattern result is checked (absolute paths and ".." are never allowed)');
    }
    if (!KNOWN.includes(key)) throw new StorageClassParameterError(key, `unknown parameter (known: ${KNOWN.join(', ')})`);
    if (typeof p[key] !== 'string') throw new StorageClassParameterError(key, 'must be a string');
  }
  const out: ClassParameters = { onDelete: 'delete', mode: DEFAULT_VOLUME_MODE_BITS, nodeAffinityKey: 'kubernetes.io/hostname' };

  if (p.nodePath !== undefined) {
    try {
      checkBasePath(p.nodePath);
    } catch (e) {
      if (e instanceof UnsafePathError) throw new StorageClassParameterError('nodePath', `${JSON.stringify(p.nodePath)} must be an absolute, normalised path other than /`, { cause: e });
      throw e;
    }
    out.nodePath = p.nodePath;
  }

  if (p.pathPattern !== undefined) {
    if (p.pathPattern.length > 1024) throw new StorageClassParameterError('pathPattern', 'is longer than 1024 characters');
    try {
      out.pathPattern = compilePathPattern(p.pathPattern);
    } catch (e) {
      if (e instanceof PathTemplateError) throw new StorageClassParameterError('pathPattern', e.message, { cause: e });
      throw e;
    }
    if (!out.pathPattern.referencesPvName) {
      throw new StorageClassParameterError('pathPattern',
        `${JSON.stringify(p.pathPattern)} must include the volume name (\${.PV.name} or {{ .PV.Name }}) so that two claims never share a directory`);
    }
  }

  if (p.archiveOnDelete !== undefined) {
    if (p.archiveOnDelete !== 'true' && p.archiveOnDelete !== 'false') throw new StorageClassParameterError('archiveOnDelete', 'must be "true" or "false"');
    out.onDelete = p.archiveOnDelete === 'true' ? 'archive' : 'delete';
  }
  if (p.onDelete !== undefined) {
    // nfs-subdir: onDelete wins over archiveOnDelete.
    if (p.onDelete !== 'delete' && p.onDelete !== 'retain' && p.onDelete !== 'archive') {
      throw new StorageClassParameterError('onDelete', `${JSON.stringify(p.onDelete)} is not one of delete, retain, archive`);
    }
    out.onDelete = p.onDelete;
  }

  if (p.mode !== undefined) {
    if (!/^0?[0-7]{3,4}$/.test(p.mode)) throw new StorageClassParameterError('mode', `${JSON.stringify(p.mode)} must be an octal permission string such as "0770" or "2775"`);
    out.mode = parseInt(p.mode, 8);
  }
  if (p.uid !== undefined) out.uid = parseId('uid', p.uid);
  if (p.gid !== undefined) out.gid = parseId('gid', p.gid);

  if (p.volumeType !== undefined) {
    const v = p.volumeType.toLowerCase();
    if (v !== 'local' && v !== 'hostpath') throw new StorageClassParameterError('volumeType', `${JSON.stringify(p.volumeType)} is not one of local, hostPath`);
    out.volumeType = v === 'local' ? 'local' : 'hostPath';
  }

  if (p.nodeAffinityKey !== undefined) {
    if (!/^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(p.nodeAffinityKey)) {
      throw new StorageClassParameterError('nodeAffinityKey', `${JSON.stringify(p.nodeAffinityKey)} is not a valid label key`);
    }
    out.nodeAffinityKey = p.nodeAffinityKey;
  }
  return out;
}

function parseId(name: 'uid' | 'gid', value: string): number {
  if (!/^\d{1,10}$/.test(value) || Number(value) > MAX_ID) {
    throw new StorageClassParameterError(name, `${JSON.stringify(value)} must be a numeric id between 0 and ${MAX_ID}`);
  }
  return Number(value);
}
