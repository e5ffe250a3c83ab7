// resource.Quantity parsing: "10Gi", "1.5G", "500m", "1e3". Values are exact BigInts (storage sizes
// past 2^53 are real), rounded up to a whole unit as Quantity.Value() does.

const BINARY: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};
const DECIMAL_EXP: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/** Values past 10^40 are refused (the largest suffix, Ei, is about 10^18). */
const MAX_DECIMAL_DIGITS = 40;
/** Longer strings are refused before any parsing (kube-apiserver's own quantities are short). */
const MAX_LENGTH = 100;

const QUANTITY_RE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;

/** Thrown for a string that is not a Kubernetes quantity. */
export class QuantityError extends Error {
  override name = 'QuantityError';
}

/** True when `s` is a valid quantity that parseQuantity accepts (syntax, and within the size bounds). */
export function isQuantity(s: unknown): s is string {
  if (typeof s !== 'string' || s.length > MAX_LENGTH || !QUANTITY_RE.test(s)) return false;
  try {
    parseQuantity(s);
    return true;
  } catch {
    return false;
  }
}

/** Values of quantities parsed before, by their text: a cluster's sizes are a handful of strings, parsed on every write. */
const parsedQuantities = new Map<string, bigint>();
const MAX_CACHED_QUANTITIES = 256;
const MAX_CACHED_QUANTITY_LENGTH = 32;

/** Parses a quantity into its integer value, rounding fractions up (e.g. "1.5" -> 2, "500m" -> 1). */
export function parseQuantity(s: string): bigint {
  const known = parsedQuantities.get(s);
  if (known !== undefined) return known;
  const value = parseQuantityText(s);
  if (s.length <= MAX_CACHED_QUANTITY_LENGTH) {
    // Bounded whatever clients send: a full cache starts over.
    if (parsedQuantities.size >= MAX_CACHED_QUANTITIES) parsedQuantities.clear();
    parsedQuantities.set(s, value);
  }
  return value;
}

function parseQuantityText(s: string): bigint {
  if (s.length > MAX_LENGTH)
    throw new QuantityError(`quantity too long (${s.length} characters): ${JSON.stringify(s.slice(0, 64) + '…')}`);
  const m = QUANTITY_RE.exec(s);
  if (!m)
    throw new QuantityError(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': ${JSON.stringify(s)}`,
    );
  const [, sign, num, suffix = ''] = m;
  const [intPart, fracPart = ''] = num.split('.');
  // value = digits * 10^(exp - fracLen) * multiplier
  let digits = BigInt((intPart || '0') + fracPart);
  let exp10 = -fracPart.length;
  let mult = 1n;
  if (suffix in BINARY) mult = BINARY[suffix];
  else if (suffix in DECIMAL_EXP) exp10 += DECIMAL_EXP[suffix];
  else exp10 += Number(suffix.slice(1));
  // Bound the work before building BigInts: "1e99999999" would otherwise allocate a 100-million-digit number and
  // stall whoever parses it (a tenant controls claim sizes). Kubernetes itself caps quantities far below this.
  const magnitude = intPart.replace(/^0+/, '').length + exp10 + fracPart.length + (mult > 1n ? 19 : 0);
  if (magnitude > MAX_DECIMAL_DIGITS)
    throw new QuantityError(`quantity too large: ${JSON.stringify(s.length > 64 ? s.slice(0, 64) + '…' : s)}`);
  if (exp10 < -2 * MAX_DECIMAL_DIGITS) return digits === 0n || sign === '-' ? 0n : 1n; // a positive sliver rounds up to 1
  digits *= mult;
  let value: bigint;
  if (exp10 >= 0) value = digits * 10n ** BigInt(exp10);
  else {
    const div = 10n ** BigInt(-exp10);
    value = digits / div + (digits % div === 0n ? 0n : 1n);
  }
  return sign === '-' ? -value : value;
}

/** Formats a byte count the way people read storage sizes: the largest exact binary unit. */
export function formatBytes(n: bigint): string {
  for (const unit of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki']) {
    const m = BINARY[unit];
    if (n !== 0n && n % m === 0n) return `${n / m}${unit}`;
  }
  return n.toString();
}
