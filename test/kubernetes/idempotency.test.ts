// Idempotency-Key in Kubernetes mode, across API replicas: the key (hashed with the caller's key
// id) names the Application, so the apiserver settles a race (one create wins, the others meet
// 409 AlreadyExists, read the winner and compare the body fingerprint it carries). The race comes
// from raw HTTP and from the Python client (clients/python) in 50 threads.
import { join } from 'node:path';
import t from 'tap';
import { ANNOTATION_IDEMPOTENCY } from '../../cluster/app-record.js';
import { type ApiInstance, startApi, startKubeBed } from '../helpers/kubernetes.js';
import { run } from '../helpers/pytest.js';
import { pythonClientDir, pythonClientVenv } from '../helpers/python-client-venv.js';

// 50 threads, one Client per replica, released together: each thread's submit() with one key.
const PYTHON_RACE = `
import json, sys, threading
from concurrent.futures import ThreadPoolExecutor
from submission_service import Client
urls, key, body = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
clients = [Client(url, timeout=120) for url in urls]
start = threading.Barrier(50)
def submit(i):
    start.wait()
    return clients[i % len(clients)].submit(job_name=body["jobName"], config_overrides=body["configOverrides"],
                                            labels=body["labels"], idempotency_key=key)["appName"]
with ThreadPoolExecutor(max_workers=50) as pool:
    print(json.dumps(list(pool.map(submit, range(50)))))
`;

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

  t.test('50 parallel submissions by the Python client with one key, over the replicas, make one Application', async (t) => {
    const venv = await pythonClientVenv();
    const pyBody = { ...body, jobName: 'idem-kube-py' };
    // The checkout's client from its source (no install into the shared virtualenv, which the
    // client's own suite reinstalls beside this file).
    const race = await run(join(venv, 'bin', 'python'), ['-c', PYTHON_RACE, JSON.stringify(replicas.map((r) => r.baseUrl)), 'kube-py-race', JSON.stringify(pyBody)], {
      env: { ...process.env, PYTHONPATH: join(pythonClientDir, 'src') },
    });
    t.equal(race.code, 0, race.output.slice(-4000));
    const names: string[] = JSON.parse(race.output.split('\n').reverse().find((line) => line.startsWith('[')) ?? '[]');
    t.equal(names.length, 50, 'every thread had an answer');
    t.equal(new Set(names).size, 1, 'every answer names the same application');
    const applications = (await bed.applications()).filter((a) => a.spec.jobName === 'idem-kube-py');
    t.same(applications.map((a) => a.metadata.name), [names[0]], 'one Application in the cluster');
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
