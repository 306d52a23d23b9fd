// Kubernetes mode's source of Spark's static files for the Spark UI proxy's anonymous requests
// (cluster/history/remote-spark-static.ts), against a small HTTP server standing in for the
// History Server: plain static paths only, kept after the first fetch, nothing over the cap.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteSparkStatic } from '../../cluster/history/remote-spark-static.js';
import { kubernetesSparkStatic } from '../../cli/kubernetes-history.js';

async function historyServer(t: { teardown(fn: () => unknown): void }) {
  const asked: string[] = [];
  const server = createServer((request, response) => {
    asked.push(request.url ?? '');
    if (request.url === '/api/v1/version') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"spark":"3.5.7"}');
    } else if (request.url === '/static/spark-dag-viz.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end('function renderDagViz() {}');
    } else if (request.url === '/static/huge.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' });
      response.end(Buffer.alloc(9 * 1024 * 1024, 0x20));
    } else {
      response.writeHead(404).end('no');
    }
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), asked };
}

t.test('a static file comes from the History Server once, then from memory', async (t) => {
  const { url, asked } = await historyServer(t);
  const files = new RemoteSparkStatic({ server: url });
  const first = await files.read('/static/spark-dag-viz.js');
  t.equal(first?.body.toString(), 'function renderDagViz() {}');
  t.equal(first?.contentType, 'text/javascript');
  const again = await files.read('/static/spark-dag-viz.js');
  t.equal(again?.body.toString(), 'function renderDagViz() {}');
  t.same(asked, ['/static/spark-dag-viz.js'], 'asked for once');
});

t.test('only plain /static/ paths are asked for; a missing or oversized file is none', async (t) => {
  const { url, asked } = await historyServer(t);
  const files = new RemoteSparkStatic({ server: url });
  for (const path of ['/static/../api/v1/applications', '/static/%2e%2e/x', '/api/v1/applications', '/static/', '/static/a//b.js', '/static/.hidden']) {
    t.equal(await files.read(path), undefined, `refused: ${path}`);
  }
  t.same(asked, [], 'none of them reached the History Server');
  t.equal(await files.read('/static/missing.js'), undefined, 'a 404 is none');
  t.equal(await files.read('/static/huge.js'), undefined, 'over 8 MiB is none');
});

t.test('an unreachable History Server is none, not an error', async (t) => {
  const files = new RemoteSparkStatic({ server: new URL('http://127.0.0.1:9'), timeoutMs: 5000 });
  t.equal(await files.read('/static/spark-dag-viz.js'), undefined);
});

t.test('by version: the History Server has its own Spark\'s files alone; a folder per version has the others', async (t) => {
  const { url } = await historyServer(t);
  const remote = new RemoteSparkStatic({ server: url });
  t.ok(await remote.reader('/static/spark-dag-viz.js', '3.5.7'), 'the History Server\'s version (/api/v1/version): from it');
  t.notOk(await remote.reader('/static/spark-dag-viz.js', '4.2.0'), 'another version: not from it');
  t.ok(await remote.reader('/static/spark-dag-viz.js'), 'none named: from it');
  const dir = mkdtempSync(join(tmpdir(), 'ss-static-dir-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, '4.2.0'));
  writeFileSync(join(dir, '4.2.0', 'spark-dag-viz.js'), 'function fourTwo() {}');
  const source = kubernetesSparkStatic(remote, dir)!;
  t.equal((await source('/static/spark-dag-viz.js', '4.2.0'))?.body.toString(), 'function fourTwo() {}', '4.2.0 from its folder');
  t.match((await source('/static/spark-dag-viz.js', '3.5.7'))?.body.toString(), /renderDagViz/, 'a version without a folder: the History Server\'s, when it is that version');
  t.notOk(await source('/static/spark-dag-viz.js', '4.1.0'), 'neither: none');
  t.notOk(await source('/static/../../etc/passwd', '4.2.0'), 'no path out of the folder');
  t.equal(kubernetesSparkStatic(undefined, undefined), undefined, 'no History Server and no folder: no source');
});
