// One canonical form for every path the hostpath provisioner compares, indexes or records: a directory is
// identified by what it is, not by how a PV or a pattern spelled it. `//` and `.` collapse, a trailing `/` goes,
// `..` cannot be resolved without the disk (a symlink above it changes its meaning), so a path holding one is
// not mapped to a directory: callers treat it as meaning anything below what it could reach (fail closed). NFS
// server names compare without case and without a trailing dot, as DNS names do.
import net from 'node:net';
import path from 'node:path';

/** How a path taken from a PV reads: exactly one canonical path, or paths it could mean. */
export type PathReading =
  | { kind: 'canonical'; path: string }
  /**
   * It holds `..` (or a NUL): what it names depends on the disk. `candidates` are the absolute paths it could
   * mean lexically (the part before the first `..`, and the lexical resolution), for blocking what is around them.
   */
  | { kind: 'ambiguous'; candidates: string[]; why: string };

/**
 * Reads an absolute path from a PV (hostPath, local, an nfs export path). Undefined for anything that is not an
 * absolute path at all (not a string, empty, relative): no directory.
 */
export function readAbsolutePath(p: unknown): PathReading | undefined {
  if (typeof p !== 'string' || !p.startsWith('/')) return undefined;
  const segments = p.split('/').filter((s) => s !== '' && s !== '.');
  const up = segments.indexOf('..');
  if (up < 0 && !p.includes('\0')) return { kind: 'canonical', path: `/${segments.join('/')}` };
  const before = up < 0 ? segments : segments.slice(0, up);
  const candidates = new Set([
    `/${before.join('/')}`,
    stripTrailingSlash(path.posix.normalize(p.replaceAll('\0', ''))),
  ]);
  return {
    kind: 'ambiguous',
    candidates: [...candidates],
    why:
      up < 0
        ? 'it contains a NUL byte'
        : 'it contains a ".." segment, whose meaning depends on the directories (and symlinks) above it',
  };
}

/** The canonical form of an absolute path, or undefined when it has none (relative, `..`, NUL). */
export function canonicalAbsolutePath(p: unknown): string | undefined {
  const r = readAbsolutePath(p);
  return r?.kind === 'canonical' ? r.path : undefined;
}

/**
 * A rendered relative path in canonical form: local-path cleans a pattern such as `{{ .PVC.Namespace }}/{{ .PVC.Name }}/`
 * with filepath.Join, so the trailing `/`s are dropped (the renderer refuses a missing or empty value, so they
 * cannot stand for one). Anything else (an empty segment inside, `.`, `..`) is left for the path rules to refuse:
 * in a rendered path it means an attempt to climb or to name the same directory two ways.
 */
export function canonicalRenderedPath(rel: string): string {
  let end = rel.length;
  while (end > 1 && rel.charCodeAt(end - 1) === 0x2f) end--;
  return end === rel.length ? rel : rel.slice(0, end);
}

/**
 * An NFS server name as compared: lower case, without the root's trailing dot (`NFS.Example.` is `nfs.example`).
 * An address is compared as the address it is, as getaddrinfo (mount.nfs) reads it: IPv4 in any of inet_aton's
 * forms (`10.0.0.05`, `0x0a000005`, `10.5`), IPv6 in any spelling, bracketed or not, an IPv4-mapped IPv6 address as
 * its IPv4 address. A name and an address of the same server still differ (that needs DNS).
 */
export function canonicalNfsServer(server: string): string {
  let lower = server.toLowerCase();
  if (lower.startsWith('[') && lower.endsWith(']')) lower = lower.slice(1, -1);
  const address = canonicalAddress(lower);
  if (address !== undefined) return address;
  return lower.length > 1 && lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

// The WHATWG URL host parser reads IPv4 numbers as inet_aton does (octal, hex, fewer than four parts) and writes
// IPv6 in its one canonical (RFC 5952) form. A zone (`fe80::1%eth0`) is not parsed: compared as written.
function canonicalAddress(s: string): string | undefined {
  try {
    if (net.isIPv6(s)) {
      const v6 = new URL(`http://[${s}]/`).hostname.slice(1, -1);
      const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(v6);
      if (!mapped) return v6;
      const [hi, lo] = [parseInt(mapped[1], 16), parseInt(mapped[2], 16)];
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
    }
    if (!/^[0-9][0-9a-fx.]*$/.test(s)) return undefined;
    const v4 = new URL(`http://${s}/`).hostname;
    return net.isIPv4(v4) ? v4 : undefined;
  } catch {
    return undefined;
  }
}

function stripTrailingSlash(p: string): string {
  return p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
}

/** The proper ancestors of a canonical absolute path, nearest first (`/a/b/c` -> `/a/b`, `/a`). */
export function* ancestorsOf(p: string): Generator<string> {
  for (let i = p.lastIndexOf('/'); i > 0; i = p.lastIndexOf('/', i - 1)) yield p.slice(0, i);
}

/** The proper ancestors of a canonical relative path, nearest first (`a/b/c` -> `a/b`, `a`). */
export function* relativeAncestorsOf(rel: string): Generator<string> {
  for (let i = rel.lastIndexOf('/'); i > 0; i = rel.lastIndexOf('/', i - 1)) yield rel.slice(0, i);
}
