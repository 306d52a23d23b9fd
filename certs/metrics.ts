// The end of validity of the certificates the webhook holds, so an alert can fire long
// before a rotation that failed silently lets the serving certificate expire.
import { X509Certificate } from 'node:crypto';
import { gauge } from '../lib/metrics.js';
import type { StoredCertificates } from './store.js';

export const certificateNotAfter = gauge({
  name: 'submission_service_certificate_not_after_seconds',
  help: 'notAfter of the webhook certificates held now, as Unix seconds (certificate: serving or ca, the signing CA)',
  labelNames: ['certificate'] as const,
});

const notAfter = (pem: string) => Date.parse(new X509Certificate(pem).validTo) / 1000;

export function observeCertificates(certs: Pick<StoredCertificates, 'cert' | 'caCert'>): void {
  certificateNotAfter.set({ certificate: 'serving' }, notAfter(certs.cert));
  // ca.crt lists the signing CA first, then older CAs kept for the certificates they signed.
  certificateNotAfter.set({ certificate: 'ca' }, notAfter(certs.caCert));
}
