// Go's base64.StdEncoding decoding rules, which kube-apiserver applies when it decodes a []byte field (Secret
// `data`, ConfigMap `binaryData`): padded standard alphabet, CR and LF skipped, and the exact byte offset of the
// first error (`illegal base64 data at input byte N`), so a bad value is refused as a real server refuses it.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const IS_ALPHABET = new Uint8Array(256);
for (const c of ALPHABET) IS_ALPHABET[c.charCodeAt(0)] = 1;
const PAD = 0x3d;
const isNewline = (b: number) => b === 0x0a || b === 0x0d;

/** The offset Go's CorruptInputError reports for `text`, or undefined when it decodes (encoding/base64 decodeQuantum). */
export function base64ErrorOffset(text: string): number | undefined {
  const src = Buffer.from(text, 'utf8');
  let si = 0;
  while (si < src.length) {
    // One quantum of up to four alphabet characters (newlines skipped).
    let j = 0;
    for (; j < 4; j++) {
      if (si === src.length) {
        if (j === 0) return undefined;
        return si - j;
      }
      const b = src[si++];
      if (IS_ALPHABET[b]) continue;
      if (isNewline(b)) {
        j--;
        continue;
      }
      if (b !== PAD) return si - 1;
      // Padding: only in the third or fourth position, and then nothing but newlines may follow.
      if (j < 2) return si - 1;
      if (j === 2) {
        while (si < src.length && isNewline(src[si])) si++;
        if (si === src.length) return src.length;
        if (src[si] !== PAD) return si - 1;
        si++;
      }
      while (si < src.length && isNewline(src[si])) si++;
      return si < src.length ? si : undefined;
    }
  }
  return undefined;
}

/** Go's error text for a value that does not decode, or undefined. */
export function base64DecodeError(text: string): string | undefined {
  const at = base64ErrorOffset(text);
  return at === undefined ? undefined : `illegal base64 data at input byte ${at}`;
}
