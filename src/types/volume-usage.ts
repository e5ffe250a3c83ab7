// The usage a provisioner measured for a volume, published on the PV as one annotation so that tools reading only
// the API (`kube-provisioner explain`) can show it. Written by the hostpath provisioner's usage walk; any backend
// may write the same format.

/** PV annotation holding a {@link VolumeUsageSummary} as JSON. */
export const ANN_VOLUME_USAGE = 'kube-provisioner.io/volume-usage';

export interface VolumeUsageSummary {
  /** Bytes used (decimal string: BigInt in JSON). */
  bytes: string;
  /** Inodes used. */
  inodes: number;
  /** False when the measurement was cut short: both figures are then lower bounds. */
  complete: boolean;
  /** When it was measured (RFC 3339). */
  measuredAt: string;
}

/** The annotation's value. */
export function formatVolumeUsage(s: VolumeUsageSummary): string {
  return JSON.stringify({ bytes: s.bytes, inodes: s.inodes, complete: s.complete, measuredAt: s.measuredAt });
}

/** Parses the annotation; undefined when absent or malformed. */
export function parseVolumeUsage(text: string | undefined): VolumeUsageSummary | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Partial<VolumeUsageSummary>;
    if (
      typeof v.bytes !== 'string' ||
      !/^\d+$/.test(v.bytes) ||
      typeof v.inodes !== 'number' ||
      typeof v.complete !== 'boolean'
    )
      return undefined;
    return { bytes: v.bytes, inodes: v.inodes, complete: v.complete, measuredAt: String(v.measuredAt ?? '') };
  } catch {
    return undefined;
  }
}
