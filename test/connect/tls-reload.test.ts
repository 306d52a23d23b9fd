// The Spark Connect endpoint's certificate from files (--connect-tls-cert/-key, the chart's
// connect.existingSecret) is followed while the endpoint runs: the files are rotated the way
// kubelet updates a Secret volume (a new folder, the `..data` link swapped) and a new TLS
// connection sees the new certificate; a broken pair keeps the old one served, and says why.
import { EventEmitter, once } from 'node:events';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect } from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { generateCa, issueServingCert, type KeyPairPem } from '../../certs/generate.js';
import { keyPairProblem } from '../../cli/connect-tls-reload.js';
import { startConnectEndpoint } from '../../cli/connect-wiring.js';
import { tempDir } from '../helpers/temp.js';

const ca = await generateCa({ commonName: 'tls-reload test CA' });
const pairFor = (name: string) => issueServingCert({ ca, dnsNames: [name, 'localhost'], ipAddresses: ['127.0.0.1'] });

/** A Secret volume as kubelet lays it out: tls.crt and tls.key through `..data` to a timestamped folder. */
function secretVolume(dir: string) {
  let generation = 0;
  const write = (files: Record<string, string>) => {
    const folder = `..${++generation}`;
    mkdirSync(join(dir, folder));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, folder, name), text);
    symlinkSync(folder, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    if (generation > 1) rmSync(join(dir, `..${generation - 1}`), { recursive: true });
  };
  const put = (pair: KeyPairPem) => write({ 'tls.crt': pair.cert, 'tls.key': pair.key });
  return {
    put,
    link: () => { for (const name of ['tls.crt', 'tls.key']) symlinkSync(join('..data', name), join(dir, name)); },
    write,
  };
}

/** The subject's common name of the certificate a new TLS connection to the endpoint gets. */
async function servedName(port: number): Promise<string | string[] | undefined> {
  const socket = connect({ host: '127.0.0.1', port, ALPNProtocols: ['h2'], rejectUnauthorized: false });
  await once(socket, 'secureConnect');
  const name = socket.getPeerCertificate().subject?.CN;
  socket.destroy();
  return name;
}

/** A logger whose lines the test waits for. */
function capturedLog() {
  const lines = new EventEmitter();
  const stream = new Writable({ write(chunk: Buffer, _encoding, done) { lines.emit('line', JSON.parse(chunk.toString()) as { msg: string; level: number }); done(); } });
  const next = (pattern: RegExp) => new Promise<string>((resolve) => {
    const onLine = (line: { msg: string }) => { if (pattern.test(line.msg)) { lines.off('line', onLine); resolve(line.msg); } };
    lines.on('line', onLine);
  });
  return { log: pino({ level: 'info' }, stream) as unknown as FastifyBaseLogger, next };
}

t.test('a rotated Secret volume is served to new connections; a broken pair keeps the old certificate', async (t) => {
  const dir = tempDir(t);
  const volume = secretVolume(dir);
  const [first, second, third] = [await pairFor('first.example'), await pairFor('second.example'), await pairFor('third.example')];
  volume.put(first);
  volume.link();
  const { log, next } = capturedLog();
  const endpoint = await startConnectEndpoint('127.0.0.1', {
    dataDir: dir, log, apiUrl: () => 'http://127.0.0.1:9', defaultVersion: '3.5.7', stopApp: async () => undefined, proof: undefined, sessionClaims: async () => [],
    auth: { enabled: false, store: { verify: () => undefined } },
    settings: { port: 0, explicit: true, idleMs: 0, tls: { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') }, warmPool: new Map() },
  });
  t.teardown(() => endpoint?.close());
  const port = Number(/:(\d+)$/.exec(endpoint!.url)?.[1]);
  t.equal(await servedName(port), 'first.example', 'the certificate read at start');

  const served = next(/serving the new certificate/);
  volume.put(second);
  await served;
  t.equal(await servedName(port), 'second.example', 'after the swap, a new connection gets the new certificate');

  const refused = next(/kept its certificate/);
  volume.write({ 'tls.crt': third.cert, 'tls.key': first.key });
  t.match(await refused, /not the certificate's/, 'a key of another certificate is refused, and the log says why');
  t.equal(await servedName(port), 'second.example', 'the old certificate is still served');

  const garbled = next(/kept its certificate/);
  volume.write({ 'tls.crt': 'not a certificate', 'tls.key': third.key });
  t.match(await garbled, /not a PEM certificate and key/);
  t.equal(await servedName(port), 'second.example');

  const again = next(/serving the new certificate/);
  volume.put(third);
  await again;
  t.equal(await servedName(port), 'third.example', 'a good pair after broken ones is served');
});

t.test('keyPairProblem: what makes a pair unservable', async (t) => {
  const [a, b] = [await pairFor('a.example'), await pairFor('b.example')];
  t.equal(keyPairProblem(a), undefined, 'a matching pair');
  t.match(keyPairProblem({ cert: a.cert, key: b.key }), /not the certificate's/);
  t.match(keyPairProblem({ cert: a.cert, key: '' }), /not a PEM/);
  t.match(keyPairProblem(a, new Date(Date.now() + 400 * 24 * 3600_000)), /expired/, 'a certificate past its end');
});
