// /api/apps/ over a LocalCluster whose spark-submit is the TEST DOUBLE of
// test/helpers/fake-spark-submit.ts: real processes, real process groups, no JVM.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { exampleCluster, startTestApi } from '../helpers/api.js';
import { groupAlive, liveGroupMembers, storedApp } from '../helpers/drivers.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { filesUnder, sleep } from '../helpers/temp.js';

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Alive and not a zombie: a killed process waits as a zombie until init reaps it. */
function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

t.test('dry run answers 200 with the application and creates nothing', async (t) => {
  const api = await startTestApi(t);
  const before = filesUnder(api.dataDir);
  const res = await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'dry', configOverrides: fakeJob() });
  t.equal(res.status, 200);
  t.match(res.json.appName, /^dry-\d{8}-\d{6}-[a-z0-9]{5}$/);
  t.equal(res.json.jobName, 'dry');
  t.equal(res.json.configTemplateName, '');
  t.equal(res.json.config.mainApplicationFile, 'local:///fake/job.py', 'the effective config echoes the overrides');
  t.equal((await api.call('GET', `/api/apps/${res.json.appName}`)).status, 404, 'not readable afterwards');
  t.same((await api.call('GET', '/api/apps/')).json.items, [], 'not listed');
  t.same(filesUnder(api.dataDir), before, 'no file written');
});

t.test('a real submission answers 201 with the record, readable and stored', async (t) => {
  const api = await startTestApi(t);
  const started = Date.now();
  const res = await api.call('POST', '/api/apps/', { jobName: 'real', configOverrides: fakeJob({ lines: 2 }) });
  const answered = Date.now();
  t.equal(res.status, 201);
  const app = res.json;
  t.match(app.appName, /^real-\d{8}-\d{6}-[a-z0-9]{5}$/);
  t.ok(['PENDING', 'RUNNING'].includes(app.state), `a fresh app is PENDING or RUNNING (${app.state})`);
  t.match(app.createdAt, iso);
  // Millisecond ISO times: between the request's start and its answer.
  t.ok(Date.parse(app.createdAt) >= started - 1 && Date.parse(app.createdAt) <= answered + 1, 'createdAt is the time of the request');
  t.equal(app.endedAt, null);
  t.ok(storedApp(api.dataDir, app.appName), 'a record file exists');
  const read = await api.getApp(app.appName);
  t.equal(read.appName, app.appName);
  t.same(read.config, app.config, 'GET returns the same effective config');
  const done = await waitForState(() => api.getApp(app.appName), 'COMPLETED');
  t.match(done.stateDetail, /exit code 0/);
  t.ok(done.createdAt! <= done.startedAt! && done.startedAt! <= done.endedAt!, 'createdAt <= startedAt <= endedAt');
  const log = await api.call('GET', `/api/apps/${app.appName}/log`);
  t.equal(log.status, 200);
  t.match(String(log.headers['content-type']), /^text\/plain/);
  t.match(log.body, /fake line 1 of 2\nfake line 2 of 2\n/, 'the log is the driver output');
  t.match(log.body, /master=local\[2\]/, 'the driver ran with master local[N]');
});

t.test('list: filters by jobName and state, pages newest first without duplicates or gaps', async (t) => {
  const api = await startTestApi(t, { cores: 8 });
  const created: { appName: string; jobName: string }[] = [];
  const plan = [['alpha', 0], ['beta', 0], ['alpha', 1], ['beta', 0], ['alpha', 0], ['beta', 1], ['alpha', 0]] as const;
  for (const [jobName, exit] of plan) {
    const res = await api.call('POST', '/api/apps/', { jobName, configOverrides: { ...fakeJob({ exit }), executor: { cores: 1 } } });
    t.equal(res.status, 201);
    created.push({ appName: res.json.appName, jobName });
    await sleep(3); // distinct createdAt, so newest-first has one right answer
  }
  for (const { appName } of created) await waitForState(() => api.getApp(appName), ['COMPLETED', 'FAILED']);
  const newestFirst = created.map((c) => c.appName).reverse();

  const all = await api.call('GET', '/api/apps/');
  t.same(all.json.items.map((a: { appName: string }) => a.appName), newestFirst, 'one page, newest first');
  t.equal(all.json.next, null, 'no next page');

  for (const limit of [1, 2, 3, 7]) {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.call('GET', `/api/apps/?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      t.equal(res.status, 200);
      t.ok(res.json.items.length <= limit, 'a page holds at most limit items');
      seen.push(...res.json.items.map((a: { appName: string }) => a.appName));
      cursor = res.json.next;
      pages++;
    } while (cursor && pages < 20);
    t.same(seen, newestFirst, `limit=${limit}: every app once, in order, over ${pages} pages`);
    t.equal(pages, Math.ceil(created.length / limit), `limit=${limit}: no empty last page`);
  }

  const alpha = await api.call('GET', '/api/apps/?jobName=alpha');
  t.same(alpha.json.items.map((a: { appName: string }) => a.appName), newestFirst.filter((n) => n.startsWith('alpha-')), 'jobName filter');
  const failed = await api.call('GET', '/api/apps/?state=FAILED');
  const failedNames = created.filter((_, i) => plan[i][1] === 1).map((c) => c.appName).reverse();
  t.same(failed.json.items.map((a: { appName: string }) => a.appName), failedNames, 'state filter');
  t.ok(failed.json.items.every((a: { stateDetail?: string }) => /exit code 1/.test(a.stateDetail ?? '')), 'FAILED carries the exit code');
  const both = await api.call('GET', '/api/apps/?jobName=beta&state=COMPLETED');
  t.same(both.json.items.map((a: { appName: string }) => a.appName), created.filter((c, i) => c.jobName === 'beta' && plan[i][1] === 0).map((c) => c.appName).reverse(), 'both filters');
  const none = await api.call('GET', '/api/apps/?jobName=gamma');
  t.same(none.json, { items: [], next: null }, 'no match is an empty page');

  const firstTwo = await api.call('GET', '/api/apps/?jobName=alpha&limit=3');
  t.equal(firstTwo.json.items.length, 3);
  const rest = await api.call('GET', `/api/apps/?jobName=alpha&limit=3&cursor=${firstTwo.json.next}`);
  t.same([...firstTwo.json.items, ...rest.json.items].map((a: { appName: string }) => a.appName), alpha.json.items.map((a: { appName: string }) => a.appName), 'filtered pages join up');
  t.equal(rest.json.next, null);
});

t.test('stop ends the whole process group: KILLED, record kept', async (t) => {
  const api = await startTestApi(t);
  const res = await api.call('POST', '/api/apps/', { jobName: 'stopme', configOverrides: fakeJob({ sleep: 60 }) });
  const { appName } = res.json;
  await waitForState(() => api.getApp(appName), 'RUNNING');
  await until(async () => /fake line 1/.test((await api.call('GET', `/api/apps/${appName}/log`)).body), { what: 'the driver to print' });
  await until(() => storedApp(api.dataDir, appName)?.record.state === 'RUNNING', { what: 'the RUNNING record on disk' });
  const run = storedApp(api.dataDir, appName)!.run!;
  const driverPid = Number(/pid=(\d+)/.exec((await api.call('GET', `/api/apps/${appName}/log`)).body)![1]);
  t.ok(groupAlive(run.pid), 'the process group runs');
  t.ok(pidAlive(driverPid), 'the driver (the double) runs');

  const t0 = Date.now();
  const stopped = await api.call('POST', `/api/apps/${appName}/stop`);
  t.equal(stopped.status, 200);
  t.equal(stopped.json.state, 'KILLED');
  t.match(stopped.json.endedAt, iso);
  t.comment(`stop answered in ${Date.now() - t0} ms (the kill grace period is 5 s; the double ends on TERM)`);
  t.same(liveGroupMembers(run.pid), [], 'no process of the group is left');
  t.notOk(pidAlive(driverPid), 'the driver is gone');
  const read = await api.getApp(appName);
  t.equal(read.state, 'KILLED', 'the record stays, KILLED');
  // The service's exit handler runs when its child is reaped: once /proc has no entry for it, and a turn later, it has run.
  await until(() => !existsSync(`/proc/${run.pid}`), { timeoutMs: 120_000, what: 'the driver process reaped' });
  await new Promise((ok) => setImmediate(ok));
  t.equal((await api.getApp(appName)).state, 'KILLED', 'and stays KILLED once the exit is noticed');
  const again = await api.call('POST', `/api/apps/${appName}/stop`);
  t.equal(again.status, 200, 'stopping again is harmless');
  t.equal(again.json.state, 'KILLED');
});

t.test('stop of a PENDING app: KILLED without ever starting', async (t) => {
  const api = await startTestApi(t, { cores: 2 });
  const first = (await api.call('POST', '/api/apps/', { jobName: 'busy', configOverrides: fakeJob({ sleep: 60 }) })).json;
  const second = (await api.call('POST', '/api/apps/', { jobName: 'queued', configOverrides: fakeJob() })).json;
  await waitForState(() => api.getApp(first.appName), 'RUNNING');
  t.equal((await api.getApp(second.appName)).state, 'PENDING');
  const stopped = await api.call('POST', `/api/apps/${second.appName}/stop`);
  t.equal(stopped.json.state, 'KILLED');
  t.equal(stopped.json.startedAt, null, 'it never started');
  t.notOk(existsSync(join(api.dataDir, 'logs', `${second.appName}.log`)), 'no driver log: no process ran');
  await api.call('POST', `/api/apps/${first.appName}/stop`);
});

t.test('delete stops a running app, removes its record and files: 204 then 404', async (t) => {
  const api = await startTestApi(t);
  const { appName } = (await api.call('POST', '/api/apps/', { jobName: 'delme', configOverrides: fakeJob({ sleep: 60 }) })).json;
  await waitForState(() => api.getApp(appName), 'RUNNING');
  await until(() => storedApp(api.dataDir, appName)?.record.state === 'RUNNING', { what: 'the RUNNING record on disk' });
  const run = storedApp(api.dataDir, appName)!.run!;
  t.ok(groupAlive(run.pid));
  const del = await api.call('DELETE', `/api/apps/${appName}`);
  t.equal(del.status, 204);
  t.equal(del.body, '', 'no body');
  t.same(liveGroupMembers(run.pid), [], 'its processes are gone');
  t.equal((await api.call('GET', `/api/apps/${appName}`)).status, 404);
  t.equal((await api.call('GET', `/api/apps/${appName}/log`)).status, 404);
  t.equal((await api.call('DELETE', `/api/apps/${appName}`)).status, 404, 'deleting again is 404');
  t.same((await api.call('GET', '/api/apps/')).json.items, [], 'not listed');
  t.same(filesUnder(api.dataDir).filter((f) => f.includes(appName)), [], 'no file of the app is left');
});

t.test('executor cores above every pool: 422 with exactly the body of SPEC.md', async (t) => {
  const api = await startTestApi(t);
  const example = exampleCluster();
  const cores = example.expected.rejectedExecutorCores;
  const before = filesUnder(api.dataDir);
  for (const query of ['', '?dryRun=true']) {
    const res = await api.call('POST', `/api/apps/${query}`, { jobName: 'toobig', configOverrides: { ...fakeJob(), executor: { cores } } });
    t.equal(res.status, 422, `status ${query}`);
    const body = res.json;
    t.same(Object.keys(body).sort(), ['advice', 'executor', 'message'], 'advice, message and executor only');
    t.match(body.advice, /modify/i);
    t.match(body.message, /unschedulable/i);
    t.same(Object.keys(body.executor).sort(), ['availableNodePools', 'targetInputConfig']);
    t.same(body.executor.availableNodePools, example.nodePools, 'every pool of the example file, field for field');
    t.equal(body.executor.targetInputConfig.cores, cores, 'targetInputConfig echoes the cores');
  }
  t.same((await api.call('GET', '/api/apps/')).json.items, [], 'nothing listed');
  t.same(filesUnder(api.dataDir), before, 'nothing written');
  const ok = await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'fits', configOverrides: { executor: { cores: cores - 1 } } });
  t.equal(ok.status, 200, 'one core less fits the largest pool');
});

t.test('template merge: overrides win, template values stay, then sizing', async (t) => {
  const api = await startTestApi(t);
  const expected = exampleCluster().expected;
  const tpl = { name: 'nightly', config: { engineVersion: '3.5.7', engineConf: { 'spark.a': '1', 'spark.b': '2' }, executor: { instances: 3, cores: 2 }, arguments: ['from-template'] } };
  t.equal((await api.call('POST', '/api/config-templates/', tpl)).status, 201);
  const res = await api.call('POST', '/api/apps/', {
    jobName: 'merged', configTemplateName: 'nightly',
    configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py', engineConf: { 'spark.b': '3' }, executor: { cores: 4 }, arguments: ['lines=1'] },
  });
  t.equal(res.status, 201);
  const c = res.json.config;
  t.equal(res.json.configTemplateName, 'nightly');
  t.equal(c.engineConf['spark.a'], '1', 'template value kept');
  t.equal(c.engineConf['spark.b'], '3', 'override wins');
  t.equal(c.executor.instances, 3, 'nested template value kept');
  t.equal(c.executor.cores, 4, 'nested override wins');
  t.equal(c.executor.coreRequest, expected.executorByCores['4'].coreRequest, 'sized after merging');
  t.equal(c.executor.memory, expected.executorByCores['4'].memory);
  t.same(c.arguments, ['lines=1'], 'arrays are replaced, not concatenated');
  const stored = await api.getApp(res.json.appName);
  t.same(stored.config, c, 'the record holds the merged config');
  t.equal(stored.configTemplateName, 'nightly');
  await waitForState(() => api.getApp(res.json.appName), 'COMPLETED');
});

t.test('PENDING while the machine\'s cores are busy, then runs', async (t) => {
  const api = await startTestApi(t, { cores: 2 });
  const job = (sleepS: number) => ({ ...fakeJob({ sleep: sleepS }), executor: { cores: 2 } });
  const first = (await api.call('POST', '/api/apps/', { jobName: 'first', configOverrides: job(1.5) })).json;
  const second = (await api.call('POST', '/api/apps/', { jobName: 'second', configOverrides: job(0) })).json;
  await waitForState(() => api.getApp(first.appName), 'RUNNING');
  for (let i = 0; i < 5; i++) {
    const [a, b] = [await api.getApp(first.appName), await api.getApp(second.appName)];
    if (a.state !== 'RUNNING') break;
    t.equal(b.state, 'PENDING', 'the second waits while the first holds both cores');
    t.equal(b.startedAt, null);
    await sleep(150);
  }
  t.equal((await api.call('GET', '/api/apps/?state=PENDING')).json.items.length, 1, 'listed as PENDING');
  const a = await waitForState(() => api.getApp(first.appName), 'COMPLETED', { timeoutMs: 120_000 });
  const b = await waitForState(() => api.getApp(second.appName), 'COMPLETED', { timeoutMs: 120_000 });
  t.ok(b.startedAt! >= a.endedAt!, `the second started (${b.startedAt}) after the first ended (${a.endedAt})`);
});

t.test('log ?follow=true streams lines as they are written and ends when the app ends', async (t) => {
  const api = await startTestApi(t);
  const base = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const { appName } = (await api.call('POST', '/api/apps/', { jobName: 'chatty', configOverrides: fakeJob({ lines: 5, tick: 0.4 }) })).json;
  const res = await fetch(`${base}/api/apps/${appName}/log?follow=true`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  const arrivals: { at: number; text: string; state: string }[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const text = decoder.decode(chunk, { stream: true });
    arrivals.push({ at: Date.now(), text, state: String((await api.getApp(appName)).state) });
  }
  const ended = Date.now();
  const full = arrivals.map((a) => a.text).join('');
  for (let i = 1; i <= 5; i++) t.match(full, `fake line ${i} of 5\n`, `line ${i} arrived`);
  t.match(full, /fake-spark-submit exits with 0\n$/, 'the last line arrived before the stream ended');
  const firstLine = arrivals.find((a) => a.text.includes('fake line 1 of 5'))!;
  const lastLine = arrivals.find((a) => a.text.includes('fake line 5 of 5'))!;
  t.ok(arrivals.indexOf(firstLine) < arrivals.indexOf(lastLine), 'lines arrived as written, not all at the end in one piece');
  t.equal(firstLine.state, 'RUNNING', 'the first line arrived while the app was running');
  const app = await api.getApp(appName);
  t.equal(app.state, 'COMPLETED', 'the stream ended once the app had ended');
  t.comment(`lines ${lastLine.at - firstLine.at} ms apart; the stream ended ${ended - Date.parse(app.endedAt!)} ms after the app (figures, not checks)`);
  const plain = await api.call('GET', `/api/apps/${appName}/log`);
  t.equal(plain.body, full, 'the followed stream is the whole log');
});
