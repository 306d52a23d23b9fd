// The webhook's cache on the real apiserver: only 404 means absent. A read refused for another
// reason (here RBAC's 403, for a ServiceAccount with no rights) fails the review closed with
// 503 (webhook/server/server.ts denies a review whose lookup threw) instead of answering
// "template not found"; hits and misses are counted. A lookup that does not answer in time (the
// webhook's link to the apiserver hangs) is denied with 503 too, never answered from the miss.
// The three tests share one test bed (its control plane, webhook and API, booted once): each
// works with objects and proxies of its own, and the last one alone re-registers the webhook.
import tap from 'tap';
import { register } from 'prom-client';
import { AdmissionCache } from '../../cluster/kubernetes/admission-cache.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startWebhookService } from '../../cli/webhook-service.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { mutatingWebhookConfiguration } from '../../webhook/server/registration.js';
import { clientsAs, eventually, freePort, type KubeBed, register as registerWebhook, sparkExecutorPod, startKubeBed, WEBHOOK_NAME } from '../helpers/kubernetes.js';
import { startStallProxy } from '../helpers/stall-proxy.js';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';

const review = (template: string) => ({
  apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
  request: {
    uid: 'uid-403', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE',
    object: { metadata: { name: 'x-20261123-000000-abcde', labels: { 'submission-service/job-name': 'x', 'submission-service/config-template': template } }, spec: { containers: [{ name: 'spark-kubernetes-driver' }] } },
  },
});

let booted: Promise<KubeBed> | undefined;
/** The file's one bed, booted by the first test that needs it and stopped at the file's end. */
const sharedBed = (): Promise<KubeBed> => (booted ??= startKubeBed(tap));

async function lookups(): Promise<string> {
  return (await register.getSingleMetricAsString('submission_service_admission_cache_lookups_total'));
}

tap.test('admission cache: 404 is absent, 403 fails closed', async (t) => {
  const bed = await sharedBed();
  const { core } = bed.clients;
  await core.createNamespacedServiceAccount({ namespace: bed.namespace, body: { metadata: { name: 'nobody' } } });
  const nobody = await clientsAs(bed.clients, bed.namespace, 'nobody');

  const allowed = new AdmissionCache(bed.clients, bed.namespace, () => undefined);
  await allowed.prepare(review('absent'));
  t.notOk(allowed.templates.has('absent'), 'a missing template is absent (admission answers 404)');
  t.match(await lookups(), /cache="templates",result="miss"/, 'the miss is counted');

  const logged: string[] = [];
  const refused = new AdmissionCache(nobody, bed.namespace, (m) => logged.push(m));
  await t.rejects(refused.prepare(review('nightly')), /403/, 'a 403 is not "absent"');
  t.match(logged.join('\n'), /config template nightly failed \(403\)/, 'and it is logged');

  t.equal(logged.length, 1);
});

tap.test('a webhook start that fails after its cache started leaves no watch behind', async (t) => {
  const bed = await sharedBed();
  // Its apiserver connections go through a proxy that counts them.
  const proxy = await startStallProxy(new URL(bed.testbed.server));
  t.teardown(() => proxy.close());
  const clients = kubeClients(proxy.kubeconfig(bed.testbed.kubeconfig, join(bed.dir, 'counted-kubeconfig')));
  // The certificate directory cannot be made (a file is in its way): the start fails at its
  // first certificate check, after the templates' informer has started.
  const blocked = join(bed.dir, 'not-a-directory');
  writeFileSync(blocked, 'x');
  await t.rejects(startWebhookService({
    clients, rules: bed.rules, certDir: join(blocked, 'certs'), port: await freePort(), host: '127.0.0.1', dnsNames: ['localhost'],
  }), /ENOTDIR|not a directory/, 'the start fails');
  await eventually(async () => proxy.open(), (open) => open === 0, { what: 'no connection of the failed webhook open (its templates watch stopped)' });
  t.equal(proxy.open(), 0, 'no connection left open');
});

tap.test("a lookup that does not answer in time is denied with 503, not answered from the miss", async (t) => {
  const bed = await sharedBed();
  // A webhook whose link to the apiserver goes through a proxy that will stop forwarding,
  // registered in place of the bed's own.
  const proxy = await startStallProxy(new URL(bed.testbed.server));
  t.teardown(() => proxy.close());
  const clients = kubeClients(proxy.kubeconfig(bed.testbed.kubeconfig, join(bed.dir, 'proxied-kubeconfig')));
  const port = await freePort();
  const webhook = await startWebhookService({
    clients, rules: bed.rules, certDir: join(bed.dir, 'slow-certs'), port, host: '127.0.0.1', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'],
  });
  t.teardown(() => webhook.close());
  await registerWebhook(bed.clients, mutatingWebhookConfiguration({
    name: WEBHOOK_NAME, url: `https://127.0.0.1:${port}/mutate-pods`, caBundle: webhook.caBundle, namespaces: [bed.namespace],
  }) as V1MutatingWebhookConfiguration);
  const warm = await bed.call('POST', '/api/apps/?dryRun=true', { jobName: 'warm' });
  t.equal(warm.status, 200, 'the slow webhook admits while its link works');

  proxy.stall();
  // A template created now exists, but the stalled webhook has not seen it and cannot read it.
  t.equal((await bed.call('POST', '/api/config-templates/', { name: 'fresh', config: { executor: { cores: 2 } } })).status, 201);
  const named = await bed.call('POST', '/api/apps/', { jobName: 'slow', configTemplateName: 'fresh' });
  t.equal(named.status, 503, 'a submission naming it: 503 (before: 404 "template does not exist")');
  t.match(named.json.message, /did not answer within 2000 ms/);
  // A driver admitted now (no lookup needed), then its executor: the stalled webhook does not
  // know the driver and cannot read it.
  const driver = await bed.call('POST', '/api/apps/', { jobName: 'slowexec' });
  t.equal(driver.status, 201, 'a driver needs no lookup');
  const pod = await bed.clients.core.readNamespacedPod({ name: driver.json.appName, namespace: bed.namespace });
  const executor = await bed.clients.core.createNamespacedPod({ namespace: bed.namespace, body: sparkExecutorPod(pod, 1, bed.namespace) }).then(() => undefined, (e: { code?: number; body?: unknown }) => e);
  t.equal(executor?.code, 503, 'its executor: refused with 503 (before: let through unsized)');
  t.match(String(executor?.body), /did not answer within 2000 ms/);

  proxy.resume();
  const again = await bed.call('POST', '/api/apps/?dryRun=true', { jobName: 'slow', configTemplateName: 'fresh' });
  t.equal(again.status, 200, 'answered again once the link works');
  t.equal(again.json.config.executor.cores, 2, 'from the template');
});
