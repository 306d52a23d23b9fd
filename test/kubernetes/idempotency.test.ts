// Idempotency-Key in Kubernetes mode, across API replicas: the key (hashed with the caller's key
// id) names the Application, so the apiserver settles a race (one create wins, the others meet
// 409 AlreadyExists, read the winner and compare the body fingerprint it carries).
import t from 'tap';
import { ANNOTATION_IDEMPOTENCY } from '../../cluster/app-record.js';
import { type ApiInstance, startApi, startKubeBed } from '../helpers/kubernetes.js';

async function post(baseUrl: string, body: unknown, key: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${baseUrl}/api/apps/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, json: await res.json() };
}

t.test('Idempotency-Key on Kubernetes, three API replicas', async (t) => {
  const bed = await startKubeBed(t);
  const replicas: ApiInstance[] = [bed.api];
  for (let i = 0; i < 2; i += 1) {
    const api = await startApi(bed.testbed.kubeconfig, bed.namespace, { rules: bed.rules, controller: false });
    t.teardown(() => api.close());
    replicas.push(api);
  }
  const body = { jobName: 'idem-kube', configOverrides: { executor: { cores: 2 } }, labels: { team: 'data' } };

  t.test('50 parallel submissions with one key, spread over the replicas, make one Application', async (t) => {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => post(replicas[i % replicas.length].baseUrl, body, '"kube-race"')));
    const statuses = answers.map((a) => a.status);
    t.same(statuses.filter((s) => s !== 200 && s !== 201), [], 'every answer is 200 or 201');
    t.equal(statuses.filter((s) => s === 201).length, 1, 'one create');
    const names = new Set(answers.map((a) => a.json.appName));
    t.equal(names.size, 1, 'every answer names the same application');
    const applications = (await bed.applications()).filter((a) => a.spec.jobName === 'idem-kube');
    t.equal(applications.length, 1, 'one Application in the cluster');
    const [appName] = names;
    t.equal(applications[0].metadata.name, appName);
    t.match((applications[0].metadata as { annotations?: Record<string, string> }).annotations?.[ANNOTATION_IDEMPOTENCY], /^[0-9a-f]{32}\.[0-9a-f]{32}$/, 'the key hash and body fingerprint are on the Application');
    t.equal((await bed.pods(`spark-role=driver`)).filter((p) => p.metadata?.name === appName).length, 1, 'one driver pod');
  });

  t.test('the same key with another body answers 422 on any replica', async (t) => {
    for (const api of replicas) {
      const res = await post(api.baseUrl, { ...body, labels: { team: 'other' } }, '"kube-race"');
      t.equal(res.status, 422);
      t.equal(res.json.code, 'IDEMPOTENCY_KEY_REUSED');
    }
    t.equal((await bed.applications()).filter((a) => a.spec.jobName === 'idem-kube').length, 1, 'still one Application');
  });
});
