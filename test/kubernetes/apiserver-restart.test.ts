// The apiserver goes away under load and comes back: meanwhile the API answers 503 quickly
// (not 500, not hanging), and afterwards it serves again BY ITSELF: the same API instance,
// the same clients, the same webhook service, nothing swapped, re-created or told.
//
// The test bed is stopped (SIGKILL as in a crash, then SIGTERM as in a rolling restart) and
// started again with `--keep` on the same dir and port (test/cluster/README.md): the same
// cluster, as a restarted apiserver is, with the same CA and certificates and etcd restarted
// on its data. So what was created before is still there, and the clients of this process
// (kept-alive agents, the webhook's informers) have to reconnect on their own.
import t from 'tap';
import { register } from 'prom-client';
import { eventually, type KubeBed, type Reply, startKubeBed } from '../helpers/kubernetes.js';
import { sleep } from '../helpers/temp.js';

type Phase = 'before' | 'stopping' | 'down' | 'restarting' | 'after';
/** One dry run; `phase` is the one it was sent in. */
interface Answer { sentAt: number; phase: Phase; status: number; ms: number; message: string }

type Asserts = Pick<typeof t, 'ok' | 'same' | 'equal' | 'match' | 'comment' | 'teardown'>;


t.test('apiserver stopped and restarted under a steady dry-run load', async (t) => {
  const bed = await startKubeBed(t);
  const kept = { executor: { cores: 2, instances: 3 } };
  // Made before any restart; must outlive them all.
  t.equal((await bed.call('POST', '/api/config-templates/', { name: 'kept', config: kept })).status, 201, 'a template before');
  const app = await bed.call('POST', '/api/apps/', { jobName: 'before', configTemplateName: 'kept' });
  t.equal(app.status, 201, 'an application before');
  const appName: string = app.json.appName;

  for (const [round, signal] of (['SIGKILL', 'SIGTERM'] as const).entries()) {
    await t.test(`${signal}, then --keep on the same dir and port`, async (t) => {
      await restartUnderLoad(t, bed, signal);

      // What was there before is still there.
      t.same((await bed.call('GET', '/api/config-templates/kept')).json?.name, 'kept', 'the template is still there');
      const record = await bed.call('GET', `/api/apps/${appName}`);
      t.equal(record.status, 200, 'the application record is still there');
      t.equal(record.json.state, 'PENDING', 'still PENDING');
      t.ok((await bed.applications()).some((a) => a.metadata.name === appName), 'as an Application resource');
      t.ok((await bed.pods()).some((p) => p.metadata?.name === appName), 'and its driver pod');

      // The webhook's informers resumed: a template created now reaches its cache through the
      // watch (no submission has named it, so no fetch-on-miss put it there), and so does a
      // change to one from before (a cached template is never fetched again).
      const fresh = `fresh${round}`;
      const cores = 3 + round;
      t.equal((await bed.call('POST', '/api/config-templates/', { name: fresh, config: { executor: { cores } } })).status, 201, `template ${fresh} created after the restart`);
      await eventually(async () => bed.webhook.cache.templates.get(fresh)?.executor?.cores === cores, Boolean, { timeoutMs: 15_000, what: `the webhook to see ${fresh}` });
      t.pass(`the webhook saw ${fresh} through its watch`);
      const changed = { executor: { cores: 1 + round, instances: 3 } };
      t.equal((await bed.call('PUT', '/api/config-templates/kept', { name: 'kept', config: changed })).status, 200, 'the template from before changed');
      await eventually(async () => bed.webhook.cache.templates.get('kept')?.executor?.cores === 1 + round, Boolean, { timeoutMs: 15_000, what: 'the webhook to see the change' });
      t.pass('the webhook saw the change through its watch');

      // Admission works again, with those templates.
      const dry = await bed.call('POST', '/api/apps/?dryRun=true', { jobName: fresh, configTemplateName: fresh });
      t.equal(dry.status, 200, `a dry run naming ${fresh} is admitted`);
      t.equal(dry.json.config?.executor?.cores, cores, 'with its config');
      const created = await bed.call('POST', '/api/apps/', { jobName: `after${round}`, configTemplateName: 'kept' });
      t.equal(created.status, 201, 'a real submission naming the changed template is admitted');
      t.equal(created.json.config?.executor?.cores, 1 + round, 'with the changed config');
      t.equal((await bed.call('GET', `/api/apps/${created.json.appName}`)).json.state, 'PENDING');
    });
  }
});

/** Four workers send dry runs while the test bed is stopped with `signal` and restarted with --keep. */
async function restartUnderLoad(t: Asserts, bed: KubeBed, signal: NodeJS.Signals): Promise<void> {
  let phase: Phase = 'before';
  let stop = false;
  const answers: Answer[] = [];
  const t0 = performance.now();
  const worker = async (id: number) => {
    for (let i = 0; !stop; i++) {
      const sent = { sentAt: performance.now() - t0, phase };
      let reply: Reply;
      try {
        reply = await bed.call('POST', '/api/apps/?dryRun=true', { jobName: `load${id}`, configOverrides: { executor: { cores: 1 + (i % 8) } } }, 15_000);
      } catch (error) {
        reply = { status: 0, json: undefined, body: (error as Error).message, ms: 15_000 };
      }
      answers.push({ ...sent, status: reply.status, ms: reply.ms, message: reply.json?.message ?? '' });
      await sleep(20);
    }
  };
  const load = Promise.all([1, 2, 3, 4].map(worker));
  t.teardown(async () => { stop = true; await load; });
  const of = (p: Phase) => answers.filter((a) => a.phase === p);
  const slowest = (list: Answer[]) => Math.round(Math.max(0, ...list.map((a) => a.ms)));
  const summary = (list: Answer[]) => {
    const counts = new Map<string, number>();
    for (const a of list) {
      const key = a.status === 200 ? '200' : `${a.status} ${a.message.replace(/https:\/\/127\.0\.0\.1:\d+/, 'API').slice(0, 90)}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([key, n]) => `${n}× ${key}`).join(' | ');
  };
  const at = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

  // Phases last until each has enough answers (not a fixed time: the machine may be loaded).
  const answered = (p: Phase, n: number) => eventually(async () => of(p).length, (count) => count >= n, { what: `${n} answers ${p}`, timeoutMs: 60_000 });
  await answered('before', 8);
  const before = of('before');
  t.ok(before.length > 0 && before.every((a) => a.status === 200), `before: ${before.length} dry runs, all 200`);

  const port = bed.testbed.port;
  phase = 'stopping';
  const stoppingAt = performance.now() - t0;
  await bed.testbed.stop(signal);
  const downAt = performance.now() - t0;
  phase = 'down';
  await answered('down', 8);
  const down = of('down');
  t.ok(down.length >= 8, `${down.length} answers while it is down`);
  t.same([...new Set(down.map((a) => a.status))], [503], 'every answer while it is down is 503');
  t.ok(down.every((a) => /Kubernetes API server/.test(a.message)), `naming the API server: ${down.at(-1)?.message}`);

  phase = 'restarting';
  const restartAt = performance.now() - t0;
  await bed.restartTestbed();
  const backAt = performance.now() - t0;
  phase = 'after';
  t.equal(bed.testbed.port, port, 'the apiserver is back on the same port');

  // Nothing is done to the API: it has to come back by itself.
  const lastEightOk = () => { const last = of('after').slice(-8); return last.length === 8 && last.every((a) => a.status === 200); };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !lastEightOk()) await sleep(100);
  stop = true;
  await load;
  const after = of('after');
  const firstOk = after.find((a) => a.status === 200);
  t.ok(firstOk, 'dry runs succeed again, by themselves');
  t.ok(lastEightOk(), 'and keep succeeding');
  // The informers noticed, restarted with backoff, and counted it; the cache is live again.
  const restarts = await register.getSingleMetricAsString('submission_service_watch_restarts_total');
  t.match(restarts, /submission_service_watch_restarts_total\{resource="applications"\} [1-9]/, 'watch restarts counted');
  const probe = await bed.call('POST', '/api/apps/', { jobName: 'afterrestart' });
  t.equal(probe.status, 201, 'a real submission after the restart');
  // The informers come back with backoff after the outage: the record shows up once they watch again.
  const seenAt = Date.now();
  let seen = 0;
  while (Date.now() - seenAt < 30_000 && (seen = (await bed.call('GET', `/api/apps/${probe.json.appName}`)).status) !== 200) await sleep(100);
  t.equal(seen, 200, `and the cache, watching again, shows it (${Date.now() - seenAt} ms after the 201)`);

  t.comment(`${signal} to exit ${at(downAt - stoppingAt)}: ${summary(of('stopping'))}`);
  t.comment(`down ${at(restartAt - downAt)}: ${summary(down)}; slowest ${slowest(down)} ms`);
  t.comment(`restart to READY ${at(backAt - restartAt)}: ${summary(of('restarting'))}; slowest ${slowest(of('restarting'))} ms`);
  t.comment(`after READY: first 200 sent ${firstOk ? at(firstOk.sentAt - backAt) : '-'} after: ${summary(after)}`);
  const statuses = [...new Set(answers.map((a) => a.status))].sort();
  t.ok(statuses.every((s) => s === 200 || s === 503), `only 200 and 503 throughout (seen ${statuses.join(', ')}): never a 500, never a hang`);
  // No hang: every call has a 15 s client timeout, and a timed-out call (status 0) fails the
  // line above. How slow the slowest was is a figure, not an assertion (the machine may be loaded).
  t.comment(`slowest answer ${slowest(answers)} ms`);
}
