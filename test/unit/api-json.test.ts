// The apiserver's JSON parsed without metadata.managedFields (cluster/kubernetes/api-json.ts):
// the same object as JSON.parse gives, less that one member, wherever the apiserver puts it; any
// other text parsed whole. And the two readers that use it: the plain calls' answers
// (json-call.ts) and the informers' watch events (line-watch.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { KubeConfig } from '@kubernetes/client-node';
import { parseApiJson, withoutManagedFields } from '../../cluster/kubernetes/api-json.js';
import { postJson } from '../../cluster/kubernetes/json-call.js';
import { LineWatch } from '../../cluster/kubernetes/line-watch.js';
import { tempDir } from '../helpers/temp.js';

const OWNER = '0f6bd2cc-5b1e-4f8e-9d0e-2a7c7f3c9b11';

/** A driver pod as the apiserver answers it: managedFields last in metadata, with the owner's uid in a key. */
function pod(extra: Record<string, unknown> = {}) {
  return {
    kind: 'Pod', apiVersion: 'v1',
    metadata: {
      name: 'app-1', namespace: 'ns', uid: 'u-1', resourceVersion: '7',
      labels: { 'spark-role': 'driver' },
      // A string holding what the cut looks for, escaped as every string's quotes are.
      annotations: { 'submission-service/config': JSON.stringify({ managedFields: [1], note: 'a \\"quoted\\" \\\\ end\\\\' }), managedFields: 'an annotation of that name' },
      ownerReferences: [{ apiVersion: 'submission-service.io/v1', kind: 'Application', name: 'app-1', uid: OWNER, controller: true }],
      managedFields: [{
        manager: 'submission-service', operation: 'Update', apiVersion: 'v1', time: '2026-11-29T21:46:14Z', fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:ownerReferences': { '.': {}, [`k:{"uid":"${OWNER}"}`]: {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"driver"}': { '.': {}, 'f:args': {} } } } },
      }],
      ...extra,
    },
    spec: { containers: [{ name: 'driver', args: ['x]', '{y'] }] },
    status: { phase: 'Pending' },
  };
}

function withoutThem<T extends { metadata: Record<string, unknown> }>(object: T): T {
  const copy = structuredClone(object);
  delete copy.metadata.managedFields;
  return copy;
}

t.test('an object, a watch event, an Application (keys sorted: managedFields amid metadata): the parse less managedFields', async (t) => {
  const object = pod();
  t.same(parseApiJson(JSON.stringify(object)), withoutThem(object));
  t.notOk(withoutManagedFields(JSON.stringify(object)).includes(`${OWNER}\\"`), 'the key with the owner\'s uid is not parsed');
  const event = { type: 'ADDED', object };
  t.same(parseApiJson(JSON.stringify(event)), { type: 'ADDED', object: withoutThem(object) });
  const application = { apiVersion: 'submission-service.io/v1', kind: 'Application', metadata: { annotations: { a: 'b' }, generation: 1, managedFields: [{ manager: 'm', fieldsV1: { 'f:spec': { '.': {} } } }], name: 'app-1' }, spec: { config: { managedFields: ['kept'] } } };
  t.same(parseApiJson(JSON.stringify(application)), withoutThem(application), 'a member on each side: one comma goes');
  t.same(parseApiJson('{"metadata":{"managedFields":[]}}'), { metadata: {} }, 'the only member');
  t.same(parseApiJson('{"metadata":{"name":"x","managedFields":[{"a":"]}"}]}}'), { metadata: { name: 'x' } }, 'the last member; brackets inside strings');
});

t.test('text the cut does not recognise is parsed whole, as JSON.parse would', async (t) => {
  const spaced = JSON.stringify(pod(), null, 2);
  t.same(parseApiJson(spaced), JSON.parse(spaced), 'formatted JSON: managedFields kept');
  const nested = { spec: { metadata: { managedFields: [1] } }, metadata: { name: 'x' } };
  t.same(parseApiJson(JSON.stringify(nested)), nested, 'managedFields anywhere but the object\'s metadata stay');
  t.same(parseApiJson('{"kind":"Status","code":404,"message":"not found"}'), { kind: 'Status', code: 404, message: 'not found' });
  t.same(parseApiJson('[1,2]'), [1, 2]);
  t.same(parseApiJson('"text"'), 'text');
  t.throws(() => parseApiJson('404 page not found'), SyntaxError, 'not JSON: JSON.parse\'s error');
  t.throws(() => parseApiJson('{"metadata":{"managedFields":[{"a":1}'), SyntaxError, 'cut short: JSON.parse\'s error');
});

t.test('the plain calls\' answers and the watch\'s events come without managedFields', async (t) => {
  const object = pod();
  const server = createServer((request, response) => {
    response.writeHead(request.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' });
    if (request.method === 'POST') { request.resume(); request.once('end', () => response.end(JSON.stringify(object))); return; }
    response.write(`${JSON.stringify({ type: 'ADDED', object })}\n`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const file = join(tempDir(t), 'kubeconfig');
  writeFileSync(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c', users: [{ name: 'u', user: { token: 't' } }],
    clusters: [{ name: 'k', cluster: { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'insecure-skip-tls-verify': true } }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
  }));
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  t.same(await postJson(kc, '/api/v1/namespaces/ns/pods', { kind: 'Pod' }), withoutThem(object));
  let controller: AbortController | undefined;
  const watched = await new Promise<unknown>((ok) => {
    void new LineWatch(kc).watch('/api/v1/namespaces/ns/pods', {}, (_type, received) => ok(received), () => undefined).then((c) => { controller = c; });
  });
  controller?.abort();
  t.same(watched, withoutThem(object));
});
