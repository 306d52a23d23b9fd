import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import 'reflect-metadata'; // before @peculiar/x509, which needs it
import * as x509 from '@peculiar/x509';
import t from 'tap';
import { generateCa, issueServingCert, keyMatchesCert, serviceDnsNames } from '../../certs/generate.js';
import { caBundle, ensureCertificates, rotationReason, splitPem } from '../../certs/rotation.js';
import { fileCertificateStore } from '../../certs/store.js';

const DAY = 86_400_000;
const names = { dnsNames: serviceDnsNames('submission-service-webhook', 'spark'), ipAddresses: ['127.0.0.1', '::1'] };

t.test('a serving certificate chains to its CA and names the service', async (t) => {
  const ca = await generateCa({ validityDays: 30 });
  const leaf = await issueServingCert({ ca, ...names, validityDays: 7 });
  const caCert = new X509Certificate(ca.cert);
  const cert = new X509Certificate(leaf.cert);
  t.ok(caCert.ca, 'CA is a CA');
  t.notOk(cert.ca, 'leaf is not');
  t.ok(cert.checkIssued(caCert) && cert.verify(caCert.publicKey), 'signed by the CA');
  t.ok(caCert.verify(caCert.publicKey), 'CA is self-signed');
  t.ok(cert.checkHost('submission-service-webhook.spark.svc'));
  t.ok(cert.checkIP('127.0.0.1'));
  t.ok(cert.checkIP('::1'));
  t.notOk(cert.checkHost('evil.example.com'));
  t.ok(keyMatchesCert(leaf.cert, leaf.key));
  t.notOk(keyMatchesCert(leaf.cert, ca.key));
  const days = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / DAY;
  t.ok(days > 7 && days < 7.01, `7 days plus the clock-skew margin (${days.toFixed(4)})`);
  await t.rejects(issueServingCert({ ca, ...names, validityDays: 60 }), /outlive/);
  await t.rejects(issueServingCert({ ca }), /at least one/);
  // The leaf names its CA by the CA's own key id: how OpenSSL and Go pick the issuer.
  const ski = new x509.X509Certificate(ca.cert).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId;
  t.ok(ski, 'the CA has a subject key id');
  t.equal(new x509.X509Certificate(leaf.cert).getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId, ski, 'authority key id = CA subject key id');
  t.equal(new x509.X509Certificate(leaf.cert).getExtension(x509.BasicConstraintsExtension)?.critical, true);
  t.match(leaf.key, /^-----BEGIN PRIVATE KEY-----/, 'PKCS#8 key');
});

t.test('rotation is due at the last third of the validity, or when names or CA change', async (t) => {
  const ca = await generateCa({});
  const start = new Date('2030-01-01T00:00:00Z');
  const leaf = await issueServingCert({ ca, ...names, validityDays: 90, now: start });
  const stored = { caCert: ca.cert, caKey: ca.key, cert: leaf.cert, key: leaf.key };
  t.equal(rotationReason(undefined, names), 'missing');
  t.equal(rotationReason(stored, { ...names, now: new Date(start.getTime() + 59 * DAY) }), 'none');
  t.equal(rotationReason(stored, { ...names, now: new Date(start.getTime() + 61 * DAY) }), 'expiring');
  t.equal(rotationReason(stored, { ...names, dnsNames: ['other.svc'], now: start }), 'names-changed');
  t.equal(rotationReason(stored, { ipAddresses: ['0:0:0:0:0:0:0:1'], now: start }), 'none', 'IPv6 compared as bytes');
  t.equal(rotationReason({ ...stored, caCert: (await generateCa({})).cert }, { ...names, now: start }), 'not-issued-by-ca');
  t.equal(rotationReason({ ...stored, key: ca.key }, { ...names, now: start }), 'key-mismatch');
});

t.test('ensureCertificates keeps the CA (and caBundle) across rotations, writing files atomically', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'certs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const store = fileCertificateStore(dir);
  const first = await ensureCertificates(store, { ...names, validityDays: 30 });
  t.equal(first.reason, 'missing');
  const again = await ensureCertificates(store, { ...names, validityDays: 30 });
  t.equal(again.reason, 'none');
  t.equal(again.certs.cert, first.certs.cert, 'nothing rewritten when nothing is due');
  const later = await ensureCertificates(store, { ...names, validityDays: 30, now: new Date(Date.now() + 25 * DAY) });
  t.equal(later.reason, 'expiring');
  t.not(later.certs.cert, first.certs.cert);
  t.equal(later.caBundle, first.caBundle, 'caBundle unchanged: the apiserver keeps trusting the new certificate');
  t.equal(await readFile(store.paths.cert, 'utf8'), later.certs.cert);
  t.equal(Buffer.from(later.caBundle, 'base64').toString(), first.certs.caCert);
  t.ok(new X509Certificate(later.certs.cert).checkIssued(new X509Certificate(first.certs.caCert)));
});

t.test('a CA near its end is renewed: bundle published first, with the old CA kept', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'certs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const store = fileCertificateStore(dir);
  const first = await ensureCertificates(store, { ...names, caValidityDays: 90, validityDays: 30 });
  const published: string[] = [];
  const now = new Date(Date.now() + 70 * DAY);
  const renewed = await ensureCertificates(store, {
    ...names, caValidityDays: 90, validityDays: 30, now,
    publishCaBundle: async (bundle) => {
      published.push(bundle);
      t.equal(await readFile(store.paths.cert, 'utf8'), first.certs.cert, 'old certificate still served while the bundle is published');
    },
  });
  t.equal(renewed.reason, 'ca-renewed');
  t.same(published, [renewed.caBundle]);
  const cas = splitPem(Buffer.from(renewed.caBundle, 'base64').toString());
  t.equal(cas.length, 2, 'new CA and the old one');
  t.equal(cas[1], first.certs.caCert);
  t.equal(caBundle(renewed.certs, new Date(now.getTime() + 30 * DAY)), Buffer.from(cas[0]!).toString('base64'), 'expired CAs drop out');
});
