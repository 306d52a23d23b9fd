// Sizes and counts of every map and string of a submission are bounded by the schemas (and
// so by the OpenAPI document and the CRDs); keys that reach a prototype and lone surrogates
// are refused by name instead of "not valid JSON" or being stored.
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';

const many = (n: number, value = 'v') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]));

t.test('maps and strings of a submission have limits, with the field named', async (t) => {
  const api = await startTestApi(t);
  const submit = (configOverrides: object) => api.call('POST', '/api/apps/?dryRun=true', { jobName: 'limits', configOverrides: { ...fakeJob(), ...configOverrides } });
  const cases: [object, string][] = [
    [{ engineConf: many(257) }, 'configOverrides.engineConf'],
    [{ engineConf: { 'spark.x': 'v'.repeat(4097) } }, 'configOverrides.engineConf.spark.x'],
    [{ engineConf: { ['k'.repeat(257)]: 'v' } }, 'configOverrides.engineConf'],
    [{ arguments: Array.from({ length: 257 }, () => 'a') }, 'configOverrides.arguments'],
    [{ arguments: ['a'.repeat(4097)] }, 'configOverrides.arguments.0'],
    [{ driver: { env: many(129) } }, 'configOverrides.driver.env'],
    [{ driver: { env: { A: 'v'.repeat(4097) } } }, 'configOverrides.driver.env.A'],
    [{ driver: { env: { 'not a name': 'v' } } }, 'configOverrides.driver.env'],
    [{ executor: { annotations: many(65) } }, 'configOverrides.executor.annotations'],
    [{ executor: { labels: many(33) } }, 'configOverrides.executor.labels'],
    [{ executor: { secrets: Array.from({ length: 17 }, (_, i) => ({ name: `s${i}`, path: '/x' })) } }, 'configOverrides.executor.secrets'],
  ];
  for (const [overrides, field] of cases) {
    const res = await submit(overrides);
    t.equal(res.status, 400, field);
    t.equal(res.json.field, field);
  }
  t.equal((await submit({ engineConf: many(256), arguments: Array.from({ length: 256 }, () => 'a') })).status, 200, 'at the limits: accepted');
});

t.test('the OpenAPI document carries the limits', async (t) => {
  const api = await startTestApi(t);
  const doc = (await api.call('GET', '/api/openapi.json')).json;
  const text = JSON.stringify(doc);
  const config = doc.components.schemas['application-config.json'] ?? Object.values(doc.components.schemas).find((s: any) => s.title === 'ApplicationConfig');
  t.ok(config, 'ApplicationConfig is in the document');
  t.equal(config.properties.engineConf.maxProperties, 256);
  t.equal(config.properties.arguments.maxItems, 256);
  t.match(text, /"maxProperties":128/, 'env counts');
});

t.test('__proto__-like keys are refused by name; lone surrogates are not stored', async (t) => {
  const api = await startTestApi(t);
  const raw = (body: string) => api.call('POST', '/api/apps/?dryRun=true', body, { 'content-type': 'application/json' });
  for (const [body, field] of [
    ['{"jobName":"p","configOverrides":{"driver":{"env":{"__proto__":{"x":"y"}}}}}', 'configOverrides.driver.env.__proto__'],
    ['{"jobName":"p","__proto__":{"admin":true}}', '__proto__'],
    ['{"jobName":"p","configOverrides":{"engineConf":{"constructor":{"prototype":{"a":"b"}}}}}', 'configOverrides.engineConf.constructor'],
  ]) {
    const res = await raw(body);
    t.equal(res.status, 400, body);
    t.equal(res.json.field, field);
    t.match(res.json.message, field);
    t.notMatch(res.json.message, /not valid JSON/);
  }
  const surrogate = await raw('{"jobName":"p","configOverrides":{"arguments":["ok","\\ud800x"]}}');
  t.equal(surrogate.status, 400);
  t.equal(surrogate.json.field, 'configOverrides.arguments.1');
  const keySurrogate = await raw('{"jobName":"p","labels":{"\\udc00":"x"}}');
  t.equal(keySurrogate.status, 400);
  const paired = await raw('{"jobName":"p","configOverrides":{"arguments":["\\ud83d\\ude00"]}}');
  t.equal(paired.status, 200, 'a whole pair (an emoji) is text');
  t.same(({} as Record<string, unknown>).admin, undefined, 'no prototype was touched');
});

t.test('list pages stop at about 1 MiB of items, whatever limit says; next continues', async (t) => {
  const api = await startTestApi(t, { cores: 4 });
  // Six applications of about 400 KB each (the schema's limits allow it; the body stays under 1 MiB).
  const big = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`spark.big.${i}`, 'x'.repeat(4000)]));
  const names: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await api.call('POST', '/api/apps/', { jobName: 'big', configOverrides: { ...fakeJob(), engineConf: big } });
    t.equal(res.status, 201);
    names.push(res.json.appName);
  }
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await api.call('GET', `/api/apps/?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    t.equal(res.status, 200);
    t.ok(res.body.length < 1.5 * 1024 * 1024, `page ${pages + 1}: ${res.body.length} bytes`);
    seen.push(...res.json.items.map((a: { appName: string }) => a.appName));
    cursor = res.json.next;
    pages++;
  } while (cursor && pages < 10);
  t.ok(pages >= 2, `${pages} pages`);
  t.same(seen.sort(), names.sort(), 'every application once, across the pages');
});
