// Bad input, table-driven: each request gets the right status, a JSON error with a
// message (and, for a body or query that breaks its schema, the field), and creates nothing.
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { filesUnder } from '../helpers/temp.js';

interface Case {
  name: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url?: string;
  /** An object is sent as JSON; a string is sent as it is. */
  body?: unknown;
  contentType?: string;
  status: number;
  /** For schema errors: the field the answer must name. A RegExp when the exact spelling may vary. */
  field?: string | RegExp;
}

const apps = '/api/apps/?dryRun=false';
const templates = '/api/config-templates/';
const withExecutor = (executor: Record<string, unknown>) => ({ jobName: 'bad', configOverrides: { ...fakeJob(), executor } });
const hugeArguments = Array.from({ length: 20 }, () => 'x'.repeat(60_000)); // ~1.2 MB of JSON

const cases: Case[] = [
  // The submission body
  { name: 'malformed JSON', body: '{"jobName": ', status: 400 },
  { name: 'body is an array, not an object', body: '[1, 2]', status: 400, field: 'body' },
  { name: 'body is a string, not an object', body: '"bad"', status: 400, field: 'body' },
  { name: 'missing jobName', body: { configOverrides: fakeJob() }, status: 400, field: 'jobName' },
  { name: 'jobName is a number', body: { jobName: 7 }, status: 400, field: 'jobName' },
  { name: 'jobName has uppercase', body: { jobName: 'Daily' }, status: 400, field: 'jobName' },
  { name: 'jobName longer than 41', body: { jobName: 'a'.repeat(42) }, status: 400, field: 'jobName' },
  { name: 'jobName empty', body: { jobName: '' }, status: 400, field: 'jobName' },
  { name: 'unknown top-level field', body: { jobName: 'bad', priority: 'high' }, status: 400, field: 'priority' },
  { name: 'unknown nested field configOverrides.exectuor', body: { jobName: 'bad', configOverrides: { exectuor: { cores: 2 } } }, status: 400, field: 'configOverrides.exectuor' },
  { name: 'unknown nested field executor.coress', body: withExecutor({ coress: 2 }), status: 400, field: 'configOverrides.executor.coress' },
  { name: 'cores as a string', body: withExecutor({ cores: '2' }), status: 400, field: 'configOverrides.executor.cores' },
  { name: 'cores negative', body: withExecutor({ cores: -1 }), status: 400, field: 'configOverrides.executor.cores' },
  { name: 'cores a float', body: withExecutor({ cores: 1.5 }), status: 400, field: 'configOverrides.executor.cores' },
  { name: 'memory without unit', body: withExecutor({ memory: '4096' }), status: 400, field: 'configOverrides.executor.memory' },
  { name: 'bad coreRequest', body: withExecutor({ coreRequest: 'lots' }), status: 400, field: 'configOverrides.executor.coreRequest' },
  { name: 'driver cores zero', body: { jobName: 'bad', configOverrides: { driver: { cores: 0 } } }, status: 400, field: 'configOverrides.driver.cores' },
  { name: 'engineConf value not a string', body: { jobName: 'bad', configOverrides: { engineConf: { 'spark.executor.cores': 2 } } }, status: 400, field: /^configOverrides\.engineConf/ },
  { name: 'arguments not an array', body: { jobName: 'bad', configOverrides: { arguments: '--in a --out b' } }, status: 400, field: 'configOverrides.arguments' },
  { name: 'configOverrides not an object', body: { jobName: 'bad', configOverrides: 'fast' }, status: 400, field: 'configOverrides' },
  { name: 'wrong content-type text/plain', body: '{"jobName":"bad"}', contentType: 'text/plain', status: 415 },
  { name: 'body above 1 MiB', body: { jobName: 'bad', configOverrides: { arguments: hugeArguments } }, status: 413 },
  { name: 'unknown query parameter on submit', url: '/api/apps/?dryrun=true', body: { jobName: 'bad' }, status: 400, field: /dryrun/ },
  { name: 'missing template in a submission', body: { jobName: 'bad', configTemplateName: 'no-such-template', configOverrides: fakeJob() }, status: 404 },
  { name: 'bad template name in a submission', body: { jobName: 'bad', configTemplateName: 'Base!' }, status: 400, field: 'configTemplateName' },

  // Config templates
  { name: 'template name Bad_Name!', url: templates, body: { name: 'Bad_Name!', config: {} }, status: 400, field: 'name' },
  { name: 'template name of 64 characters', url: templates, body: { name: 'a'.repeat(64), config: {} }, status: 400, field: 'name' },
  { name: 'template name with a leading dash', url: templates, body: { name: '-base', config: {} }, status: 400, field: 'name' },
  { name: 'template name empty', url: templates, body: { name: '', config: {} }, status: 400, field: 'name' },
  { name: 'template without config', url: templates, body: { name: 'no-config' }, status: 400, field: 'config' },
  { name: 'template with an unknown config field', url: templates, body: { name: 'typo', config: { exectuor: {} } }, status: 400, field: 'config.exectuor' },
  { name: 'template name taken', url: templates, body: { name: 'base', config: {} }, status: 409 },
  { name: 'PUT name differs from the path', method: 'PUT', url: `${templates}base`, body: { name: 'other', config: {} }, status: 400, field: 'name' },
  { name: 'PUT of a missing template', method: 'PUT', url: `${templates}missing`, body: { name: 'missing', config: {} }, status: 404 },
  { name: 'GET of a missing template', method: 'GET', url: `${templates}missing`, status: 404 },
  { name: 'DELETE of a missing template', method: 'DELETE', url: `${templates}missing`, status: 404 },

  // Reading and managing apps
  { name: 'unknown app', method: 'GET', url: '/api/apps/no-such-app-20200101-000000-aaaaa', status: 404 },
  { name: 'log of an unknown app', method: 'GET', url: '/api/apps/no-such-app-20200101-000000-aaaaa/log', status: 404 },
  { name: 'stop of an unknown app', method: 'POST', url: '/api/apps/no-such-app-20200101-000000-aaaaa/stop', status: 404 },
  { name: 'delete of an unknown app', method: 'DELETE', url: '/api/apps/no-such-app-20200101-000000-aaaaa', status: 404 },
  { name: 'bad state filter', method: 'GET', url: '/api/apps/?state=DONE', status: 400, field: 'state' },
  { name: 'bad cursor', method: 'GET', url: '/api/apps/?cursor=not-a-cursor', status: 400, field: 'cursor' },
  { name: 'forged cursor (valid base64url, wrong shape)', method: 'GET', url: `/api/apps/?cursor=${Buffer.from('{"a":1}').toString('base64url')}`, status: 400, field: 'cursor' },
  { name: 'limit=0', method: 'GET', url: '/api/apps/?limit=0', status: 400, field: 'limit' },
  { name: 'limit not a number', method: 'GET', url: '/api/apps/?limit=ten', status: 400, field: 'limit' },
];

t.test('bad input is refused with a JSON error and creates nothing', async (t) => {
  const api = await startTestApi(t);
  const seeded = await api.call('POST', templates, { name: 'base', config: { engineConf: { 'spark.a': '1' } } });
  t.equal(seeded.status, 201, 'the template used by the PUT and 409 cases exists');

  const snapshot = async () => ({
    apps: (await api.call('GET', '/api/apps/')).json,
    templates: (await api.call('GET', templates)).json,
    files: filesUnder(api.dataDir),
  });
  const before = await snapshot();
  t.same(before.apps.items, [], 'no apps to begin with');
  t.equal(before.templates.items.length, 1);

  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const method = c.method ?? 'POST';
      const raw = typeof c.body === 'string';
      const res = await api.app.inject({
        method,
        url: c.url ?? apps,
        payload: c.body === undefined ? undefined : raw ? (c.body as string) : JSON.stringify(c.body),
        headers: c.body === undefined ? {} : { 'content-type': c.contentType ?? 'application/json' },
      });
      t.equal(res.statusCode, c.status, `status (body: ${res.body.slice(0, 200)})`);
      t.match(String(res.headers['content-type']), /^application\/json/, 'the error is JSON');
      const body = JSON.parse(res.body) as { message?: unknown; field?: unknown };
      t.type(body.message, 'string', 'has a message');
      t.ok(String(body.message).length > 0, 'the message is not empty');
      if (c.field instanceof RegExp) t.match(body.field, c.field, 'names the field');
      else if (c.field !== undefined) t.equal(body.field, c.field, 'names the field');
      if (c.field !== undefined && typeof c.field === 'string' && c.field !== 'body') {
        t.ok(String(body.message).includes(c.field), 'the message names the field too');
      }
      t.same(await snapshot(), before, 'nothing was created: apps, templates and files unchanged');
    });
  }
});
