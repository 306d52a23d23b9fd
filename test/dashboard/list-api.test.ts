// What the dashboard asks of the API: the light list (view=summary), counts per state and per
// job, and the log from a byte offset (resume after a reconnect). LocalCluster with the TEST
// DOUBLE fake-spark-submit.
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { waitForState } from '../helpers/poll.js';

t.test('view=summary, counts, log offset', async (t) => {
  const api = await startTestApi(t, { cores: 8 });
  const submit = async (jobName: string, directives: Parameters<typeof fakeJob>[0]) => {
    const res = await api.call('POST', '/api/apps/', { jobName, configOverrides: fakeJob(directives) });
    t.equal(res.status, 201);
    return res.json.appName as string;
  };
  const a = await submit('alpha', { lines: 3 });
  const b = await submit('alpha', { lines: 1, exit: 2 });
  const c = await submit('beta', { lines: 5 });
  for (const [name, state] of [[a, 'COMPLETED'], [b, 'FAILED'], [c, 'COMPLETED']]) await waitForState(() => api.getApp(name), state);

  const full = await api.call('GET', '/api/apps/?limit=2');
  const summary = await api.call('GET', '/api/apps/?limit=2&view=summary');
  t.equal(summary.status, 200);
  t.same(summary.json.items.map((i: { appName: string }) => i.appName), full.json.items.map((i: { appName: string }) => i.appName), 'the same page');
  t.equal(summary.json.next, full.json.next, 'the same cursor');
  t.notOk('config' in summary.json.items[0], 'no config in a summary');
  t.notOk('transitions' in summary.json.items[0], 'no transitions in a summary');
  t.notOk('attempts' in summary.json.items[0], 'no attempts in a summary');
  t.equal(summary.json.items[0].attempt, 1, 'which attempt, though');
  const { config: _c, transitions: _t, attempts: _a, ...rest } = full.json.items[0];
  t.same(summary.json.items[0], rest, 'every other field as in the full view');
  t.ok(summary.body.length < full.body.length / 2, `lighter (${summary.body.length} vs ${full.body.length} bytes)`);
  t.equal((await api.call('GET', '/api/apps/?view=compact')).status, 400, 'an unknown view');

  const counts = await api.call('GET', '/api/apps/counts');
  t.equal(counts.status, 200);
  t.same(counts.json, {
    total: 3,
    byState: { PENDING: 0, RUNNING: 0, COMPLETED: 2, FAILED: 1, KILLED: 0, UNKNOWN: 0 },
    jobs: [
      { jobName: 'alpha', total: 2, byState: { PENDING: 0, RUNNING: 0, COMPLETED: 1, FAILED: 1, KILLED: 0, UNKNOWN: 0 } },
      { jobName: 'beta', total: 1, byState: { PENDING: 0, RUNNING: 0, COMPLETED: 1, FAILED: 0, KILLED: 0, UNKNOWN: 0 } },
    ],
  });
  t.equal((await api.call('GET', '/api/apps/counts?jobName=beta')).json.total, 1, 'filtered by job');
  const openApi = (await api.call('GET', '/api/openapi.json')).json;
  t.ok(openApi.paths['/api/apps/counts'], 'counts documented');
  t.ok(openApi.paths['/api/apps/'].get.parameters.some((p: { name: string }) => p.name === 'view'), 'view documented');
  t.ok(openApi.paths['/api/apps/{appName}/log'].get.parameters.some((p: { name: string }) => p.name === 'offset'), 'offset documented');

  const submission = await api.call('GET', `/api/apps/${c}/submission`);
  t.equal(submission.status, 200);
  t.same(submission.json.configOverrides, fakeJob({ lines: 5 }), 'the overrides as submitted');
  t.equal(submission.json.admittedBy, 'submission-service-rules/v1', 'the admission mark');
  t.equal(submission.json.sizing.driver.pool, 'n1-standard-2', 'the driver\'s pool');
  t.match(submission.json.sizing.driver.reasons.join(' '), /710m: the share 1\/2 of 1700m \(850m\) minus 140m/, 'and why (SPEC\'s 710m)');
  t.equal((await api.call('GET', '/api/apps/nope-20260101-000000-aaaaa/submission')).status, 404);
  t.ok(openApi.paths['/api/apps/{appName}/submission'], 'submission documented');

  const log = await api.call('GET', `/api/apps/${c}/log`);
  const whole = log.body;
  t.match(whole, /fake line 5 of 5/);
  const cut = whole.indexOf('fake line 3');
  const tail = await api.call('GET', `/api/apps/${c}/log?offset=${Buffer.byteLength(whole.slice(0, cut))}`);
  t.equal(tail.status, 200);
  t.equal(tail.headers['x-log-offset'], String(Buffer.byteLength(whole.slice(0, cut))));
  t.equal(tail.body, whole.slice(cut), 'the log from that byte on');
  t.equal((await api.call('GET', `/api/apps/${c}/log?offset=999999`)).body, '', 'past the end: nothing');
  t.equal((await api.call('GET', `/api/apps/${c}/log?offset=-1`)).status, 400);
});
