// The apiserver client module (cluster/kubernetes/apiserver.ts): a kubeconfig's proxy-url is
// honoured by every kind of call — client-node's generated calls and watches, the plain JSON
// writes and a followed pod log — each going as a CONNECT tunnel through the proxy, on one
// shared agent. Against a stand-in apiserver on plain http: client-node by itself would send
// such calls to the proxy as absolute URLs (its forward-proxy agent), which the test proxy
// refuses, so a refused request is a call that did not use the module's agent.
import { createServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Watch } from '@kubernetes/client-node';
import { connectionOf } from '../../cluster/kubernetes/apiserver.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { kubeCall } from '../../cluster/kubernetes/errors.js';
import { UnavailableError } from '../../cluster/cluster.js';
import { postJson } from '../../cluster/kubernetes/json-call.js';
import { openPodLog } from '../../cluster/kubernetes/log-request.js';
import { startConnectProxy } from '../helpers/connect-proxy.js';
import { generateCa, issueServingCert } from '../../certs/generate.js';
import { tempDir } from '../helpers/temp.js';

function kubeconfigFile(dir: string, server: string, proxyUrl?: string): string {
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'k', cluster: { server, 'insecure-skip-tls-verify': true, ...(proxyUrl ? { 'proxy-url': proxyUrl } : {}) } }],
    users: [{ name: 'u', user: { token: 'secret-token' } }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'ns' } }],
  }));
  return file;
}

/** A stand-in apiserver: a namespace list, a create, a watch that sends one event, and a followed log written line by line as the test asks. */
async function standIn(t: { teardown(run: () => void): void }) {
  const seen: string[] = [];
  let follow: ServerResponse | undefined;
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url} ${request.headers.authorization}`);
    const url = new URL(request.url!, 'http://x');
    response.setHeader('content-type', 'application/json');
    if (url.pathname === '/api/v1/namespaces' && url.searchParams.get('watch') === 'true') {
      response.write(`${JSON.stringify({ type: 'ADDED', object: { kind: 'Namespace', metadata: { name: 'watched', resourceVersion: '2' } } })}\n`);
      return; // stays open, as a watch does
    }
    if (url.pathname === '/api/v1/namespaces') { response.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [{ metadata: { name: 'ns' } }] })); return; }
    if (request.method === 'POST') { request.resume(); request.once('end', () => response.writeHead(201).end(JSON.stringify({ metadata: { name: 'made' } }))); return; }
    if (url.pathname.endsWith('/log')) { response.setHeader('content-type', 'text/plain'); response.write('line 1\n'); follow = response; return; }
    response.writeHead(404).end(JSON.stringify({ kind: 'Status', code: 404, message: 'not here' }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, target: `127.0.0.1:${port}`, seen, follow: () => follow };
}

t.test('every kind of call goes through the kubeconfig\'s proxy-url, as CONNECT tunnels on one agent, with the kubeconfig\'s token', async (t) => {
  const api = await standIn(t);
  const proxy = await startConnectProxy();
  t.teardown(() => proxy.close());
  const clients = kubeClients(kubeconfigFile(tempDir(t), api.url, proxy.url));

  const namespaces = await clients.core.listNamespace();
  t.same(namespaces.items.map((n) => n.metadata?.name), ['ns'], 'a generated call answers');
  t.same(await postJson(clients.kc, '/api/v1/namespaces/ns/configmaps', { metadata: { name: 'made' } }), { metadata: { name: 'made' } }, 'a plain JSON write answers');

  const event = await new Promise<string>((ok, fail) => {
    void new Watch(clients.kc).watch('/api/v1/namespaces', {}, (type, object: { metadata: { name: string } }) => ok(`${type} ${object.metadata.name}`), (error) => { if (error) fail(error as Error); })
      .then((controller) => t.teardown(() => controller.abort()), fail);
  });
  t.equal(event, 'ADDED watched', 'a watch streams');

  const controller = new AbortController();
  const log = await openPodLog(clients.kc, { namespace: 'ns', pod: 'driver', follow: true, signal: controller.signal });
  let text = '';
  const waiting: { line: string; ok: () => void }[] = [];
  log.on('data', (chunk: Buffer) => { text += chunk.toString(); for (const w of waiting) if (text.includes(w.line)) w.ok(); });
  const until = (line: string) => new Promise<void>((ok) => { if (text.includes(line)) ok(); else waiting.push({ line, ok }); });
  await until('line 1');
  api.follow()!.write('line 2\n'); // written after the first was read: the log is followed, not read whole
  await until('line 2');
  controller.abort();
  t.equal(text, 'line 1\nline 2\n', 'a followed log streams line by line');

  t.same(proxy.refused, [], 'no call went to the proxy as a forward request (client-node\'s own agent)');
  t.ok(proxy.tunnels.length >= 2 && proxy.tunnels.every((target) => target === api.target), `every connection is a tunnel to the apiserver (${proxy.tunnels.length})`);
  t.ok(api.seen.length >= 4 && api.seen.every((line) => line.endsWith('Bearer secret-token')), 'every request carries the kubeconfig\'s token');
  t.ok(api.seen.some((line) => line.startsWith('GET /api/v1/namespaces/ns/pods/driver/log?follow=true')), 'the follow went through it');
});

t.test('a proxy that refuses the tunnel, or is gone, makes the apiserver unreachable (503), saying why', async (t) => {
  const proxy = await startConnectProxy();
  // Nothing listens at port 9 of this machine: the proxy answers 502.
  const clients = kubeClients(kubeconfigFile(tempDir(t), 'http://127.0.0.1:9', proxy.url));
  const refused = await kubeCall(clients.server, 'list namespaces', () => postJson(clients.kc, '/api/v1/namespaces', {})).catch((error: unknown) => error);
  t.type(refused, UnavailableError);
  t.match((refused as Error).message, /unreachable \(EPROXYTUNNEL\) while trying to list namespaces/);
  await proxy.close();

  const api = await standIn(t);
  const gone = await startConnectProxy();
  await gone.close();
  const direct = kubeClients(kubeconfigFile(tempDir(t), api.url, gone.url));
  const error = await kubeCall(direct.server, 'list namespaces', () => direct.core.listNamespace()).catch((e: unknown) => e);
  t.type(error, UnavailableError);
  t.match((error as Error).message, /unreachable \(ECONNREFUSED\)/, 'the proxy gone: the call fails');
  t.same(api.seen, [], 'and did not go around it to the apiserver, which is up');
});

t.test('a socks proxy-url is refused at start with what to use instead', async (t) => {
  t.throws(() => kubeClients(kubeconfigFile(tempDir(t), 'https://127.0.0.1:6443', 'socks5://127.0.0.1:1080')), /proxy-url socks5:\/\/127\.0\.0\.1:1080 is not supported: use an http:\/\/ or https:\/\/ proxy/);
});

t.test('one connection per KubeConfig: client-node\'s calls share one agent, the plain calls another kept alive', async (t) => {
  const clients = kubeClients(kubeconfigFile(tempDir(t), 'https://127.0.0.1:6443'));
  const connection = connectionOf(clients.kc);
  t.equal(connectionOf(clients.kc), connection, 'the same connection');
  const first = await clients.kc.applyToFetchOptions({});
  const second = await clients.kc.applyToFetchOptions({});
  t.equal(first.agent, second.agent, 'the same agent for every client-node request (TLS sessions resumed)');
  t.equal(first.agent, await connection.fetchAgent());
  t.equal((first.agent as { keepAlive?: boolean }).keepAlive, false, 'not kept alive (node-fetch 2\'s "Premature close")');
});

t.test('a plain call goes to the server URL\'s own path (a proxy in front of the apiserver), as client-node\'s calls do, with the token', async (t) => {
  const api = await standIn(t);
  const clients = kubeClients(kubeconfigFile(tempDir(t), `${api.url}/clusters/c-1/`));
  await postJson(clients.kc, '/api/v1/namespaces/ns/pods?fieldManager=x', { metadata: { name: 'made' } });
  await clients.core.listNamespace().catch(() => undefined); // the stand-in answers the unprefixed path only; the request is what counts
  t.same(api.seen, [
    'POST /clusters/c-1/api/v1/namespaces/ns/pods?fieldManager=x Bearer secret-token',
    'GET /clusters/c-1/api/v1/namespaces Bearer secret-token',
  ]);
});

t.test('both agents verify the apiserver with one SecureContext made from the kubeconfig\'s CA, not its text parsed per connection', async (t) => {
  const ca = await generateCa({ validityDays: 2 });
  const serving = await issueServingCert({ ca, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityDays: 1 });
  const server = createHttpsServer({ cert: serving.cert, key: serving.key }, (request, response) => {
    request.resume();
    response.setHeader('content-type', 'application/json');
    if (request.method === 'POST') response.writeHead(201).end(JSON.stringify({ metadata: { name: 'made' } }));
    else response.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const kubeconfig = (caPem: string) => {
    const file = join(tempDir(t), 'kubeconfig');
    writeFileSync(file, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
      clusters: [{ name: 'k', cluster: { server: url, 'certificate-authority-data': Buffer.from(caPem).toString('base64') } }],
      users: [{ name: 'u', user: { token: 'secret-token' } }],
      contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'ns' } }],
    }));
    return kubeClients(file);
  };
  const trusted = kubeconfig(ca.cert);
  // client-node's agent opens a connection per call: three connections, each verified.
  for (let i = 0; i < 3; i++) t.same((await trusted.core.listNamespace()).items, [], `client-node's call ${i + 1}`);
  t.same(await postJson(trusted.kc, '/api/v1/namespaces/ns/pods', {}), { metadata: { name: 'made' } }, 'a plain call');
  const agent = (await connectionOf(trusted.kc).fetchAgent()) as unknown as { options: Record<string, unknown> };
  t.ok(agent.options.secureContext, 'the agent has one SecureContext');
  t.equal(agent.options.ca, undefined, 'and no CA text to parse again per connection');
  const other = await generateCa({ validityDays: 1 });
  const untrusted = kubeconfig(other.cert);
  await t.rejects(untrusted.core.listNamespace(), 'a server that the kubeconfig\'s CA did not sign is refused (client-node)');
  await t.rejects(postJson(untrusted.kc, '/api/v1/namespaces/ns/pods', {}), /certificate/, 'and by a plain call');
});
