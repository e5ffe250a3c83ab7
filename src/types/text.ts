// Shortening tenant-derived text (a path, a name, an error message) to a byte budget without splitting a
// character: used by event messages, error messages and the hostpath provisioner's errors.

/** The most bytes of one piece of tenant-derived text (a path, a name) worth quoting in a message. */
export const MAX_QUOTED_INPUT_BYTES = 1024;

/**
 * `text` unchanged when it fits in `maxBytes` (UTF-8), else its head and tail around an ellipsis that says how
 * much was left out: the total stays within `maxBytes`, and no character is split.
 */
export function shortenText(text: string, maxBytes: number = MAX_QUOTED_INPUT_BYTES): string {
  const total = Buffer.byteLength(text, 'utf8');
  if (total <= maxBytes) return text;
  const marker = `…(${total} bytes, shortened)…`;
  const budget = Math.max(0, maxBytes - Buffer.byteLength(marker, 'utf8'));
  const head = prefixWithin(text, Math.ceil(budget / 2));
  const tail = suffixWithin(text, budget - Buffer.byteLength(head, 'utf8'));
  return `${head}${marker}${tail}`;
}

/** The longest prefix of `text` (whole code points) of at most `maxBytes` UTF-8 bytes. */
function prefixWithin(text: string, maxBytes: number): string {
  let bytes = 0;
  let end = 0;
  // A prefix of n bytes has at most n UTF-16 units: only that much of a huge string is ever walked.
  for (const ch of text.slice(0, maxBytes + 1)) {
    const b = Buffer.byteLength(ch, 'utf8');
    if (bytes + b > maxBytes) break;
    bytes += b;
    end += ch.length;
  }
  return text.slice(0, end);
}

/** The longest suffix of `text` (whole code points) of at most `maxBytes` UTF-8 bytes. */
function suffixWithin(text: string, maxBytes: number): string {
  const chars = [...text.slice(Math.max(0, text.length - maxBytes - 1))];
  let bytes = 0;
  let start = chars.length;
  while (start > 0) {
    const b = Buffer.byteLength(chars[start - 1], 'utf8');
    if (bytes + b > maxBytes) break;
    bytes += b;
    start--;
  }
  return chars.slice(start).join('');
}
