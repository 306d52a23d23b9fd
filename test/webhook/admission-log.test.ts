// The webhook over real HTTPS leaves a trace of every admission: one log line with the
// review's uid, the application and the outcome (an admission that threw is an error line
// with what it threw), admissions by outcome and their latency on the plain-HTTP
// /metrics listener, and the certificates' notAfter.
import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { ensureCertificates } from '../../certs/rotation.js';
import { fileCertificateStore } from '../../certs/store.js';
import { startMetricsServer } from '../../lib/metrics-server.js';
import { startWebhookServer } from '../../webhook/server/server.js';
import { admit, loadReview } from '../fixtures/admission/context.js';
import { captureLog, sample } from '../helpers/metrics.js';
import { tempDir } from '../helpers/temp.js';

function post(url: string, ca: string, payload: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/mutate-pods`, { method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString())));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

t.test('each admission is logged with its uid and counted; one that throws is an error line', async (t) => {
  const dir = tempDir(t, 'webhook-log-');
  const store = fileCertificateStore(dir);
  const { certs } = await ensureCertificates(store, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityDays: 2 });
  const log = captureLog();
  const BOOM = 'boom-20250101-120000-aaaaa';
  // The real admission, except for one pod: that one throws, as a bug in admission would.
  const admitOrThrow = (pod: V1Pod, review: { dryRun: boolean }) => {
    if (pod.metadata?.name === BOOM) throw new TypeError('admission bug for the test');
    return admit(pod, review);
  };
  const server = await startWebhookServer({ port: 0, host: '127.0.0.1', certFile: store.paths.cert, keyFile: store.paths.key, admit: admitOrThrow, logger: log.logger });
  t.teardown(() => server.close());
  const metrics = await startMetricsServer({ port: 0, host: '127.0.0.1' });
  t.teardown(() => metrics.close());
  const scrape = async () => {
    const res = await fetch(metrics.url);
    t.equal(res.status, 200);
    return res.text();
  };
  const before = await scrape();

  const good = loadReview('bare-driver-pod');
  const admitted = await post(server.url, certs.caCert, JSON.stringify(good));
  t.equal(admitted.response.allowed, true);
  const bad = loadReview('bare-driver-pod');
  bad.request.uid = 'b00m0000-0000-4000-8000-000000000001';
  bad.request.name = BOOM;
  bad.request.object.metadata.name = BOOM;
  delete bad.request.object.metadata.labels['submission-service/app-name'];
  const failed = await post(server.url, certs.caCert, JSON.stringify(bad));
  t.equal(failed.response.allowed, false, 'fails closed');
  t.equal(failed.response.status.code, 500);
  const other = await post(server.url, certs.caCert, JSON.stringify(loadReview('other-pod')));
  t.equal(other.response.allowed, true);

  const admittedLine = log.lines.find((l) => l.uid === good.request.uid);
  t.match(admittedLine, { level: 30, outcome: 'admitted', app: good.request.object.metadata.labels['submission-service/app-name'] }, 'admitted: info line with uid and app');
  t.type(admittedLine?.durationMs, 'number');
  const failedLine = log.lines.find((l) => l.uid === bad.request.uid);
  t.match(failedLine, { level: 50, outcome: 'failed', app: BOOM, msg: 'admission failed' }, 'threw: error line with uid and app');
  t.match(failedLine?.err, { type: 'TypeError', message: 'admission bug for the test' }, 'with the error');
  t.match(failedLine?.err?.stack, /admission-log\.test\.ts/, 'and its stack');
  t.match(log.lines.find((l) => l.uid === loadReview('other-pod').request.uid), { outcome: 'ignored' });

  const after = await scrape();
  const moved = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
  t.equal(moved('submission_service_admissions_total', { outcome: 'admitted' }), 1);
  t.equal(moved('submission_service_admissions_total', { outcome: 'failed' }), 1);
  t.equal(moved('submission_service_admissions_total', { outcome: 'ignored' }), 1);
  t.equal(moved('submission_service_admission_duration_seconds_count', {}), 3, 'every admission timed');
  t.equal(moved('submission_service_admission_duration_seconds_bucket', { outcome: 'failed', le: '+Inf' }), 1);
  const notAfter = (pem: string) => Math.round(Date.parse(new X509Certificate(pem).validTo) / 1000);
  t.equal(sample(after, 'submission_service_certificate_not_after_seconds', { certificate: 'serving' }), notAfter(certs.cert), 'serving notAfter');
  t.equal(sample(after, 'submission_service_certificate_not_after_seconds', { certificate: 'ca' }), notAfter(certs.caCert), 'CA notAfter');
  const notFound = await fetch(metrics.url.replace('/metrics', '/other'));
  t.equal(notFound.status, 404);
  await notFound.body?.cancel();
});
