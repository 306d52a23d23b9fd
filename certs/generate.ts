// A self-signed CA and serving certificates signed by it, as PEM strings, built with
// @peculiar/x509 (X.509 v3 over WebCrypto). Keys are ECDSA P-256: small, fast, and accepted
// by the apiserver (Go) and Node (OpenSSL).
import 'reflect-metadata'; // @peculiar/x509's dependency injection needs the Reflect metadata API
import { createPrivateKey, createPublicKey, randomBytes, webcrypto, X509Certificate as NodeCertificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as Crypto);

const DAY_MS = 86_400_000;
/** Backdated start, so a node whose clock runs a little behind accepts a fresh certificate. */
const CLOCK_SKEW_MS = 5 * 60_000;
const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
const { KeyUsageFlags } = x509;

export interface KeyPairPem { cert: string; key: string }

export interface CaOptions {
  commonName?: string;
  validityDays?: number;
  now?: Date;
}

const newKeyPair = () => webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as Promise<CryptoKeyPair>;

/** PEM as the rest of the service writes it: LF lines, one final newline (bundles are concatenations). */
const pem = (text: string): string => `${text.replace(/\r\n/g, '\n').trimEnd()}\n`;

const privateKeyPem = async (key: CryptoKey): Promise<string> =>
  pem(x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY'));

/** A stored key (PKCS#8 or SEC1 PEM, whatever wrote it) as a WebCrypto signing key. */
const signingKey = (pem: string): Promise<CryptoKey> =>
  webcrypto.subtle.importKey('pkcs8', createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' }), EC, false, ['sign']);

/** A positive 128-bit serial: unique enough that a rotated certificate is always told apart. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}

export async function generateCa(options: CaOptions = {}): Promise<KeyPairPem> {
  const now = options.now ?? new Date();
  const keys = await newKeyPair();
  const name = `CN=${options.commonName ?? 'submission-service-webhook-ca'}`;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: name,
    issuer: name,
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter: new Date(now.getTime() + (options.validityDays ?? 3650) * DAY_MS),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(KeyUsageFlags.digitalSignature | KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: pem(cert.toString('pem')), key: await privateKeyPem(keys.privateKey) };
}

export interface ServingOptions {
  ca: KeyPairPem;
  dnsNames?: string[];
  ipAddresses?: string[];
  validityDays?: number;
  now?: Date;
}

export async function issueServingCert(options: ServingOptions): Promise<KeyPairPem> {
  const dnsNames = options.dnsNames ?? [];
  const ipAddresses = options.ipAddresses ?? [];
  if (dnsNames.length + ipAddresses.length === 0) throw new Error('a serving certificate needs at least one DNS name or IP');
  const now = options.now ?? new Date();
  const notAfter = new Date(now.getTime() + (options.validityDays ?? 365) * DAY_MS);
  const ca = new x509.X509Certificate(options.ca.cert);
  // A leaf outliving its CA would be rejected once the CA expires anyway; say so now.
  if (notAfter > ca.notAfter) throw new Error('serving certificate would outlive its CA');
  // The authority key id is the CA's own subject key id as written in it (whichever way it
  // was computed), so OpenSSL's and Go's chain building match the pair.
  const caKeyId = ca.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
  const keys = await newKeyPair();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${dnsNames[0] ?? ipAddresses[0]!}`,
    issuer: ca.subjectName,
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter,
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: await signingKey(options.ca.key),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      caKeyId ? new x509.AuthorityKeyIdentifierExtension(caKeyId) : await x509.AuthorityKeyIdentifierExtension.create(ca.publicKey),
      // The apiserver (Go) checks only subjectAltName, never the common name.
      new x509.SubjectAlternativeNameExtension([
        ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
        ...ipAddresses.map((value) => ({ type: 'ip' as const, value })),
      ]),
    ],
  });
  return { cert: pem(cert.toString('pem')), key: await privateKeyPem(keys.privateKey) };
}

/** The names the apiserver may use for an in-cluster Service. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

/** True when `key` is the private key of `cert`. */
export function keyMatchesCert(cert: string, key: string): boolean {
  const fromKey = createPublicKey(createPrivateKey(key)).export({ type: 'spki', format: 'der' });
  return new NodeCertificate(cert).publicKey.export({ type: 'spki', format: 'der' }).equals(fromKey);
}
