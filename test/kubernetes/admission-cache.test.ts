// The webhook's cache on the real apiserver: only 404 means absent. A read refused for another
// reason (here RBAC's 403, for a ServiceAccount with no rights) fails the review closed with
// 503 (webhook/server/server.ts denies a review whose lookup threw) instead of answering
// "template not found"; hits and misses are counted.
import t from 'tap';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { register } from 'prom-client';
import { AdmissionCache } from '../../cluster/kubernetes/admission-cache.js';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { startKubeBed } from '../helpers/kubernetes.js';

const review = (template: string) => ({
  apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
  request: {
    uid: 'uid-403', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE',
    object: { metadata: { name: 'x-20261123-000000-abcde', labels: { 'submission-service/job-name': 'x', 'submission-service/config-template': template } }, spec: { containers: [{ name: 'spark-kubernetes-driver' }] } },
  },
});

async function lookups(): Promise<string> {
  return (await register.getSingleMetricAsString('submission_service_admission_cache_lookups_total'));
}

t.test('admission cache: 404 is absent, 403 fails closed', async (t) => {
  const bed = await startKubeBed(t);
  const { core } = bed.clients;
  await core.createNamespacedServiceAccount({ namespace: bed.namespace, body: { metadata: { name: 'nobody' } } });
  const token = await core.createNamespacedServiceAccountToken({ name: 'nobody', namespace: bed.namespace, body: { spec: { audiences: [] } } });
  const admin = bed.clients.kc.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'bed', server: admin.server, caData: admin.caData, skipTLSVerify: false }],
    users: [{ name: 'nobody', token: token.status!.token }],
    contexts: [{ name: 'nobody', cluster: 'bed', user: 'nobody' }],
    currentContext: 'nobody',
  });
  const nobody: KubeClients = { kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), server: admin.server };

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
