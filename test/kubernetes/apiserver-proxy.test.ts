// The apiserver client module against the test bed's real apiserver (TLS, client
// certificate), with a kubeconfig whose proxy-url names a CONNECT proxy in this process:
// client-node's calls, a watch, the plain JSON writes and a pod-log request all go through
// the proxy, TLS end to end inside its tunnels. (A followed log through the proxy is in
// test/unit/apiserver-client.test.ts: the test bed has no kubelet to serve one.)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { KubeApiError, postJson } from '../../cluster/kubernetes/json-call.js';
import { openPodLog } from '../../cluster/kubernetes/log-request.js';
import { testbedUnavailable } from '../../testbed/control-plane.js';
import { startConnectProxy } from '../helpers/connect-proxy.js';
import { startTestbed } from '../helpers/kubernetes.js';
import { tempDir } from '../helpers/temp.js';

/** The test bed's kubeconfig with `proxy-url` added to its cluster. */
function proxiedKubeconfig(original: string, proxyUrl: string, file: string): string {
  const kc = new KubeConfig();
  kc.loadFromString(readFileSync(original, 'utf8'));
  const config = JSON.parse(kc.exportConfig()) as { clusters: { cluster: Record<string, unknown> }[] };
  for (const { cluster } of config.clusters) cluster['proxy-url'] = proxyUrl;
  writeFileSync(file, JSON.stringify(config));
  return file;
}

t.test('every kind of call reaches the real apiserver through the kubeconfig\'s proxy-url', { skip: testbedUnavailable() ?? false }, async (t) => {
  const dir = tempDir(t, 'subsvc-proxy-');
  const testbed = await startTestbed(join(dir, 'testbed'));
  t.teardown(() => testbed.stop());
  const proxy = await startConnectProxy();
  t.teardown(() => proxy.close());
  const clients = kubeClients(proxiedKubeconfig(testbed.kubeconfig, proxy.url, join(dir, 'proxied')));
  const target = new URL(testbed.server).host;

  const events: string[] = [];
  const added = new Promise<void>((ok, fail) => {
    void new Watch(clients.kc).watch('/api/v1/namespaces/default/configmaps', {}, (type, object: { metadata: { name: string } }) => {
      events.push(`${type} ${object.metadata.name}`);
      if (object.metadata.name === 'through-proxy') ok();
    }, (error) => { if (error) fail(error as Error); }).then((watch) => t.teardown(() => watch.abort()), fail);
  });
  t.ok((await clients.core.listNamespace()).items.some((n) => n.metadata?.name === 'default'), 'a generated call answers');
  await postJson(clients.kc, '/api/v1/namespaces/default/configmaps', { metadata: { name: 'through-proxy' }, data: { a: '1' } });
  await added;
  t.ok(events.includes('ADDED through-proxy'), 'the plain write is made, and the watch sees it');
  const log = await openPodLog(clients.kc, { namespace: 'default', pod: 'absent', follow: true }).catch((error: unknown) => error);
  t.type(log, KubeApiError, 'a pod-log request is answered by the apiserver');
  t.equal((log as KubeApiError).code, 404);

  t.same(proxy.refused, [], 'nothing went to the proxy as a forward request');
  t.ok(proxy.tunnels.length >= 2, `connections are tunnels (${proxy.tunnels.length})`);
  t.same(new Set(proxy.tunnels), new Set([target]), 'each to the apiserver');
});
