// The OpenAPI document and the interactive reference at /api/, served by the service alone.
import t from 'tap';
import { startTestApi } from '../helpers/api.js';

t.test('/api/openapi.json is OpenAPI 3.1 with the paths and titled component schemas', async (t) => {
  const api = await startTestApi(t);
  const res = await api.call('GET', '/api/openapi.json');
  t.equal(res.status, 200);
  const doc = res.json;
  t.match(doc.openapi, /^3\.1\./, 'OpenAPI 3.1');
  t.type(doc.info?.title, 'string');
  for (const path of ['/api/apps/', '/api/apps/{appName}', '/api/apps/{appName}/log', '/api/apps/{appName}/stop', '/api/config-templates/', '/api/config-templates/{name}']) {
    t.ok(doc.paths[path], `path ${path}`);
  }
  t.ok(doc.paths['/api/apps/'].post && doc.paths['/api/apps/'].get, 'submit and list');
  t.ok(doc.paths['/api/apps/{appName}'].get && doc.paths['/api/apps/{appName}'].delete, 'read and delete');
  for (const method of ['get', 'put', 'delete']) t.ok(doc.paths['/api/config-templates/{name}'][method], `template ${method}`);

  const schemas = doc.components?.schemas ?? {};
  for (const title of ['Submission', 'Application', 'ApplicationConfig', 'PodConfig', 'ConfigTemplate', 'UnschedulableError']) {
    t.ok(schemas[title], `component ${title}`);
    t.equal(schemas[title]?.title, title, `component ${title} is named by its title`);
  }
  t.notOk(Object.keys(schemas).some((k) => /^def-\d+$/.test(k)), 'no def-N names');

  // Every $ref in the document resolves to a component that exists.
  const refs = new Set<string>();
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (k === '$ref' && typeof v === 'string') refs.add(v);
        else walk(v);
      }
    }
  };
  walk(doc);
  t.ok(refs.size > 0, 'the document uses references');
  for (const ref of refs) {
    const m = /^#\/components\/schemas\/(.+)$/.exec(ref);
    t.ok(m && schemas[m[1]], `${ref} resolves`);
  }
  const body = doc.paths['/api/apps/'].post.requestBody.content['application/json'].schema;
  t.same(body, { $ref: '#/components/schemas/Submission' }, 'the submit body is the Submission schema');
  t.ok(doc.paths['/api/apps/'].post.responses['422'], 'the 422 answer is documented');
  const headers = (doc.paths['/api/apps/'].post.parameters ?? []).filter((p: { in: string }) => p.in === 'header');
  const idempotency = headers.find((p: { name: string }) => p.name.toLowerCase() === 'idempotency-key');
  t.ok(idempotency, 'POST /api/apps/ documents the Idempotency-Key header');
  t.match(idempotency?.description ?? idempotency?.schema?.description ?? '', /repeat/, 'and what it is for');
});

t.test('/api/ is an HTML page whose assets are all served by the service itself', async (t) => {
  const api = await startTestApi(t);
  const base = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const origin = new URL(base).origin;
  for (const pagePath of ['/api/', '/api']) {
    await t.test(`page at ${pagePath}`, async (t) => {
      const page = await fetch(base + pagePath);
      t.equal(page.status, 200);
      t.match(page.headers.get('content-type') ?? '', /^text\/html/);
      const pageUrl = page.url; // after any redirect
      const html = await page.text();
      const assets = [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)=["']([^"']+)["']/gi)].map((m) => m[1]);
      t.ok(assets.length >= 2, `the page loads scripts and styles (${assets.length})`);
      t.notOk(/\b(?:src|href)=["'](?:https?:)?\/\//i.test(html), 'no absolute URL to another host in the page');
      for (const asset of assets) {
        const url = new URL(asset, pageUrl);
        t.equal(url.origin, origin, `${asset} is on this service`);
        const res = await fetch(url);
        t.equal(res.status, 200, `${asset} -> ${url.pathname} is served`);
        const text = await res.text();
        t.ok(text.length > 0, `${asset} is not empty`);
      }
      // The initializer names the document the page shows (relative to the page): it must be
      // ours too, and no validator badge may be fetched from another host.
      const initializer = assets.find((a) => /initializer/.test(a));
      t.ok(initializer, 'the page has an initializer script');
      const js = await (await fetch(new URL(initializer!, pageUrl))).text();
      const specUrl = /\burl:\s*resolveUrl\(\s*["']([^"']+)["']\s*\)/.exec(js)?.[1];
      t.ok(specUrl, 'the initializer names an OpenAPI URL relative to the page');
      const pageDir = pageUrl.endsWith('/') ? pageUrl : `${pageUrl}/`;
      const spec = await fetch(new URL(specUrl!, pageDir));
      t.equal(spec.status, 200, `${specUrl} is served`);
      t.equal(new URL(spec.url).origin, origin);
      t.match(((await spec.json()) as { openapi: string }).openapi, /^3\.1\./, 'and is the OpenAPI document');
      t.match(js, /validatorUrl:\s*null/, 'no online validator (another host) is called');
    });
  }
});
