// The informers' watch (cluster/kubernetes/line-watch.ts): client-node's Watch contract (query,
// one callback per event line, `done` once, the controller that aborts) with the stream cut into
// lines as it comes, against a stand-in apiserver that writes events in awkward pieces.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { KubeConfig } from '@kubernetes/client-node';
import { eachLine, LineWatch, watchPath } from '../../cluster/kubernetes/line-watch.js';
import { resilientInformer } from '../../cluster/kubernetes/informers.js';
import { tempDir } from '../helpers/temp.js';

/** The lines eachLine gives for these chunks, written one after another. */
function linesOf(chunks: Buffer[]): Promise<string[]> {
  const stream = new PassThrough();
  const lines: string[] = [];
  eachLine(stream, (line) => lines.push(line));
  return new Promise((ok) => {
    stream.once('end', () => setImmediate(() => ok(lines)));
    for (const chunk of chunks) stream.write(chunk);
    stream.end();
  });
}

t.test('eachLine: lines across chunks, several in one chunk, a character split between chunks, a last line without newline', async (t) => {
  const text = Buffer.from('{"a":1}\n{"b":"é€"}\n\n{"c":3}\n{"d":');
  const euro = text.indexOf(Buffer.from('€'));
  const chunks = [text.subarray(0, 3), text.subarray(3, euro + 1), text.subarray(euro + 1, euro + 2), text.subarray(euro + 2), Buffer.from('4}')];
  t.same(await linesOf(chunks), ['{"a":1}', '{"b":"é€"}', '', '{"c":3}', '{"d":4}']);
  t.same(await linesOf([Buffer.from('x\ny\n')]), ['x', 'y'], 'a stream that ends on a newline has no empty last line');
  t.same(await linesOf([]), []);
});

t.test('eachLine: a line longer than the cap ends the stream with an error, and is never given', async (t) => {
  const stream = new PassThrough();
  const lines: string[] = [];
  eachLine(stream, (line) => lines.push(line), 10);
  const error = new Promise<Error>((ok) => stream.once('error', ok));
  stream.write('short\n0123');
  stream.write('456789');
  stream.write('abc\n');
  t.match((await error).message, /longer than 10 bytes/);
  t.same(lines, ['short']);
});

t.test('watchPath: watch=true first, then the defined parameters, as client-node sends them', async (t) => {
  t.equal(watchPath('/api/v1/namespaces/ns/pods', { resourceVersion: '12', labelSelector: 'a,b=c', fieldSelector: undefined }),
    '/api/v1/namespaces/ns/pods?watch=true&resourceVersion=12&labelSelector=a%2Cb%3Dc');
  t.equal(watchPath('/apis/g/v1/things', undefined), '/apis/g/v1/things?watch=true');
});

function kubeconfig(dir: string, server: string): KubeConfig {
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'k', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user: { token: 'watch-token' } }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u', namespace: 'ns' } }],
  }));
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/** A stand-in apiserver; `answer` writes each watch's response. */
async function standIn(t: { teardown(run: () => void): void }, answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const seen: string[] = [];
  const server = createServer((request, response) => { seen.push(`${request.url} ${request.headers.authorization}`); answer(request, response); });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  return { kc: kubeconfig(tempDir(t as never), `http://127.0.0.1:${(server.address() as AddressInfo).port}`), seen };
}

const event = (type: string, name: string) => `${JSON.stringify({ type, object: { metadata: { name, resourceVersion: '5' } } })}\n`;

t.test('a watch: its events in order, however the stream is cut; a line that does not parse or a callback that throws is skipped; the end is done(null), once', async (t) => {
  const api = await standIn(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    const stream = event('ADDED', 'one') + 'not json\n' + event('MODIFIED', 'two') + event('DELETED', 'throws') + event('ADDED', 'three');
    const at = [5, 40, 41, 90];
    let from = 0;
    for (const to of at) { response.write(stream.slice(from, to)); from = to; }
    response.end(stream.slice(from));
  });
  const events: string[] = [];
  const dones: unknown[] = [];
  const ended = new Promise<void>((ok) => {
    void new LineWatch(api.kc).watch('/api/v1/namespaces/ns/pods', { resourceVersion: '7', labelSelector: 'role=driver' }, (type, object: { metadata: { name: string } }, whole: { type: string }) => {
      if (object.metadata.name === 'throws') throw new Error('a handler that throws');
      events.push(`${type} ${object.metadata.name} ${whole.type}`);
    }, (error) => { dones.push(error); ok(); });
  });
  await ended;
  await new Promise((ok) => setImmediate(ok));
  t.same(events, ['ADDED one ADDED', 'MODIFIED two MODIFIED', 'ADDED three ADDED']);
  t.same(dones, [null], 'done once, with no error');
  t.same(api.seen, ['/api/v1/namespaces/ns/pods?watch=true&resourceVersion=7&labelSelector=role%3Ddriver Bearer watch-token'], 'the query and the kubeconfig\'s credentials');
});

t.test('an answer other than 200 is done(error) with its statusCode (410: the informer lists again)', async (t) => {
  const api = await standIn(t, (_request, response) => response.writeHead(410, { 'content-type': 'application/json' }).end('{"kind":"Status","code":410}'));
  const error = await new Promise<{ statusCode?: number; message: string }>((ok) => {
    void new LineWatch(api.kc).watch('/api/v1/pods', {}, () => t.fail('no event'), (e) => ok(e));
  });
  t.equal(error.statusCode, 410);
  t.equal(error.message, 'Gone');
});

t.test('aborting an open watch ends it: done once, with an error, and no event after it', async (t) => {
  const api = await standIn(t, (_request, response) => { response.writeHead(200); response.write(event('ADDED', 'first')); });
  const events: string[] = [];
  const dones: unknown[] = [];
  let first!: () => void;
  const got = new Promise<void>((ok) => { first = ok; });
  let finished!: () => void;
  const done = new Promise<void>((ok) => { finished = ok; });
  const controller = await new LineWatch(api.kc).watch('/api/v1/pods', {}, (type: string) => { events.push(type); first(); }, (error) => { dones.push(error); finished(); });
  await got;
  controller.abort();
  await done;
  await new Promise((ok) => setImmediate(ok));
  t.same(events, ['ADDED']);
  t.equal(dones.length, 1);
  t.ok(dones[0] instanceof Error, 'an error, as client-node reports an aborted watch');
});

t.test('an informer on it lists, then gets the watch\'s events', async (t) => {
  const api = await standIn(t, (_request, response) => { response.writeHead(200); response.write(event('ADDED', 'watched')); });
  const informer = resilientInformer(api.kc, 'line-watch', '/api/v1/namespaces/ns/pods', async () => ({ items: [{ metadata: { name: 'listed', namespace: 'ns', resourceVersion: '1' } }], metadata: { resourceVersion: '1' } }));
  const added: string[] = [];
  const watched = new Promise<void>((ok) => informer.informer.on('add', (pod) => { added.push(pod.metadata!.name!); if (pod.metadata?.name === 'watched') ok(); }));
  await informer.start();
  t.teardown(() => informer.stop());
  await watched;
  t.same(added, ['listed', 'watched']);
  t.match(api.seen, [/^\/api\/v1\/namespaces\/ns\/pods\?watch=true&resourceVersion=1 /]);
});
