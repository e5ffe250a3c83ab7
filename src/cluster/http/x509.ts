// Certificate issuance for the embedded cluster, on @peculiar/x509 (a maintained X.509 library over WebCrypto).
// @peculiar/x509 resolves its ASN.1 schemas through tsyringe, which needs the reflect-metadata polyfill loaded first.
// Both are optional peer dependencies, loaded on first use so that code paths without TLS never need them.
import type * as X509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import { requireOptional, resolveOptional } from '../common/optional-deps.ts';

let loaded: typeof X509 | undefined;

function x509(): typeof X509 {
  if (!loaded) {
    // Both are checked before either loads: @peculiar/x509 fails obscurely without the polyfill loaded first.
    resolveOptional('@peculiar/x509', "the embedded cluster's TLS");
    requireOptional<unknown>('reflect-metadata', "the embedded cluster's TLS");
    const lib = requireOptional<typeof X509>('@peculiar/x509', "the embedded cluster's TLS");
    lib.cryptoProvider.set(webcrypto as unknown as Parameters<typeof lib.cryptoProvider.set>[0]);
    loaded = lib;
  }
  return loaded;
}

type CryptoKey = webcrypto.CryptoKey;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface KeyPair {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

export async function newKeyPair(): Promise<KeyPair> {
  return (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as KeyPair;
}

/** PKCS#8 PEM of a private key. */
export async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509().PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

/** Loads a PKCS#8 PEM private key for signing. */
export async function importPrivateKey(pem: string): Promise<CryptoKey> {
  const der = x509().PemConverter.decode(pem)[0];
  return webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
}

export interface CertificateRequest {
  subject: string;
  /** The key pair certified; for a self-signed CA it also signs. */
  keys: KeyPair;
  /** The issuer (PEM + its private key); omitted for a self-signed certificate. */
  issuer?: { certPem: string; privateKey: CryptoKey };
  notBefore: Date;
  notAfter: Date;
  isCA: boolean;
  /** DNS names and IP addresses for subjectAltName. */
  hosts?: string[];
}

/** Issues a certificate and returns its PEM. */
export async function createCertificate(req: CertificateRequest): Promise<string> {
  const serialNumber = randomBytes(16)
    .toString('hex')
    .replace(/^[89a-f]/, '1');
  const lib = x509();
  const extensions: X509.Extension[] = [
    new lib.BasicConstraintsExtension(req.isCA, undefined, true),
    new lib.KeyUsagesExtension(
      req.isCA
        ? lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign | lib.KeyUsageFlags.digitalSignature
        : lib.KeyUsageFlags.digitalSignature | lib.KeyUsageFlags.keyEncipherment,
      true,
    ),
    await lib.SubjectKeyIdentifierExtension.create(req.keys.publicKey),
  ];
  if (!req.isCA) extensions.push(new lib.ExtendedKeyUsageExtension([lib.ExtendedKeyUsage.serverAuth]));
  if (req.hosts?.length) {
    extensions.push(
      new lib.SubjectAlternativeNameExtension(
        req.hosts.map((h) => ({ type: isIP(h) ? ('ip' as const) : ('dns' as const), value: h })),
      ),
    );
  }
  if (!req.issuer) {
    const cert = await lib.X509CertificateGenerator.createSelfSigned({
      serialNumber,
      name: req.subject,
      notBefore: req.notBefore,
      notAfter: req.notAfter,
      keys: req.keys,
      signingAlgorithm: ALG,
      extensions,
    });
    return cert.toString('pem') + '\n';
  }
  const issuerCert = new lib.X509Certificate(req.issuer.certPem);
  extensions.push(await lib.AuthorityKeyIdentifierExtension.create(issuerCert));
  const cert = await lib.X509CertificateGenerator.create({
    serialNumber,
    subject: req.subject,
    issuer: issuerCert.subject,
    notBefore: req.notBefore,
    notAfter: req.notAfter,
    publicKey: req.keys.publicKey,
    signingKey: req.issuer.privateKey,
    signingAlgorithm: ALG,
    extensions,
  });
  return cert.toString('pem') + '\n';
}
