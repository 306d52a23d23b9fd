// Builds and signs X.509 v3 certificates (RFC 5280) with node:crypto and our DER encoder.
// Keys are ECDSA P-256: small, fast, and accepted by the apiserver (Go) and Node (OpenSSL).
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import {
  bitString, boolean, type Der, explicit, implicit, namedBits, octetString, oid, sequence, set, smallInteger,
  time, unsignedInteger, utf8String,
} from './der.js';

const OID = {
  commonName: '2.5.4.3',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

const KEY_USAGE = { digitalSignature: 0, keyCertSign: 5, cRLSign: 6 };

export function newKeyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

export const nameWithCommonName = (cn: string): Der => sequence(set(sequence(oid(OID.commonName), utf8String(cn))));

/** A key identifier: any stable hash of the key is allowed (RFC 5280 4.2.1.2). */
export const keyIdentifier = (spki: Buffer): Buffer => createHash('sha1').update(spki).digest();

export function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  const [head = '', tail] = ip.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(tail ?? '').length;
  const all = [...groups(head), ...Array(tail === undefined ? 0 : missing).fill('0'), ...groups(tail ?? '')];
  return Buffer.from(all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
}

function extension(id: string, critical: boolean, value: Der): Der {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

export interface CertificateRequest {
  subject: Der;
  subjectKey: KeyObject;
  issuer: Der;
  issuerSpki: Buffer;
  issuerKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
  dnsNames?: string[];
  ipAddresses?: string[];
}

function extensions(req: CertificateRequest, spki: Buffer): Der {
  const list = [
    extension(OID.basicConstraints, true, req.isCa ? sequence(boolean(true), smallInteger(0)) : sequence()),
    extension(OID.keyUsage, true, namedBits(req.isCa
      ? [KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign]
      : [KEY_USAGE.digitalSignature])),
    extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(spki))),
    extension(OID.authorityKeyIdentifier, false, sequence(implicit(0, keyIdentifier(req.issuerSpki)))),
  ];
  if (!req.isCa) list.push(extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))));
  // The apiserver (Go) checks only subjectAltName, never the common name.
  const names = [
    ...(req.dnsNames ?? []).map((dns) => implicit(2, Buffer.from(dns, 'ascii'))),
    ...(req.ipAddresses ?? []).map((ip) => implicit(7, ipBytes(ip))),
  ];
  if (names.length > 0) list.push(extension(OID.subjectAltName, false, sequence(...names)));
  return explicit(3, sequence(...list));
}

/** A positive 128-bit serial: unique enough that a rotated certificate is always told apart. */
function serial(): Der {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return unsignedInteger(bytes);
}

const toPem = (label: string, der: Buffer): string =>
  `-----BEGIN ${label}-----\n${der.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;

/** Signs the certificate; returns it as PEM. */
export function issueCertificate(req: CertificateRequest): string {
  const spki = req.subjectKey.export({ type: 'spki', format: 'der' });
  const algorithm = sequence(oid(OID.ecdsaWithSha256));
  const tbs = sequence(
    explicit(0, smallInteger(2)), // v3
    serial(),
    algorithm,
    req.issuer,
    sequence(time(req.notBefore), time(req.notAfter)),
    req.subject,
    spki,
    extensions(req, spki),
  );
  const signature = sign('sha256', tbs, req.issuerKey); // DER-encoded ECDSA, as X.509 wants
  return toPem('CERTIFICATE', sequence(tbs, algorithm, bitString(signature)));
}

export const privateKeyPem = (key: KeyObject): string => key.export({ type: 'pkcs8', format: 'pem' }) as string;
