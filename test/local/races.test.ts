// Local mode under concurrent calls: a stop racing the submission it names never touches
// another queued application, and a template PUT racing its DELETE never comes back after a
// restart. Hundreds of rounds each, on the real stores.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { FileTemplateStore } from '../../cluster/local/template-store.js';
import { bareDriverPod } from '../../domain/index.js';
import { newAppName } from '../../cluster/app-name.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';

const quietLog = { info() {}, warn() {}, error() {} };

t.test('stop racing a submission never removes another queued application (200 rounds)', async (t) => {
  const api = await startTestApi(t, { cores: 2 });
  const { cluster } = api;
  const whole = { ...fakeJob(), executor: { cores: 2 } };
  const submit = async (jobName: string, config: object) => {
    const appName = newAppName(jobName);
    const pod = bareDriverPod({ appName, jobName, namespace: '', configOverrides: config as never });
    return { appName, created: cluster.createDriver(pod, { dryRun: false }) };
  };
  // Holds both cores, so everything after it queues.
  const blocker = await submit('blocker', { ...fakeJob({ sleep: 60 }), executor: { cores: 2 } });
  await blocker.created;
  await waitForState(() => api.getApp(blocker.appName), 'RUNNING');

  const queued: string[] = [];
  for (let round = 0; round < 200; round++) {
    const other = await submit('other', whole);
    await other.created;
    queued.push(other.appName);
    const victim = await submit('victim', whole);
    // The stop comes while the victim's record is still being written.
    const [created, stopped] = await Promise.all([victim.created, cluster.stop(victim.appName)]);
    t.ok(created.ok, 'the racing submission is accepted');
    if (stopped) t.equal(stopped.state, 'KILLED');
    if (!created.ok) break;
    const now = await cluster.get(victim.appName);
    if (now?.state === 'PENDING') t.equal((await cluster.stop(victim.appName))?.state, 'KILLED', 'a later stop works');
  }
  await cluster.stop(blocker.appName);
  // Every queued app still gets its turn: none was dropped from the queue by a stop of another.
  await until(async () => {
    const states = await Promise.all(queued.map(async (name) => (await cluster.get(name))?.state));
    return states.every((s) => s === 'COMPLETED');
  }, { timeoutMs: 120_000, intervalMs: 200, what: 'every queued app to run' });
  t.pass(`all ${queued.length} queued apps ran`);
});

t.test('template PUT racing DELETE: what the service shows is what a restart reads (300 rounds)', async (t) => {
  const api = await startTestApi(t);
  const template = (n: number) => ({ name: 'raced', config: { type: 'Python', arguments: [String(n)] } });
  let mismatches = 0;
  for (let round = 0; round < 300; round++) {
    t.equal((await api.call('POST', '/api/config-templates/', template(round))).status, 201);
    const [put, del] = await Promise.all([
      api.call('PUT', '/api/config-templates/raced', template(round + 1)),
      api.call('DELETE', '/api/config-templates/raced'),
    ]);
    if (![200, 404].includes(put.status) || del.status !== 204) t.fail(`PUT ${put.status} DELETE ${del.status}`);
    const shown = (await api.call('GET', '/api/config-templates/raced')).status;
    const restarted = new FileTemplateStore(join(api.dataDir, 'templates'), { log: quietLog });
    const onDisk = (await restarted.get('raced')) !== undefined;
    if ((shown === 200) !== onDisk) mismatches++;
    if (shown === 200) await api.call('DELETE', '/api/config-templates/raced');
  }
  t.equal(mismatches, 0, 'no template came back after a restart, none vanished');
  const dir = join(api.dataDir, 'templates');
  t.same(readdirSync(dir), [], 'nothing left on disk');
  t.equal(statSync(dir).mode & 0o777, 0o700);
});
