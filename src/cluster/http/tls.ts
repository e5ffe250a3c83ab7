// Serving TLS material and kubeconfig of the embedded cluster: a self-signed CA plus a serving certificate
// for the given hosts (always 127.0.0.1, ::1 and localhost), kept in a directory and reused across restarts
// while valid, so kubeconfigs handed out earlier keep working. Also the bearer token and kubeconfig writer.

import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createCertificate, importPrivateKey, newKeyPair, privateKeyPem } from './x509.ts';

export interface ServingCertificates {
  /** PEM of the CA that signed the serving certificate: what clients trust. */
  caPem: string;
  /** PEM of the serving certificate. */
  certPem: string;
  /** PEM (PKCS#8) of the serving certificate's private key. */
  keyPem: string;
}

const DEFAULT_HOSTS = ['127.0.0.1', '::1', 'localhost'];
const DAY_MS = 24 * 60 * 60 * 1000;
const CA_LIFETIME_MS = 10 * 365 * DAY_MS;
const SERVING_LIFETIME_MS = 365 * DAY_MS;
/** Reissue a serving certificate that would expire within this window. */
const RENEW_BEFORE_MS = 30 * DAY_MS;
/** Backdating absorbs clock skew between this process and its clients. */
const BACKDATE_MS = 60 * 60 * 1000;

const FILES = { caCert: 'ca.crt', caKey: 'ca.key', cert: 'tls.crt', key: 'tls.key' } as const;

async function issueCA(now: number): Promise<{ caPem: string; caKeyPem: string }> {
  const keys = await newKeyPair();
  const caPem = await createCertificate({
    subject: 'CN=kube-provisioner-ca, O=kube-provisioner',
    keys,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_LIFETIME_MS),
    isCA: true,
  });
  return { caPem, caKeyPem: await privateKeyPem(keys.privateKey) };
}

async function issueServing(
  caPem: string,
  caKeyPem: string,
  hosts: string[],
  now: number,
): Promise<{ certPem: string; keyPem: string }> {
  const keys = await newKeyPair();
  const certPem = await createCertificate({
    subject: 'CN=kube-provisioner-apiserver, O=kube-provisioner',
    keys,
    issuer: { certPem: caPem, privateKey: await importPrivateKey(caKeyPem) },
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + SERVING_LIFETIME_MS),
    isCA: false,
    hosts,
  });
  return { certPem, keyPem: await privateKeyPem(keys.privateKey) };
}

function coversHost(cert: X509Certificate, host: string): boolean {
  return isIP(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host, { subject: 'never' }) !== undefined;
}

/** The CA is reusable when it parses, is a CA, is in its validity window and matches its key. */
function usableCA(caPem: string, caKeyPem: string, now: number): boolean {
  try {
    const ca = new X509Certificate(caPem);
    const key = createPrivateKey(caKeyPem);
    return (
      ca.ca &&
      ca.checkPrivateKey(key) &&
      Date.parse(ca.validFrom) <= now &&
      Date.parse(ca.validTo) >= now + RENEW_BEFORE_MS
    );
  } catch {
    return false;
  }
}

function usableServing(caPem: string, certPem: string, servingKeyPem: string, hosts: string[], now: number): boolean {
  try {
    const ca = new X509Certificate(caPem);
    const cert = new X509Certificate(certPem);
    return (
      cert.verify(ca.publicKey) &&
      cert.checkPrivateKey(createPrivateKey(servingKeyPem)) &&
      Date.parse(cert.validFrom) <= now &&
      Date.parse(cert.validTo) > now + RENEW_BEFORE_MS &&
      hosts.every((h) => coversHost(cert, h))
    );
  } catch {
    return false;
  }
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Writes via a temp file + rename so a crash never leaves a half-written key; secrets get 0600. */
async function writeAtomic(path: string, data: string, mode: number): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, data, { mode });
  await chmod(tmp, mode);
  await rename(tmp, path);
}

/**
 * Returns a CA and a serving certificate (EC P-256, SHA-256) valid for `hosts` plus 127.0.0.1, ::1 and localhost;
 * IPs become IP SANs. With `dir`, reuses ca.crt/ca.key/tls.crt/tls.key from it while they are valid and cover
 * the hosts (a new serving certificate is issued under the same CA otherwise), and writes what it creates:
 * certificates 0644, keys 0600.
 */
export async function ensureServingCertificates(
  dir: string | undefined,
  hosts: string[],
): Promise<ServingCertificates> {
  const allHosts = [...new Set([...DEFAULT_HOSTS, ...hosts.filter((h) => h !== '')])];
  const now = Date.now();
  if (dir === undefined) {
    const { caPem, caKeyPem } = await issueCA(now);
    return { caPem, ...(await issueServing(caPem, caKeyPem, allHosts, now)) };
  }
  await mkdir(dir, { recursive: true });
  const [caPemOnDisk, caKeyPemOnDisk, certPemOnDisk, keyPemOnDisk] = await Promise.all(
    [FILES.caCert, FILES.caKey, FILES.cert, FILES.key].map((f) => readIfExists(join(dir, f))),
  );
  let caPem = caPemOnDisk;
  let caKeyPem = caKeyPemOnDisk;
  if (!caPem || !caKeyPem || !usableCA(caPem, caKeyPem, now)) {
    ({ caPem, caKeyPem } = await issueCA(now));
    await writeAtomic(join(dir, FILES.caKey), caKeyPem, 0o600);
    await writeAtomic(join(dir, FILES.caCert), caPem, 0o644);
  } else if (certPemOnDisk && keyPemOnDisk && usableServing(caPem, certPemOnDisk, keyPemOnDisk, allHosts, now)) {
    return { caPem, certPem: certPemOnDisk, keyPem: keyPemOnDisk };
  }
  const serving = await issueServing(caPem, caKeyPem, allHosts, now);
  await writeAtomic(join(dir, FILES.key), serving.keyPem, 0o600);
  await writeAtomic(join(dir, FILES.cert), serving.certPem, 0o644);
  return { caPem, ...serving };
}

/** A random bearer token (256 bits, base64url). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

export interface KubeconfigOptions {
  /** https://host:port (or http:// for --insecure-http). */
  server: string;
  /** PEM of the CA to trust; written as certificate-authority-data. */
  caPem?: string;
  token: string;
  /** Sets insecure-skip-tls-verify (then no CA data is written: kubectl rejects both together). */
  insecure?: boolean;
  /** Name of the cluster, user and context (default "kube-provisioner"). */
  name?: string;
  /** Namespace of the context (default: none, i.e. "default"). */
  namespace?: string;
}

/** Kubeconfig YAML with one cluster, one token user and one context, set current. */
export function buildKubeconfig(opts: KubeconfigOptions): string {
  const name = opts.name ?? 'kube-provisioner';
  const cluster: Record<string, unknown> = { server: opts.server };
  if (opts.insecure) cluster['insecure-skip-tls-verify'] = true;
  else if (opts.caPem) cluster['certificate-authority-data'] = Buffer.from(opts.caPem, 'utf8').toString('base64');
  const context: Record<string, unknown> = { cluster: name, user: name };
  if (opts.namespace) context.namespace = opts.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user: { token: opts.token } }],
    contexts: [{ name, context }],
    'current-context': name,
    preferences: {},
  });
}
