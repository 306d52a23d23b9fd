// The webhook's certificates in a Secret, on a real kube-apiserver (the test bed): the store,
// two writers racing on the empty Secret the chart creates, and two webhook replicas sharing
// one CA through it, admitting pods the apiserver sends them alternately while one replica
// rotates the CA and the serving certificate and the other follows.
import { X509Certificate } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import t from 'tap';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { ensureNamespace } from '../../cluster/kubernetes/bootstrap.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { newAppName } from '../../cluster/app-name.js';
import { caBundle, ensureCertificates, splitPem } from '../../certs/rotation.js';
import {
  CertificateConflictError, certificatesFromSecret, ensureSharedCertificates, secretCertificateStore,
} from '../../certs/secret-store.js';
import { type CertificateStore, fileCertificateStore } from '../../certs/store.js';
import { ANNOTATION_ADMITTED, bareDriverPod, buildRules } from '../../domain/index.js';
import { startWebhookService } from '../../cli/webhook-service.js';
import { exampleCluster } from '../helpers/api.js';
import { bootstrap, eventually, freePort, startTestbed } from '../helpers/kubernetes.js';
import { tempDir } from '../helpers/temp.js';

const RELEASE = 'submission-service';

/**
 * A TCP relay to a webhook replica that can drop every connection through it. Dropped
 * between two pod creations, it makes the apiserver open (and verify) a new TLS connection
 * for each admission, as it does after a Service endpoint change; otherwise its kept-alive
 * connections would go on with the certificate of their first handshake.
 */
async function relay(t: { teardown(fn: () => unknown): void }, target: number): Promise<{ port: number; dropAll(): void }> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)); };
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(target, '127.0.0.1');
    track(client);
    track(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const dropAll = () => { for (const socket of sockets) socket.destroy(); };
  t.teardown(() => new Promise<void>((ok) => { dropAll(); server.close(() => ok()); }));
  return { port: (server.address() as { port: number }).port, dropAll };
}
const names = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] };

t.test('webhook certificates in a Secret', async (t) => {
  const dir = tempDir(t, 'subsvc-certsecret-');
  const started = Date.now();
  const testbed = await startTestbed(join(dir, 'testbed'));
  t.teardown(() => testbed.stop());
  t.comment(`test bed ready in ${Date.now() - started} ms`);
  const clients = kubeClients(testbed.kubeconfig);
  const { core } = clients;
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps' });
  await bootstrap(clients, rules, false);
  await ensureNamespace(clients, RELEASE);
  /** An empty Secret, as the Helm chart creates it. */
  const emptySecret = (name: string) => core.createNamespacedSecret({ namespace: RELEASE, body: { metadata: { name }, type: 'Opaque' } });
  const readSecret = (name: string) => core.readNamespacedSecret({ namespace: RELEASE, name });

  t.test('round trip, type, and a stale write refused', async (t) => {
    // Absent: read gives nothing, the first write creates it as a kubernetes.io/tls Secret.
    const store = secretCertificateStore({ core, namespace: RELEASE, name: 'absent' });
    t.equal(await store.read(), undefined, 'absent Secret: nothing stored');
    const first = await ensureCertificates(store, names);
    t.equal(first.reason, 'missing');
    const created = await readSecret('absent');
    t.equal(created.type, 'kubernetes.io/tls');
    t.same(Object.keys(created.data ?? {}).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    t.equal(Buffer.from(created.data!['tls.crt']!, 'base64').toString(), first.certs.cert, 'base64 PEM under tls.crt');
    const other = secretCertificateStore({ core: kubeClients(testbed.kubeconfig).core, namespace: RELEASE, name: 'absent' });
    t.same(await other.read(), first.certs, 'another store reads back what was written');
    t.equal((await ensureCertificates(other, names)).reason, 'none', 'and keeps it');

    // Empty (the chart's): read gives nothing; the write keeps its type, labels and other keys.
    await core.createNamespacedSecret({ namespace: RELEASE, body: { metadata: { name: 'empty', labels: { keep: 'me' } }, type: 'Opaque' } });
    const chartStore = secretCertificateStore({ core, namespace: RELEASE, name: 'empty' });
    t.equal(await chartStore.read(), undefined, 'empty Secret: nothing stored');
    const filled = await ensureCertificates(chartStore, names);
    const secret = await readSecret('empty');
    t.equal(secret.type, 'Opaque', 'the type of an existing Secret is kept (it is immutable)');
    t.same(secret.metadata?.labels, { keep: 'me' });
    t.same(certificatesFromSecret(secret), filled.certs);
    t.equal(chartStore.resourceVersion, secret.metadata?.resourceVersion);

    // Stale: a write based on an old read is refused and leaves the Secret as it was.
    const a = secretCertificateStore({ core, namespace: RELEASE, name: 'empty' });
    const b = secretCertificateStore({ core, namespace: RELEASE, name: 'empty' });
    await a.read();
    await b.read();
    const fromB = await ensureCertificates(b, { ...names, dnsNames: ['other.example'] });
    t.equal(fromB.reason, 'names-changed');
    await t.rejects(a.write(filled.certs), CertificateConflictError, 'a stale write gets 409');
    t.same(await a.read(), fromB.certs, 'the newer pair stays');
  });

  t.test('two writers racing on an empty Secret end with one CA and one serving pair', async (t) => {
    for (let round = 0; round < 5; round++) {
      const name = `race-${round}`;
      await emptySecret(name);
      // Both read the empty Secret before either writes (a barrier in read), the worst case.
      let reads = 0;
      let bothRead!: () => void;
      const barrier = new Promise<void>((ok) => { bothRead = ok; });
      const racer = (): CertificateStore => {
        const store = secretCertificateStore({ core: kubeClients(testbed.kubeconfig).core, namespace: RELEASE, name });
        let first = true;
        return {
          read: async () => {
            const value = await store.read();
            if (first) { first = false; if (++reads === 2) bothRead(); await barrier; }
            return value;
          },
          write: (certs) => store.write(certs),
        };
      };
      const [one, two] = await Promise.all([ensureSharedCertificates(racer(), names), ensureSharedCertificates(racer(), names)]);
      t.same([one.reason, two.reason].sort(), ['missing', 'none'], `round ${round}: one issued, the other adopted`);
      t.same(one.certs, two.certs, `round ${round}: both hold the same pair`);
      const stored = certificatesFromSecret(await readSecret(name))!;
      t.same(stored, one.certs, `round ${round}: and it is the one in the Secret`);
      t.equal(splitPem(stored.caCert).length, 1, `round ${round}: one CA`);
      t.equal(one.caBundle, two.caBundle);
    }
  });

  t.test('two webhook replicas: one caBundle, admission through either, rotation with no failed admission', async (t) => {
    const secret = 'submission-service-webhook-cert';
    await emptySecret(secret);
    const registrationName = 'submission-service';
    const admissionApi = clients.kc.makeApiClient(AdmissionregistrationV1Api);
    const reviews = { a: 0, b: 0 };
    const [portA, portB] = [await freePort(), await freePort()];
    const urlOf = (port: number) => `https://127.0.0.1:${port}/mutate-pods`;
    const relays = { a: await relay(t, portA), b: await relay(t, portB) };
    // Short lives, so that a check pretending to be 4 minutes later renews both the CA and
    // the serving certificate, while certificates it issues are valid already (they are
    // backdated 5 minutes, certs/generate.ts): a `now` far ahead would issue certificates
    // that are not valid yet.
    const life = 8 / (24 * 60); // 8 minutes, in days
    const replica = (which: 'a' | 'b', port: number) => startWebhookService({
      clients: kubeClients(testbed.kubeconfig), rules, certDir: join(dir, `certs-${which}`), port, host: '127.0.0.1', ...names,
      registration: { name: registrationName, url: urlOf(relays[which].port) },
      certSecret: { namespace: RELEASE, name: secret },
      validityDays: life, caValidityDays: life,
      rotationCheckMs: 500, caBundleSettleMs: 1_000,
      onReview: () => { reviews[which]++; },
    });
    const startedAt = Date.now();
    // Both start at once on the empty Secret (and with no webhook configuration yet).
    const [a, b] = await Promise.all([replica('a', portA), replica('b', portB)]);
    t.teardown(async () => { await a.close(); await b.close(); });
    t.comment(`two replicas started in ${Date.now() - startedAt} ms`);

    const stored = certificatesFromSecret(await readSecret(secret))!;
    t.ok(stored, 'the Secret holds the pair');
    t.equal(splitPem(stored.caCert).length, 1, 'one CA');
    t.equal(a.caBundle, b.caBundle, 'both replicas publish the same caBundle');
    t.equal(a.caBundle, caBundle(stored), 'that of the CA in the Secret');
    const mwc = await admissionApi.readMutatingWebhookConfiguration({ name: registrationName });
    t.same(mwc.webhooks!.map((w) => w.clientConfig.caBundle), [a.caBundle, a.caBundle], 'and it is registered');
    for (const which of ['a', 'b']) {
      t.same(await fileCertificateStore(join(dir, `certs-${which}`)).read(), stored, `replica ${which} serves a copy of the Secret's pair`);
    }
    const served = async (port: number) => new Promise<Buffer>((ok, fail) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        ok(socket.getPeerCertificate().raw);
        socket.end();
      }).once('error', fail);
    });
    t.ok((await served(portA)).equals(new X509Certificate(stored.cert).raw), 'replica a serves it');
    t.ok((await served(portB)).equals(new X509Certificate(stored.cert).raw), 'replica b serves it');

    // The apiserver calls one URL; moving it between the replicas (their relays) before each
    // pod alternates them, and dropping the connections makes each admission a new handshake.
    const sendTo = (which: 'a' | 'b') => {
      relays.a.dropAll();
      relays.b.dropAll();
      return admissionApi.patchMutatingWebhookConfiguration({
        name: registrationName,
        body: [0, 1].map((i) => ({ op: 'replace', path: `/webhooks/${i}/clientConfig/url`, value: urlOf(relays[which].port) })),
      });
    };
    let created = 0;
    const failures: string[] = [];
    const createPods = async (stop: () => boolean) => {
      for (let i = 0; !stop(); i++) {
        await sendTo(i % 2 === 0 ? 'a' : 'b');
        const appName = newAppName('rotation');
        try {
          const pod = await core.createNamespacedPod({ namespace: rules.namespace, body: bareDriverPod({ appName, jobName: 'rotation', namespace: rules.namespace }) });
          if (!pod.metadata?.annotations?.[ANNOTATION_ADMITTED]) failures.push(`${appName}: not mutated`);
          created++;
        } catch (error) {
          failures.push(`${appName}: ${(error as Error).message.slice(0, 300)}`);
        }
      }
    };

    // Before the rotation: both replicas admit.
    let stopping = false;
    const loop = createPods(() => stopping);
    await eventually(async () => reviews, (r) => r.a >= 5 && r.b >= 5, { timeoutMs: 30_000, what: 'admissions by both replicas' });
    t.same(failures, [], `no failed pod creation before the rotation (${created} pods)`);

    // Replica a renews the CA and the serving certificate, as if 4 minutes later; b follows
    // on its own periodic check. Pods keep being created, alternating, all along.
    const rotationStarted = Date.now();
    const before = { ...reviews };
    const createdBefore = created;
    const rotation = await a.checkCertificates({ now: new Date(Date.now() + 4 * 60_000) });
    t.equal(rotation.reason, 'ca-renewed', 'replica a renewed the CA and the certificate');
    t.ok(rotation.installed, 'and serves the new pair');
    const rotated = certificatesFromSecret(await readSecret(secret))!;
    t.not(rotated.cert, stored.cert, 'a new serving certificate in the Secret');
    t.equal(splitPem(rotated.caCert).length, 2, 'the new CA, with the old one still trusted after it');
    t.equal(splitPem(rotated.caCert)[1], splitPem(stored.caCert)[0]);
    const newCert = new X509Certificate(rotated.cert).raw;
    t.ok((await served(portA)).equals(newCert), 'replica a serves the new certificate');
    await eventually(() => served(portB), (raw) => raw.equals(newCert), { timeoutMs: 20_000, intervalMs: 100, what: 'replica b to serve the new certificate' });
    t.comment(`rotation by a, followed by b, in ${Date.now() - rotationStarted} ms`);
    t.same(await fileCertificateStore(join(dir, 'certs-b')).read(), rotated, "replica b's copy is the Secret's new pair");
    t.equal(b.caBundle, a.caBundle, 'both publish the same new caBundle');
    t.equal(a.caBundle, caBundle(rotated));
    const after = await admissionApi.readMutatingWebhookConfiguration({ name: registrationName });
    t.same(after.webhooks!.map((w) => w.clientConfig.caBundle), [a.caBundle, a.caBundle], 'the registered caBundle has both CAs');

    // After it: both replicas still admit, with the new certificate.
    const mid = { ...reviews };
    await eventually(async () => reviews, (r) => r.a >= mid.a + 5 && r.b >= mid.b + 5, { timeoutMs: 30_000, what: 'admissions by both replicas after the rotation' });
    stopping = true;
    await loop;
    t.ok(reviews.a > before.a && reviews.b > before.b, `both replicas admitted during and after the rotation (a ${reviews.a - before.a}, b ${reviews.b - before.b})`);
    t.same(failures, [], `no failed pod creation during the rotation (${created - createdBefore} pods, ${created} in all)`);

    // A later check of either replica changes nothing: they agree.
    for (const replica of [a, b]) {
      const check = await replica.checkCertificates();
      t.same([check.reason, check.installed], ['none', false]);
    }
  });
});
