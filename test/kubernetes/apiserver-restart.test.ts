// The apiserver goes away under load and comes back: meanwhile the API answers 503
// quickly (not 500, not hanging), and afterwards it serves again: same API instance,
// no restart.
//
// The test bed cannot restart "the same" cluster: every start makes a new PKI and an empty
// etcd (test/cluster/main.go). It does take `--port`, so the new apiserver comes back at the
// same address. restartTestbed() swaps clients built from the new kubeconfig into the
// KubeClients objects the running API instance reads on every call (loading the new file
// into the live KubeConfig objects does not take: cluster/kubernetes/client.ts keeps one
// kept-alive https.Agent per KubeConfig, TLS material included), and puts back the
// namespace, CRDs and webhook registration that a real restarted apiserver would still have. The API instance itself is never restarted.
// Until the swap, calls meet the new apiserver with the old CA: those must be 503 too.
import t from 'tap';
import { type Reply, startKubeBed } from '../helpers/kubernetes.js';
import { sleep } from '../helpers/temp.js';

interface Answer { at: number; phase: 'before' | 'down' | 'restarting' | 'after'; status: number; ms: number; message: string }

t.test('apiserver stopped and started again under a steady dry-run load', async (t) => {
  const bed = await startKubeBed(t);
  let phase: Answer['phase'] = 'before';
  let stop = false;
  const answers: Answer[] = [];
  const t0 = performance.now();
  const worker = async (id: number) => {
    for (let i = 0; !stop; i++) {
      let reply: Reply;
      try {
        reply = await bed.call('POST', '/api/apps/?dryRun=true', { jobName: `load${id}`, configOverrides: { executor: { cores: 1 + (i % 8) } } }, 15_000);
      } catch (error) {
        reply = { status: 0, json: undefined, body: (error as Error).message, ms: 15_000 };
      }
      answers.push({ at: performance.now() - t0, phase, status: reply.status, ms: reply.ms, message: reply.json?.message ?? reply.body.slice(0, 200) });
      await sleep(20);
    }
  };
  const load = Promise.all([1, 2, 3, 4].map(worker));
  t.teardown(async () => { stop = true; await load; });
  const of = (p: Answer['phase']) => answers.filter((a) => a.phase === p);

  await sleep(1500);
  t.ok(of('before').length > 0 && of('before').every((a) => a.status === 200), `before: ${of('before').length} dry runs, all 200`);

  phase = 'down';
  await bed.testbed.stop('SIGKILL'); // the apiserver dies, as in a crash
  await sleep(3000);
  const down = of('down');
  t.ok(down.length >= 8, `${down.length} answers while it is down`);
  const statuses = [...new Set(down.map((a) => a.status))];
  t.same(statuses, [503], 'every answer while it is down is 503');
  t.ok(down.every((a) => /Kubernetes API server/.test(a.message)), `naming the API server: ${down[down.length - 1]?.message}`);
  t.ok(Math.max(...down.map((a) => a.ms)) < 3000, `none slower than 3 s (slowest ${Math.round(Math.max(...down.map((a) => a.ms)))} ms)`);

  phase = 'restarting';
  const port = bed.testbed.port;
  const restartAt = performance.now() - t0;
  await bed.restartTestbed();
  t.equal(bed.testbed.port, port, 'the new apiserver listens on the same port');
  phase = 'after';
  const afterAt = performance.now() - t0;
  // The API recovers by itself: the same instance, without being told.
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !(of('after').slice(-8).length === 8 && of('after').slice(-8).every((a) => a.status === 200))) await sleep(100);
  stop = true;
  await load;
  const after = of('after');
  const firstOk = after.find((a) => a.status === 200);
  t.ok(firstOk, 'dry runs succeed again');
  t.ok(after.slice(-8).every((a) => a.status === 200), 'and keep succeeding');
  t.comment(`restart took ${((afterAt - restartAt) / 1000).toFixed(1)} s; first 200 ${firstOk ? ((firstOk.at - afterAt) / 1000).toFixed(2) : '-'} s after it was back`);
  const restarting = of('restarting');
  const seen = [...new Set(restarting.map((a) => `${a.status} ${a.message.slice(0, 90)}`))];
  t.comment(`while restarting: ${restarting.length} answers: ${seen.slice(0, 6).join(' | ')}`);
  t.notOk(answers.some((a) => a.status === 500 || a.status === 0), 'never a 500, never a hang');
  t.ok(Math.max(...answers.map((a) => a.ms)) < 10_000, `every answer within 10 s (slowest ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms)`);

  // Writes work again too, through the re-registered webhook.
  const created = await bed.call('POST', '/api/apps/', { jobName: 'afterwards' });
  t.equal(created.status, 201);
  t.equal((await bed.call('GET', `/api/apps/${created.json.appName}`)).json.state, 'PENDING');
});
