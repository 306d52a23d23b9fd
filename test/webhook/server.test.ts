// The webhook over real HTTPS: generated certificates, node's client trusting the CA,
// and certificate rotation under a stream of requests without a restart.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import jsonPatch from 'fast-json-patch';
import { ensureCertificates } from '../../certs/rotation.js';
import { fileCertificateStore } from '../../certs/store.js';
import { startWebhookServer } from '../../webhook/server/server.js';
import { until } from '../helpers/poll.js';
import { admit, loadReview } from '../fixtures/admission/context.js';

interface Reply { status: number; body: any; fingerprint: string }

function post(url: string, ca: string, payload: string | Buffer, options: { path?: string; method?: string; type?: string; agent?: Agent | false } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${options.path ?? '/mutate-pods'}`, {
      method: options.method ?? 'POST', ca, agent: options.agent ?? false,
      headers: { 'content-type': options.type ?? 'application/json', 'content-length': Buffer.byteLength(payload) },
    }, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || 'null'), fingerprint }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

t.test('live HTTPS webhook', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'webhook-'));
  const store = fileCertificateStore(dir);
  const policy = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityDays: 1 };
  const initial = await ensureCertificates(store, policy);
  const ca = initial.certs.caCert;
  let ready = true;
  const events: string[] = [];
  const server = await startWebhookServer({
    port: 0, host: '127.0.0.1', certFile: store.paths.cert, keyFile: store.paths.key, admit,
    certReloadIntervalMs: 200, ready: () => ready, onEvent: (e) => events.push(e.type),
  });
  t.teardown(async () => { await server.close(); await rm(dir, { recursive: true, force: true }); });
  const review = loadReview('bare-driver-pod');
  const text = JSON.stringify(review);

  await t.test('a review gets the patch over TLS verified against the CA', async (t) => {
    const reply = await post(server.url, ca, text);
    t.equal(reply.status, 200);
    t.equal(reply.body.response.uid, review.request.uid);
    t.equal(reply.body.response.patchType, 'JSONPatch');
    const ops = JSON.parse(Buffer.from(reply.body.response.patch, 'base64').toString());
    const pod = jsonPatch.applyPatch(structuredClone(review.request.object), ops, true, false).newDocument;
    t.equal(pod.metadata.annotations['submission-service/admitted-by'], 'submission-service-rules/v1');
    t.equal(reply.fingerprint, fingerprintOf(initial.certs.cert));
  });

  await t.test('transport answers: health, readiness, routing, content type, size', async (t) => {
    t.same((await post(server.url, ca, '', { path: '/healthz', method: 'GET' })).status, 200);
    t.same((await post(server.url, ca, '', { path: '/readyz', method: 'GET' })).status, 200);
    ready = false;
    t.same((await post(server.url, ca, '', { path: '/readyz', method: 'GET' })).status, 503);
    ready = true;
    t.same((await post(server.url, ca, '', { path: '/nope', method: 'GET' })).status, 404);
    t.same((await post(server.url, ca, '', { method: 'GET' })).status, 405);
    t.same((await post(server.url, ca, text, { type: 'text/plain' })).status, 415);
    const bad = await post(server.url, ca, text.slice(0, 200));
    t.match(bad, { status: 200, body: { response: { uid: review.request.uid, allowed: false, status: { code: 400 } } } });
    const padded = { ...review, request: { ...review.request, object: { ...review.request.object, pad: 'x'.repeat(4 * 1024 * 1024) } } };
    const big = await post(server.url, ca, JSON.stringify(padded));
    t.match(big, { status: 200, body: { response: { uid: review.request.uid, allowed: false, status: { code: 413 } } } }, 'too large: a denial with the uid');
    const anonymous = await post(server.url, ca, Buffer.alloc(4 * 1024 * 1024, 0x20));
    t.equal(anonymous.status, 413, 'too large and no uid: HTTP 413, still an answer');
  });

  await t.test('rotating the files under load: no failed request, new certificate served', async (t) => {
    const keepAlive = new Agent({ keepAlive: true, ca, maxSockets: 4 });
    t.teardown(() => keepAlive.destroy());
    let stop = false;
    let ok = 0;
    const failures: string[] = [];
    const seen = new Set<string>();
    const worker = async (agent: Agent | false) => {
      while (!stop) {
        try {
          const reply = await post(server.url, ca, text, { agent });
          if (reply.status === 200 && reply.body.response.allowed === true && reply.body.response.uid === review.request.uid) ok++;
          else failures.push(`status ${reply.status}`);
          seen.add(reply.fingerprint);
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    };
    const started = performance.now();
    const workers = [...Array(4)].map(() => worker(false)).concat([...Array(4)].map(() => worker(keepAlive)));
    const served: string[] = [fingerprintOf(initial.certs.cert)];
    const switchMs: number[] = [];
    // Whatever fails below, the workers must stop or the test never ends.
    t.teardown(() => { stop = true; });
    const reloads = () => events.filter((e) => e === 'cert-reloaded').length;
    for (let round = 0; round < 5; round++) {
      // Traffic between rotations: 20 more answers, however long they take.
      const answered = ok;
      await until(() => ok >= answered + 20 || failures.length > 0, { timeoutMs: 300_000, intervalMs: 20, what: '20 more answers' });
      const before = reloads();
      // A new name each round makes a rotation due without touching the CA.
      const since = performance.now();
      const rotated = await ensureCertificates(store, { ...policy, dnsNames: ['localhost', `r${round}.localhost`] });
      t.equal(rotated.reason, 'names-changed');
      t.equal(rotated.caBundle, initial.caBundle, 'same CA');
      const wanted = fingerprintOf(rotated.certs.cert);
      // The server says it loaded a new pair (only a matching pair loads, and the old one is not new).
      await until(() => reloads() > before, { timeoutMs: 300_000, intervalMs: 20, what: 'the server to reload the rotated files' });
      switchMs.push(Math.round(performance.now() - since));
      const next = await post(server.url, ca, text);
      t.equal(next.fingerprint, wanted, `round ${round}: the next handshake gets the new certificate`);
      served.push(next.fingerprint);
    }
    stop = true;
    await Promise.all(workers);
    const seconds = (performance.now() - started) / 1000;
    t.same(failures, [], 'zero failed requests');
    t.ok(ok >= 100, `${ok} requests answered across the rotations`);
    t.equal(new Set(served).size, 6, 'six distinct certificates served by one process');
    t.ok(served.every((f) => seen.has(f) || f === served[0]), 'the stream itself saw the rotated certificates');
    t.comment(`${ok} reviews in ${seconds.toFixed(1)} s (${Math.round(ok / seconds)}/s, 8 clients, half new TLS connections); reloaded ${switchMs.join(', ')} ms after each rotation began; events: ${events.filter((e) => e === 'cert-reloaded').length} reloads, ${events.filter((e) => e === 'cert-error').length} mismatch retries`);
  });
});
