// metav1.Time from a protobuf Timestamp (seconds, nanos): only instants that RFC 3339 can write (years 0001 to
// 9999, the range Go's time.MarshalJSON accepts) are decoded; anything else is the client's error, not ours.

/** A protobuf Timestamp outside what metav1.Time can represent. */
export class ProtobufTimeRangeError extends Error {
  override name = 'ProtobufTimeRangeError';
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in Unix seconds. */
const MIN_SECONDS = -62_135_596_800n;
const MAX_SECONDS = 253_402_300_799n;

/** Formats Unix `seconds` as metav1.Time (`2006-01-02T15:04:05Z`). @throws ProtobufTimeRangeError */
export function protobufTimeToString(seconds: bigint): string {
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) {
    throw new ProtobufTimeRangeError(`timestamp ${seconds} s is outside the range of metav1.Time (years 0001 to 9999)`);
  }
  return new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
