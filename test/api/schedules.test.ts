// /api/schedules/ over local mode (fake spark-submit): validation, ownership with two keys,
// pause and resume. The loop itself is driven in test/unit/schedule-runner.test.ts.
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { tempDir } from '../helpers/temp.js';

const schedule = (name: string, extra: Record<string, unknown> = {}) => ({
  name, schedule: '*/5 * * * *', jobName: 'etl', configOverrides: fakeJob(), ...extra,
});

t.test('create, read, list, replace and delete; 409 for a name in use, 404 for an unknown one', async (t) => {
  const api = await startTestApi(t, { schedules: {} });
  const created = await api.call('POST', '/api/schedules/', schedule('nightly', { timeZone: 'Europe/Berlin', concurrencyPolicy: 'Forbid' }));
  t.equal(created.status, 201, created.body);
  t.match(created.json, { name: 'nightly', schedule: '*/5 * * * *', timeZone: 'Europe/Berlin', concurrencyPolicy: 'Forbid', createdBy: null, lastScheduleTime: null, lastRunName: null });
  t.match(created.json.nextRunAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d[05]:00\.000Z$/, 'the next tick is on a multiple of 5 minutes');
  t.equal((await api.call('POST', '/api/schedules/', schedule('nightly'))).status, 409);
  t.same((await api.call('GET', '/api/schedules/')).json.items.map((s: { name: string }) => s.name), ['nightly']);
  const replaced = await api.call('PUT', '/api/schedules/nightly', schedule('nightly', { schedule: '0 3 * * *' }));
  t.equal(replaced.status, 200, replaced.body);
  t.equal(replaced.json.schedule, '0 3 * * *');
  t.equal(replaced.json.createdAt, created.json.createdAt, 'creation time stays');
  t.equal((await api.call('PUT', '/api/schedules/other', schedule('other'))).status, 404);
  t.equal((await api.call('PUT', '/api/schedules/nightly', schedule('other'))).status, 400, 'body name differs from the path');
  t.equal((await api.call('DELETE', '/api/schedules/nightly')).status, 204);
  t.equal((await api.call('GET', '/api/schedules/nightly')).status, 404);
  t.equal((await api.call('DELETE', '/api/schedules/nightly')).status, 404);
});

t.test('bad input answers 400 naming the field; a submission that could never run is refused up front', async (t) => {
  const api = await startTestApi(t, { schedules: {} });
  const bad = async (body: unknown) => api.call('POST', '/api/schedules/', body);
  t.match((await bad(schedule('a', { schedule: 'every day' }))).json, { statusCode: 400, field: 'schedule' });
  t.match((await bad(schedule('a', { schedule: '0 0 31 2 *' }))).json, { statusCode: 400, field: 'schedule', message: /never falls due/ });
  t.match((await bad(schedule('a', { timeZone: 'Mars/Olympus' }))).json, { statusCode: 400, field: 'timeZone' });
  t.match((await bad(schedule('a', { concurrencyPolicy: 'Sometimes' }))).json, { statusCode: 400, field: 'concurrencyPolicy' });
  t.match((await bad(schedule('a', { exectuor: {} }))).json, { statusCode: 400, field: 'exectuor' });
  t.match((await bad(schedule('a', { labels: { 'schedule.submission-service.io/name': 'b' } }))).json, { statusCode: 400, message: /service's own/ });
  const template = await bad(schedule('a', { configTemplateName: 'missing' }));
  t.equal(template.status, 404, 'a missing template, as a submission would answer');
  const huge = await bad(schedule('a', { configOverrides: { ...fakeJob(), executor: { cores: 64 } } }));
  t.equal(huge.status, 422);
  t.match(huge.json, { advice: String, executor: { availableNodePools: Array } }, 'the unschedulable body of SPEC.md');
  t.same((await api.call('GET', '/api/schedules/')).json.items, [], 'nothing was kept');
  const runs = await api.call('POST', '/api/apps/', { jobName: 'x', configOverrides: fakeJob(), labels: { 'schedule.submission-service.io/name': 'a' } });
  t.equal(runs.status, 400, 'a submission may not pass itself off as a schedule\'s run');
});

t.test('two keys: a user sees and changes only its own schedules, an admin all', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const api = await startTestApi(t, { schedules: {}, auth: { enabled: true, store: keys } });
  const [alice, bob, admin] = [keys.create('user', 'alice'), keys.create('user', 'bob'), keys.create('admin', 'ops')];
  const as = (who: { key: string }) => ({ 'x-api-key': who.key });
  const created = await api.call('POST', '/api/schedules/', schedule('alices'), as(alice));
  t.equal(created.status, 201);
  t.equal(created.json.createdBy, alice.id, 'owned by the creating key');
  t.equal((await api.call('POST', '/api/schedules/', schedule('bobs'), as(bob))).status, 201);
  t.same((await api.call('GET', '/api/schedules/', undefined, as(alice))).json.items.map((s: { name: string }) => s.name), ['alices']);
  t.same((await api.call('GET', '/api/schedules/', undefined, as(admin))).json.items.map((s: { name: string }) => s.name), ['alices', 'bobs']);
  t.equal((await api.call('GET', '/api/schedules/alices', undefined, as(bob))).status, 403);
  t.equal((await api.call('PUT', '/api/schedules/alices', schedule('alices', { suspend: true }), as(bob))).status, 403);
  t.equal((await api.call('POST', '/api/schedules/alices/pause', undefined, as(bob))).status, 403);
  t.equal((await api.call('DELETE', '/api/schedules/alices', undefined, as(bob))).status, 403);
  t.equal((await api.call('POST', '/api/schedules/alices/pause', undefined, as(admin))).json.suspend, true, 'an admin may pause it');
  const read = await api.call('GET', '/api/schedules/alices', undefined, as(alice));
  t.match(read.json, { suspend: true, nextRunAt: null, createdBy: alice.id }, 'paused: no next run; still alice\'s');
  t.equal((await api.call('POST', '/api/schedules/alices/resume', undefined, as(alice))).json.suspend, false);
  t.equal((await api.call('GET', '/api/schedules/')).status, 401, 'no key, no schedules');
  t.equal((await api.call('DELETE', '/api/schedules/alices', undefined, as(alice))).status, 204);
});
