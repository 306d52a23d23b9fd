// A self-signed CA and serving certificates signed by it, as PEM strings.
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { subjectAndKey } from './der-read.js';
import { issueCertificate, nameWithCommonName, newKeyPair, privateKeyPem } from './x509.js';

const DAY_MS = 86_400_000;
/** Backdated start, so a node whose clock runs a little behind accepts a fresh certificate. */
const CLOCK_SKEW_MS = 5 * 60_000;

export interface KeyPairPem { cert: string; key: string }

export interface CaOptions {
  commonName?: string;
  validityDays?: number;
  now?: Date;
}

export function generateCa(options: CaOptions = {}): KeyPairPem {
  const now = options.now ?? new Date();
  const { privateKey, publicKey } = newKeyPair();
  const name = nameWithCommonName(options.commonName ?? 'submission-service-webhook-ca');
  const cert = issueCertificate({
    subject: name,
    subjectKey: publicKey,
    issuer: name,
    issuerSpki: publicKey.export({ type: 'spki', format: 'der' }),
    issuerKey: privateKey,
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter: new Date(now.getTime() + (options.validityDays ?? 3650) * DAY_MS),
    isCa: true,
  });
  return { cert, key: privateKeyPem(privateKey) };
}

export interface ServingOptions {
  ca: KeyPairPem;
  dnsNames?: string[];
  ipAddresses?: string[];
  validityDays?: number;
  now?: Date;
}

export function issueServingCert(options: ServingOptions): KeyPairPem {
  const dnsNames = options.dnsNames ?? [];
  const ipAddresses = options.ipAddresses ?? [];
  if (dnsNames.length + ipAddresses.length === 0) throw new Error('a serving certificate needs at least one DNS name or IP');
  const now = options.now ?? new Date();
  const notAfter = new Date(now.getTime() + (options.validityDays ?? 365) * DAY_MS);
  const caCert = new X509Certificate(options.ca.cert);
  // A leaf outliving its CA would be rejected once the CA expires anyway; say so now.
  if (notAfter > new Date(caCert.validTo)) throw new Error('serving certificate would outlive its CA');
  const issuer = subjectAndKey(caCert.raw);
  const { privateKey, publicKey } = newKeyPair();
  const cert = issueCertificate({
    subject: nameWithCommonName(dnsNames[0] ?? ipAddresses[0]!),
    subjectKey: publicKey,
    issuer: issuer.subject,
    issuerSpki: issuer.spki,
    issuerKey: createPrivateKey(options.ca.key),
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter,
    isCa: false,
    dnsNames,
    ipAddresses,
  });
  return { cert, key: privateKeyPem(privateKey) };
}

/** The names the apiserver may use for an in-cluster Service. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

/** True when `key` is the private key of `cert`. */
export function keyMatchesCert(cert: string, key: string): boolean {
  const fromKey = createPublicKey(createPrivateKey(key)).export({ type: 'spki', format: 'der' });
  return new X509Certificate(cert).publicKey.export({ type: 'spki', format: 'der' }).equals(fromKey);
}
