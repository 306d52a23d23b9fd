// /metrics of the API in local mode, scraped while real Spark applications run: every
// series of the API moves (request latency by route pattern and status, submissions by
// outcome), and every write leaves an audit line with the key id that made it.
import { join } from 'node:path';
import t from 'tap';
import { exampleCluster, repoRoot, startTestApi } from '../helpers/api.js';
import { captureLog, declares, sample } from '../helpers/metrics.js';
import { waitForState } from '../helpers/poll.js';
import { realSpark } from '../helpers/service.js';

const spark = realSpark();
const KEY = 'ssk_metrics-test-secret-key';
const identity = { id: 'key-metrics', role: 'admin' as const };
const store = { verify: (key: string) => (key === KEY ? identity : undefined), byId: (id: string) => (id === identity.id ? identity : undefined) };
const auth = { 'x-api-key': KEY };

t.test('local mode: /metrics moves with a run of submissions; writes are audited', { skip: spark ? false : 'no Spark virtualenv (scripts/setup.sh makes one)' }, async (t) => {
  const log = captureLog();
  const api = await startTestApi(t, { cores: 2, spark, auth: { enabled: true, store }, logger: log.logger });
  const scrape = async () => {
    const res = await api.app.inject({ method: 'GET', url: '/metrics' });
    t.equal(res.statusCode, 200, '/metrics answers without a key');
    t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    return res.body;
  };
  const before = await scrape();
  const pi = { type: 'Python', mainApplicationFile: `local://${join(repoRoot, 'examples', 'pi.py')}`, arguments: ['2'], executor: { cores: 1 } };

  const created = await api.call('POST', '/api/apps/', { jobName: 'metered', configOverrides: pi }, auth);
  t.equal(created.status, 201, created.body.slice(0, 300));
  const killed = await api.call('POST', '/api/apps/', { jobName: 'metered', configOverrides: pi }, auth);
  t.equal(killed.status, 201);
  t.equal((await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'metered', configOverrides: pi }, auth)).status, 200);
  const cores = exampleCluster().expected.rejectedExecutorCores;
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'metered', configOverrides: { executor: { cores } } }, auth)).status, 422);
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'metered', configOverides: {} }, auth)).status, 400);
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'metered' })).status, 401, 'no key');
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'metered', configTemplateName: 'nothing-here' }, auth)).status, 404);
  t.equal((await api.call('GET', '/api/nothing/here', undefined, auth)).status, 404);

  // Scraped while the drivers run.
  const during = await scrape();
  const moved = (name: string, labels: Record<string, string>) => sample(during, name, labels) - sample(before, name, labels);
  const subs = 'submission_service_submissions_total';
  t.equal(moved(subs, { outcome: 'created' }), 2, 'submissions: created');
  t.equal(moved(subs, { outcome: 'dry_run' }), 1, 'submissions: dry_run');
  t.equal(moved(subs, { outcome: 'unschedulable' }), 1, 'submissions: unschedulable');
  t.equal(moved(subs, { outcome: 'invalid' }), 1, 'submissions: invalid');
  t.equal(moved(subs, { outcome: 'unauthorized' }), 1, 'submissions: unauthorized');
  t.equal(moved(subs, { outcome: 'not_found' }), 1, 'submissions: not_found (template)');
  const http = 'submission_service_http_request_duration_seconds_count';
  t.equal(moved(http, { method: 'POST', route: '/api/apps/', status_code: '201' }), 2, 'latency: POST /api/apps/ 201');
  t.equal(moved(http, { method: 'POST', route: '/api/apps/', status_code: '422' }), 1, 'latency: POST /api/apps/ 422');
  t.equal(moved(http, { method: 'GET', route: 'unmatched', status_code: '404' }), 1, 'an unmatched URL is one label, not its path');
  t.notMatch(during, /route="\/api\/nothing/, 'raw URLs never become labels');
  t.ok(moved('submission_service_http_request_duration_seconds_sum', { route: '/api/apps/', status_code: '201' }) > 0, 'latency sum grows');
  t.ok(declares(during, 'process_cpu_user_seconds_total'), 'process series are exposed');

  t.equal((await api.call('POST', `/api/apps/${killed.json.appName}/stop`, undefined, auth)).status, 200);
  const done = await waitForState(async () => (await api.call('GET', `/api/apps/${created.json.appName}`, undefined, auth)).json as { state?: string }, ['COMPLETED'], { timeoutMs: 150_000, intervalMs: 500 });
  t.equal(done.state, 'COMPLETED');
  const read = await api.call('GET', `/api/apps/${created.json.appName}`, undefined, auth);
  t.equal(read.status, 200);
  t.equal((await api.call('DELETE', `/api/apps/${created.json.appName}`, undefined, auth)).status, 204);
  const template = { name: 'metered', config: { executor: { cores: 1 } } };
  t.equal((await api.call('POST', '/api/config-templates/', template, auth)).status, 201);
  t.equal((await api.call('PUT', '/api/config-templates/metered', template, auth)).status, 200);
  t.equal((await api.call('DELETE', '/api/config-templates/metered', undefined, auth)).status, 204);

  const after = await scrape();
  const since = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(during, name, labels);
  t.ok(since(http, { method: 'GET', route: '/api/apps/:appName', status_code: '200' }) >= 2, 'reads counted under the route pattern');
  t.equal(since(http, { method: 'POST', route: '/api/apps/:appName/stop', status_code: '200' }), 1, 'stop');
  t.equal(since(http, { method: 'DELETE', route: '/api/apps/:appName', status_code: '204' }), 1, 'delete');
  t.equal(since(http, { method: 'POST', route: '/api/config-templates/', status_code: '201' }), 1, 'template create');

  const audit = log.lines.filter((line) => line.audit === true);
  const find = (method: string, route: string, status: number) => audit.find((l) => l.method === method && l.route === route && l.statusCode === status);
  t.match(find('POST', '/api/apps/', 201), { keyId: 'key-metrics', target: created.json.appName }, 'submit audited with key id and app');
  t.match(find('POST', '/api/apps/', 401), { keyId: null }, 'a refused write is audited too');
  t.match(find('POST', '/api/apps/:appName/stop', 200), { keyId: 'key-metrics', params: { appName: killed.json.appName } }, 'stop audited');
  t.match(find('DELETE', '/api/apps/:appName', 204), { keyId: 'key-metrics', params: { appName: created.json.appName } }, 'delete audited');
  t.match(find('POST', '/api/config-templates/', 201), { keyId: 'key-metrics', target: 'metered' }, 'template create audited');
  t.match(find('PUT', '/api/config-templates/:name', 200), { keyId: 'key-metrics', params: { name: 'metered' } }, 'template replace audited');
  t.match(find('DELETE', '/api/config-templates/:name', 204), { keyId: 'key-metrics' }, 'template delete audited');
  t.notOk(audit.some((l) => l.method === 'GET'), 'reads are not audit lines');
  t.notOk(log.lines.some((l) => JSON.stringify(l).includes(KEY)), 'the key itself never reaches the log');
});
