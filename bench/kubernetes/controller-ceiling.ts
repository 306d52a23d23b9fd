// Submissions per minute with the controller running, side by side in one run with the
// apiserver's own ceiling measured with no client library: the same number of Application
// creates plus bare pod creates (the two writes a submission makes, with the bodies the
// service writes; the pod, in a namespace our webhook does not watch, carries its image
// instead) as raw keep-alive HTTPS requests with the kubeconfig's client certificate
// (raw-client.ts), at the same concurrency. The ceiling runs in a namespace of its own so
// that the service (its cache, its controller) does not see it. Goal: >= 70%.
//
// Beside the rates it prints what each item cost (costs.ts): apiserver requests by verb and
// resource, watch events sent, webhook calls, and CPU ms per process.
//
//   node --import tsx bench/kubernetes/controller-ceiling.ts
//   env: CEILING_COUNT (400 per phase), CEILING_CONCURRENCY (16), CEILING_ROUNDS (2), SUBMISSION_SERVICE_TESTBED,
//        CEILING_PIN=1 (the control plane on a core of its own, as on a real cluster: pin.ts),
//        CEILING_PROFILE=DIR (a V8 CPU profile of the service over each POST /api/apps/ phase, written to DIR),
//        CEILING_WARMUP (20: untimed submissions before the rounds)
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { resolve } from 'node:path';
import { CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { newAppName } from '../../cluster/app-name.js';
import { applicationResource } from '../../cluster/kubernetes/records.js';
import { rulesFrom } from '../../cli/rules.js';
import { admitPod, applicationLabels, LABEL_JOB } from '../../domain/index.js';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { envNumber, fmt, load, saveSummary, table } from '../lib.js';
import { type PhaseCosts, perItem, servePid, snapshot } from './costs.js';
import { type RawClient, rawClient, send } from './raw-client.js';
import { pinControlPlane } from './pin.js';
import { deleteAllPods, NAMESPACE, SPARK_IMAGE, withClusterUp } from './testbed.js';

const COUNT = envNumber('CEILING_COUNT', 400);
const CONCURRENCY = envNumber('CEILING_CONCURRENCY', 16);
const ROUNDS = envNumber('CEILING_ROUNDS', 2);
// Untimed submissions before the rounds (20, or a phase's count when smaller): more of them ask
// whether the service's figure is its JIT warming up (bench/kubernetes/README.md: 3,000 first changed nothing visible).
const WARMUP = envNumber('CEILING_WARMUP', Math.min(20, COUNT));
const PIN = process.env.CEILING_PIN === '1';
// A directory: the service's CPU profile of each POST /api/apps/ phase is written there (testbed/cpu-profile.ts).
const PROFILE = process.env.CEILING_PROFILE ? resolve(process.env.CEILING_PROFILE) : undefined;
if (PROFILE) process.env.TESTBED_CPU_PROFILE_DIR = PROFILE; // `testbed up` passes its environment to the service
const GOAL = 0.7;
const CEILING_NS = 'ceiling';
const JOB = 'bench';
const FIELD_MANAGER = 'submission-service';

const OVERRIDES = { type: 'Python' as const, mainApplicationFile: 'local:///opt/spark/examples/src/main/python/pi.py' };
const BODY = JSON.stringify({ jobName: JOB, configOverrides: OVERRIDES });

/** `count` jobs at `concurrency` in flight; per minute. */
async function phase(count: number, concurrency: number, one: (i: number) => Promise<void>): Promise<{ perMinute: number; ms: number }> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await one(next++);
  }));
  const ms = performance.now() - started;
  return { perMinute: (count / ms) * 60_000, ms };
}

// The test bed's rules (no node-pool file: this machine's pool), for the ceiling with admitted pods.
const RULES = rulesFrom(undefined, CEILING_NS);

/** The pod the API writes for a submission (admitted in-process), in the ceiling's namespace. */
function admittedPod(appName: string): V1Pod {
  const bare = bareDriverPod({ appName, jobName: JOB, namespace: CEILING_NS, configOverrides: OVERRIDES });
  const admission = admitPod(bare, { rules: RULES, templates: () => undefined, applications: () => undefined, newAppName: () => appName });
  if (admission.outcome !== 'admitted') throw new Error(`the bench's pod was not admitted: ${admission.outcome}`);
  return JSON.parse(JSON.stringify(admission.pod)) as V1Pod;
}

/**
 * The two writes of one submission, as the service makes them (Application, then its pod owned
 * by it), raw. `admitted`: the pod as the API writes it (4-5 KB) instead of the bare pod (0.5 KB),
 * so that the apiserver's cost of the larger pod is in the ceiling too.
 */
async function ceilingItem(raw: RawClient, admitted = false): Promise<void> {
  const appName = newAppName(JOB);
  const pod: V1Pod = admitted ? admittedPod(appName) : bareDriverPod({ appName, jobName: JOB, namespace: CEILING_NS, configOverrides: OVERRIDES });
  const labels = pod.metadata!.labels!;
  const application = applicationResource(
    { appName, namespace: CEILING_NS, labels: applicationLabels(labels), jobName: JOB, configTemplateName: '', submittedBy: null },
    { [LABEL_JOB]: JOB },
  );
  const created = await send(raw, `/apis/submission-service.io/v1/namespaces/${CEILING_NS}/applications?fieldManager=${FIELD_MANAGER}`, JSON.stringify(application));
  if (created.status !== 201) throw new Error(`create Application: ${created.status} ${created.body.slice(0, 300)}`);
  const uid = (JSON.parse(created.body) as { metadata: { uid: string } }).metadata.uid;
  pod.metadata!.ownerReferences = [{ apiVersion: 'submission-service.io/v1', kind: 'Application', name: appName, uid, controller: true }];
  if (!admitted) pod.spec!.containers[0].image = SPARK_IMAGE; // no webhook here, and validation wants an image
  const res = await send(raw, `/api/v1/namespaces/${CEILING_NS}/pods?fieldManager=${FIELD_MANAGER}`, JSON.stringify(pod));
  if (res.status !== 201) throw new Error(`create pod: ${res.status} ${res.body.slice(0, 300)}`);
}

/** A call between phases, tried again when a loaded machine drops the connection. */
async function again<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 5) throw error;
      process.stderr.write(`cleaning: ${(error as Error).message}; again\n`);
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  }
}

async function clean(custom: CustomObjectsApi, core: Parameters<typeof deleteAllPods>[0]) {
  for (const namespace of [NAMESPACE, CEILING_NS]) {
    await again(() => custom.deleteCollectionNamespacedCustomObject({ group: 'submission-service.io', version: 'v1', namespace, plural: 'applications' }));
    await again(() => deleteAllPods(core, namespace));
  }
  // Let the service's cache and controller digest the deletions before the next phase.
  await new Promise((ok) => setTimeout(ok, 2000));
}

function costTable(ceiling: PhaseCosts[], api: PhaseCosts[], other = 'POST /api/apps/'): string {
  const mean = (list: PhaseCosts[], kind: keyof PhaseCosts, key: string) => list.reduce((a, c) => a + (c[kind][key] ?? 0), 0) / list.length;
  const rows: string[][] = [];
  for (const kind of ['requests', 'cpuMs'] as const) {
    const keys = [...new Set([...ceiling, ...api].flatMap((c) => Object.keys(c[kind])))].sort();
    for (const key of keys) {
      // Leave out the background (leases, discovery, other kinds' watches): under 0.05 per item on both sides.
      if (kind === 'requests' && mean(ceiling, kind, key) < 0.05 && mean(api, kind, key) < 0.05) continue;
      rows.push([kind === 'cpuMs' ? `CPU ms: ${key}` : key, fmt(mean(ceiling, kind, key), 2), fmt(mean(api, kind, key), 2)]);
    }
    if (kind === 'cpuMs') {
      const total = (list: PhaseCosts[]) => list.reduce((a, c) => a + Object.values(c.cpuMs).reduce((x, y) => x + y, 0), 0) / list.length;
      rows.push(['CPU ms: all of the above', fmt(total(ceiling), 2), fmt(total(api), 2)]);
    }
  }
  return table(['per item (mean of rounds)', 'ceiling', other], rows);
}

await withClusterUp('controller-ceiling', async (tb) => {
  const custom = tb.kc.makeApiClient(CustomObjectsApi);
  await tb.core.createNamespace({ body: { metadata: { name: CEILING_NS } } });
  const raw = rawClient(tb.kc, CONCURRENCY);
  const metricsClient = rawClient(tb.kc, 1);
  const pid = servePid(tb.dir);
  const cores = PIN ? pinControlPlane(pid) : 'every process on every core';
  process.stderr.write(`${cores}\n`);
  // The API's client is as bare as the ceiling's: node:http on kept-alive connections.
  const api = new URL(`${tb.baseUrl}/api/apps/`);
  const apiAgent = new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY });
  const submit = () => new Promise<void>((ok, fail) => {
    const req = httpRequest(api, { method: 'POST', agent: apiAgent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { if (text.length < 2000) text += chunk; });
      res.once('end', () => (res.statusCode === 201 ? ok() : fail(new Error(`POST /api/apps/: ${res.statusCode} ${text}`))));
    });
    req.once('error', fail);
    req.end(BODY);
  });
  // A refused submission (a loaded machine: the apiserver answers 503) is counted and said, not fatal.
  const failures: string[] = [];
  const counted = (one: () => Promise<void>) => () => one().catch((error: Error) => { failures.push(error.message.slice(0, 300)); });
  const measured = async (one: () => Promise<void>, profiled = false) => {
    const before = await snapshot(metricsClient, pid);
    if (profiled && PROFILE) process.kill(pid, 'SIGUSR2'); // starts the profile
    const rate = await phase(COUNT, CONCURRENCY, one);
    if (profiled && PROFILE) process.kill(pid, 'SIGUSR2'); // writes it
    const after = await snapshot(metricsClient, pid);
    // Marks the phase's end (a profile of the service can be cut to the phase by these lines).
    process.stderr.write(`phase done in ${fmt(rate.ms)} ms\n`);
    return { perMinute: rate.perMinute, costs: perItem(before, after, COUNT) };
  };
  // Warm-up both ways (connections, JIT), then alternate phases so drift in machine load hits both sides.
  // 20 each, or a phase's count when it is smaller (the smoke test's tiny runs), at the phases'
  // concurrency: one at a time, the service's agent opened one connection to the apiserver, and
  // the first measured phase paid the TLS handshakes of the other 15.
  // CEILING_WARMUP counts submissions only: the raw ceiling runs none of the service's code.
  await phase(Math.min(20, COUNT), CONCURRENCY, () => ceilingItem(raw));
  await phase(WARMUP, CONCURRENCY, submit);
  await clean(custom, tb.core);
  const results = { ceiling: [] as number[], admittedCeiling: [] as number[], api: [] as number[], loads: [] as string[] };
  const costs = { ceiling: [] as PhaseCosts[], admittedCeiling: [] as PhaseCosts[], api: [] as PhaseCosts[] };
  for (let round = 1; round <= ROUNDS; round++) {
    results.loads.push(load());
    process.stderr.write(`round ${round}: ceiling, ${COUNT} x (Application + pod), raw HTTPS, ${CONCURRENCY} in flight (load ${load()})\n`);
    const c = await measured(counted(() => ceilingItem(raw)));
    results.ceiling.push(c.perMinute);
    costs.ceiling.push(c.costs);
    await clean(custom, tb.core);
    process.stderr.write(`round ${round}: POST /api/apps/ x ${COUNT}, controller running (load ${load()})\n`);
    const a = await measured(counted(submit), true);
    results.api.push(a.perMinute);
    costs.api.push(a.costs);
    await clean(custom, tb.core);
    process.stderr.write(`round ${round}: ceiling with the admitted pod the API writes, raw HTTPS (load ${load()})\n`);
    const m = await measured(counted(() => ceilingItem(raw, true)));
    results.admittedCeiling.push(m.perMinute);
    costs.admittedCeiling.push(m.costs);
    await clean(custom, tb.core);
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const ceilingRate = sum(results.ceiling) / results.ceiling.length;
  const apiRate = sum(results.api) / results.api.length;
  const ratio = apiRate / ceilingRate;
  const admittedRate = sum(results.admittedCeiling) / results.admittedCeiling.length;
  console.log(`\n## Submissions with the controller vs the apiserver's raw ceiling (load at the rounds' starts: ${results.loads.join('; ')}; now ${load()})\n`);
  console.log(`Cores: ${cores}.\n`);
  console.log(table(['path', 'per minute (rounds)', 'mean'], [
    [`Application + bare pod, raw keep-alive HTTPS, ${CONCURRENCY} in flight`, results.ceiling.map((r) => fmt(r)).join(', '), fmt(ceilingRate)],
    [`POST /api/apps/ (admitted by the API, controller running), ${CONCURRENCY} in flight`, results.api.map((r) => fmt(r)).join(', '), fmt(apiRate)],
    [`Application + the admitted pod, raw keep-alive HTTPS, ${CONCURRENCY} in flight`, results.admittedCeiling.map((r) => fmt(r)).join(', '), fmt(admittedRate)],
  ]));
  console.log(`\nratio: ${(ratio * 100).toFixed(1)}% of the raw ceiling (goal >= ${GOAL * 100}%); ${(100 * apiRate / admittedRate).toFixed(1)}% of the ceiling with the admitted pod\n`);
  if (failures.length > 0) console.log(`failed items (counted in the rates as done): ${failures.length}; first: ${failures[0]}\n`);
  console.log(costTable(costs.ceiling, costs.api));
  console.log(`\nThe ceiling with the admitted pod, per item:\n`);
  console.log(costTable(costs.ceiling, costs.admittedCeiling, 'ceiling, admitted pod'));
  saveSummary(PIN ? 'kubernetes-controller-ceiling-pinned' : 'kubernetes-controller-ceiling', [
    { bench: 'k8s controller', metric: `submissions/min vs raw ceiling (${CONCURRENCY} in flight${PIN ? ', control plane pinned' : ''})`, value: `${fmt(apiRate)} vs ${fmt(ceilingRate)} = ${(ratio * 100).toFixed(1)}%`, goal: `>= ${GOAL * 100}%`, verdict: ratio >= GOAL ? 'ok' : 'below goal' },
  ], { results, costs, failures, count: COUNT, concurrency: CONCURRENCY });
});
