// The places the service leans on how a library works inside (issue 28), each pinned: when an
// upgrade changes what they rely on, a test here fails instead of the service silently losing
// the fix. Each test says what the code relies on and where. (client-node's private createAgent
// is no longer patched: the agent is handed over through public methods, pinned below.)
import { createServer, type Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';
import t from 'tap';
import { CoreV1Api, KubeConfig, ListWatch, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { ServiceKubeConfig } from '../../cluster/kubernetes/apiserver.js';
import { resilientInformer } from '../../cluster/kubernetes/informers.js';
import { informerHandlerErrors } from '../../cluster/kubernetes/metrics.js';
import { tempDir } from '../helpers/temp.js';

const require = createRequire(import.meta.url);

function kubeconfig(dir: string, server: string): string {
  const file = join(dir, 'kubeconfig');
  const config = {
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'k', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
  };
  writeFileSync(file, JSON.stringify(config));
  return file;
}

t.test('client-node asks the KubeConfig for each request\'s agent through the two public methods ServiceKubeConfig (cluster/kubernetes/apiserver.ts) overrides', async (t) => {
  // A stand-in apiserver: a list answers, a watch stays open.
  const server: Server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    if (request.url?.includes('watch=true')) response.flushHeaders();
    else response.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const { port } = server.address() as { port: number };
  const asked: string[] = [];
  class Recording extends ServiceKubeConfig {
    override applySecurityAuthentication(context: Parameters<ServiceKubeConfig['applySecurityAuthentication']>[0]) { asked.push('applySecurityAuthentication'); return super.applySecurityAuthentication(context); }
    override applyToHTTPSOptions(options: Parameters<ServiceKubeConfig['applyToHTTPSOptions']>[0]) { asked.push('applyToHTTPSOptions'); return super.applyToHTTPSOptions(options); }
  }
  const kc = new Recording();
  kc.loadFromFile(kubeconfig(tempDir(t), `http://127.0.0.1:${port}`));
  await kc.makeApiClient(CoreV1Api).listNamespace();
  t.same(asked, ['applySecurityAuthentication'], 'a generated call: applySecurityAuthentication');
  asked.length = 0;
  const watching = await new Watch(kc).watch('/api/v1/namespaces', {}, () => undefined, () => undefined);
  watching.abort();
  t.same(asked, ['applyToHTTPSOptions'], 'a watch (and informers, Log, Exec): applyToHTTPSOptions, through applyToFetchOptions');
});

t.test('client-node: ListWatch#on(\'change\') registers add, update and delete through this.on, where GuardedListWatch wraps them', async (t) => {
  const seen: string[] = [];
  class Recording<T extends KubernetesObject> extends ListWatch<T> {
    override on(verb: string, cb: (arg?: any) => void): void { seen.push(verb); super.on(verb as 'add', cb); }
  }
  const watch = new Recording('/api/v1/pods', new Watch(new KubeConfig()), async () => ({ items: [], metadata: {} }), false);
  watch.on('change', () => undefined);
  t.same(seen, ['change', 'add', 'update', 'delete']);
});

t.test('the guard at work: a handler that throws on the first list is counted and skipped, the informer starts', async (t) => {
  // A stand-in apiserver whose watch answers and then stays open, as a quiet one does.
  const server: Server = createServer((_request, response) => { response.writeHead(200, { 'content-type': 'application/json' }); response.flushHeaders(); });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const { port } = server.address() as { port: number };
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig(tempDir(t), `http://127.0.0.1:${port}`));
  const pods = [{ metadata: { name: 'a', resourceVersion: '1' } }, { metadata: { name: 'b', resourceVersion: '2' } }];
  const logged: string[] = [];
  const informer = resilientInformer(kc, 'pods-pin', '/api/v1/pods', async () => ({ items: pods, metadata: { resourceVersion: '2' } }), { log: (m) => logged.push(m) });
  const handled: string[] = [];
  informer.informer.on('add', (pod) => { if (pod.metadata?.name === 'a') throw new Error('unreadable'); handled.push(pod.metadata!.name!); });
  const before = (await informerHandlerErrors.get()).values.find((v) => v.labels.resource === 'pods-pin')?.value ?? 0;
  await informer.start();
  t.teardown(() => informer.stop());
  t.same(handled, ['b'], 'the next object is still delivered');
  const after = (await informerHandlerErrors.get()).values.find((v) => v.labels.resource === 'pods-pin')?.value ?? 0;
  t.equal(after - before, 1, 'the failure is counted');
  t.match(logged.join('\n'), /the add handler of a failed \(unreadable\)/);
});

t.test('@fastify/under-pressure reads process.memoryUsage() from a timer: the guard (lib/process-guards.ts) replaces that function', async (t) => {
  const main = require.resolve('@fastify/under-pressure');
  const source = readFileSync(join(dirname(main), 'index.js'), 'utf8');
  t.match(source, /process\.memoryUsage\(\)/, 'it calls process.memoryUsage() by that name (so replacing it takes effect)');
});
