import Fastify from 'fastify';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { authPlugin, type AuthPluginOptions } from '../../submit-api/auth/plugin.js';

async function build(opts: Partial<AuthPluginOptions> & { store: AuthPluginOptions['store'] }, logs?: string[]) {
  const app = Fastify({
    logger: logs ? { level: 'warn', stream: { write: (line: string) => void logs.push(line) } } : false,
  });
  await app.register(authPlugin, { enabled: true, ...opts });
  app.get('/api/apps', async (req) => ({ apiKey: req.apiKey }));
  app.delete('/api/apps/:id', { config: { role: 'admin' } }, async (req) => ({ apiKey: req.apiKey }));
  // Stand-ins for the API reference pages.
  for (const url of ['/api/', '/api/openapi.json', '/api/json', '/api/yaml', '/api/static/index.html']) {
    app.get(url, async (req) => ({ docs: true, apiKey: req.apiKey }));
  }
  app.get('/healthz', async () => ({ ok: true }));
  await app.ready();
  t.teardown(() => app.close());
  return app;
}

t.test('enabled', async (t) => {
  const store = new FileKeyStore(t.testdir());
  const user = store.create('user');
  const admin = store.create('admin');
  const revoked = store.create('user');
  store.revoke(revoked.id);
  const app = await build({ store });

  const missing = await app.inject({ url: '/api/apps' });
  t.equal(missing.statusCode, 401, 'no key');
  t.match(missing.headers['www-authenticate'], /^Bearer /);
  t.match(missing.json(), { statusCode: 401, error: 'Unauthorized', message: String });
  t.match(missing.headers['content-type'], /application\/json/);

  const wrong = await app.inject({ url: '/api/apps', headers: { 'x-api-key': 'ssk_wrong' } });
  t.equal(wrong.statusCode, 401, 'wrong key');
  t.ok(wrong.headers['www-authenticate']);
  t.match(wrong.json(), { statusCode: 401, error: 'Unauthorized' });

  const rev = await app.inject({ url: '/api/apps', headers: { 'x-api-key': revoked.key } });
  t.equal(rev.statusCode, 401, 'revoked key');

  const basic = await app.inject({ url: '/api/apps', headers: { authorization: 'Basic ' + user.key } });
  t.equal(basic.statusCode, 401, 'other Authorization schemes are not read');

  const ok = await app.inject({ url: '/api/apps', headers: { 'x-api-key': user.key } });
  t.equal(ok.statusCode, 200, 'X-API-Key');
  t.same(ok.json(), { apiKey: { id: user.id, role: 'user' } }, 'request.apiKey set');

  const token = await app.inject({ url: '/api/apps', headers: { authorization: `token ${user.key}` } });
  t.equal(token.statusCode, 200, 'Authorization: token (Jupyter gateway client)');
  const bearer = await app.inject({ url: '/api/apps?x=1', headers: { authorization: `Bearer ${user.key}` } });
  t.equal(bearer.statusCode, 200, 'Authorization: Bearer');

  const forbidden = await app.inject({ method: 'DELETE', url: '/api/apps/1', headers: { 'x-api-key': user.key } });
  t.equal(forbidden.statusCode, 403, 'user key on admin route');
  t.match(forbidden.json(), { statusCode: 403, error: 'Forbidden', message: /admin/ });
  const allowed = await app.inject({ method: 'DELETE', url: '/api/apps/1', headers: { 'x-api-key': admin.key } });
  t.equal(allowed.statusCode, 200, 'admin key on admin route');
  const adminAsUser = await app.inject({ url: '/api/apps', headers: { 'x-api-key': admin.key } });
  t.equal(adminAsUser.statusCode, 200, 'admin outranks user');

  for (const url of ['/api/', '/api/openapi.json', '/api/json', '/api/yaml', '/api/static/index.html']) {
    const res = await app.inject({ url });
    t.equal(res.statusCode, 200, `docs open: ${url}`);
  }
  t.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'outside /api/ untouched');
  t.equal((await app.inject({ url: '/api/nothing-here' })).statusCode, 401, 'unknown /api/ paths need a key too');
  t.equal((await app.inject({ url: '/api/nothing-here', headers: { 'x-api-key': user.key } })).statusCode, 404);

  // Revocation through another store instance (as the CLI does) counts on the next request.
  new FileKeyStore(store.dataDir).revoke(user.id);
  t.equal((await app.inject({ url: '/api/apps', headers: { 'x-api-key': user.key } })).statusCode, 401, 'revoked elsewhere');
});

t.test('disabled: everything open, one warning at start', async (t) => {
  const logs: string[] = [];
  const store = {
    verify: () => {
      t.fail('store must not be consulted');
      return undefined;
    },
  };
  const app = await build({ enabled: false, store }, logs);
  const res = await app.inject({ url: '/api/apps' });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { apiKey: null });
  t.equal((await app.inject({ method: 'DELETE', url: '/api/apps/1' })).statusCode, 200, 'admin routes open too');
  const warnings = logs.map((l) => JSON.parse(l)).filter((l) => l.level === 40);
  t.equal(warnings.length, 1, 'warned once');
  t.match(warnings[0].msg, /authentication is OFF/);
});

t.test('log: false keeps it quiet', async (t) => {
  const logs: string[] = [];
  await build({ enabled: false, store: { verify: () => undefined }, log: false }, logs);
  t.same(logs, []);
});

t.test('the real swagger-ui pages under /api need no key', async (t) => {
  const { default: swagger } = await import('@fastify/swagger');
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  const app = Fastify();
  await app.register(authPlugin, { enabled: true, store: { verify: () => undefined } });
  await app.register(swagger, { openapi: { info: { title: 't', version: '1' } } });
  await app.register(swaggerUi, { routePrefix: '/api' });
  app.get('/api/apps', async () => ({}));
  await app.ready();
  t.teardown(() => app.close());
  for (const url of ['/api/', '/api/static/index.html', '/api/static/swagger-initializer.js', '/api/static/swagger-ui.css', '/api/json', '/api/yaml']) {
    const res = await app.inject({ url });
    t.ok(res.statusCode < 400, `${url} -> ${res.statusCode}`);
  }
  t.equal((await app.inject({ url: '/api/apps' })).statusCode, 401, 'the API itself still needs a key');
});
