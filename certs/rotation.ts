// When to issue a new serving certificate, and doing it. The CA is kept for as long as
// it has most of its life ahead, so the caBundle registered with the apiserver stays
// valid across serving-certificate rotations.
import { X509Certificate } from 'node:crypto';
import { observeCertificates } from './metrics.js';
import { generateCa, issueServingCert, type KeyPairPem, keyMatchesCert } from './generate.js';
import type { CertificateStore, StoredCertificates } from './store.js';
import { ipBytes } from './ip.js';

export interface RotationPolicy {
  dnsNames?: string[];
  ipAddresses?: string[];
  /** Validity of each serving certificate. */
  validityDays?: number;
  caValidityDays?: number;
  /** Renew once less than this share of the validity remains (1/3, as kubelet and cert-manager do). */
  renewFraction?: number;
  now?: Date;
}

export type RotationReason =
  | 'none' | 'missing' | 'expiring' | 'names-changed' | 'not-issued-by-ca' | 'key-mismatch' | 'ca-renewed';

const PEM_CERT = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n?/g;
/** `ca.crt` holds the signing CA first, then older CAs that still vouch for served certificates. */
export const splitPem = (bundle: string): string[] => bundle.match(PEM_CERT) ?? [];

function expiring(cert: X509Certificate, now: Date, fraction: number): boolean {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return to - now.getTime() < (to - from) * fraction;
}

/** SANs as comparable strings: DNS names as written, IPs as their bytes (node prints IPv6 expanded). */
function altNames(cert: X509Certificate): Set<string> {
  const names = (cert.subjectAltName ?? '').split(', ').filter(Boolean);
  return new Set(names.map((n) => (n.startsWith('IP Address:') ? `IP:${ipBytes(n.slice(11)).toString('hex')}` : n)));
}

function coversNames(cert: X509Certificate, policy: RotationPolicy): boolean {
  const names = altNames(cert);
  const wanted = [
    ...(policy.dnsNames ?? []).map((n) => `DNS:${n}`),
    ...(policy.ipAddresses ?? []).map((ip) => `IP:${ipBytes(ip).toString('hex')}`),
  ];
  return wanted.every((n) => names.has(n));
}

/** Why the stored serving certificate must be replaced, or 'none'. */
export function rotationReason(stored: StoredCertificates | undefined, policy: RotationPolicy): RotationReason {
  if (!stored) return 'missing';
  const now = policy.now ?? new Date();
  const cert = new X509Certificate(stored.cert);
  const ca = new X509Certificate(splitPem(stored.caCert)[0] ?? '');
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return 'not-issued-by-ca';
  if (!keyMatchesCert(stored.cert, stored.key)) return 'key-mismatch';
  if (!coversNames(cert, policy)) return 'names-changed';
  return expiring(cert, now, policy.renewFraction ?? 1 / 3) ? 'expiring' : 'none';
}

/** base64 PEM of the CAs, for `clientConfig.caBundle` of the MutatingWebhookConfiguration. */
export function caBundle(stored: Pick<StoredCertificates, 'caCert'>, now = new Date()): string {
  const valid = splitPem(stored.caCert).filter((pem) => Date.parse(new X509Certificate(pem).validTo) > now.getTime());
  return Buffer.from(valid.join('')).toString('base64');
}

/** The signing CA to keep, or a new one (with the still-valid old ones after it). */
async function signingCa(stored: StoredCertificates | undefined, policy: RotationPolicy, now: Date): Promise<{ ca: KeyPairPem; bundle: string; renewed: boolean }> {
  const pems = stored ? splitPem(stored.caCert) : [];
  const current = pems[0];
  if (stored && current && keyMatchesCert(current, stored.caKey)
    && !expiring(new X509Certificate(current), now, policy.renewFraction ?? 1 / 3)) {
    return { ca: { cert: current, key: stored.caKey }, bundle: stored.caCert, renewed: false };
  }
  const ca = await generateCa({ validityDays: policy.caValidityDays, now });
  const stillValid = pems.filter((pem) => Date.parse(new X509Certificate(pem).validTo) > now.getTime());
  return { ca, bundle: [ca.cert, ...stillValid].join(''), renewed: true };
}

export interface EnsureOptions extends RotationPolicy {
  /**
   * Called with the new caBundle before a certificate from a renewed CA is written, so
   * the apiserver trusts it before it is served (the bundle keeps the old CA too).
   */
  publishCaBundle?: (caBundle: string) => Promise<void>;
}

export interface EnsureResult { reason: RotationReason; caBundle: string; certs: StoredCertificates }

/** Issues and stores a new serving certificate when one is due; returns what is stored now. */
export async function ensureCertificates(store: CertificateStore, options: EnsureOptions): Promise<EnsureResult> {
  const now = options.now ?? new Date();
  const stored = await store.read();
  const { ca, bundle, renewed } = await signingCa(stored, options, now);
  const reason: RotationReason = renewed && stored ? 'ca-renewed' : rotationReason(stored, options);
  if (reason === 'none' && stored) {
    observeCertificates(stored);
    return { reason, caBundle: caBundle(stored, now), certs: stored };
  }
  if (renewed && stored) await options.publishCaBundle?.(caBundle({ caCert: bundle }, now));
  // Never past the CA's end: such a certificate would fail then anyway.
  const caDaysLeft = (Date.parse(new X509Certificate(ca.cert).validTo) - now.getTime()) / 86_400_000;
  const validityDays = Math.min(options.validityDays ?? 365, caDaysLeft);
  const leaf = await issueServingCert({ ca, dnsNames: options.dnsNames, ipAddresses: options.ipAddresses, validityDays, now });
  const certs = { caCert: bundle, caKey: ca.key, cert: leaf.cert, key: leaf.key };
  await store.write(certs);
  observeCertificates(certs);
  return { reason, caBundle: caBundle(certs, now), certs };
}
