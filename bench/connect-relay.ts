// What one relayed Spark Connect call costs the endpoint's process, against the ceiling of a
// bare node:http2 proxy (a stream up for each stream in, headers, body and trailers piped, no
// key, no session), same run, same machine. Both relay the same gRPC-shaped calls (a request
// carrying a session id as Spark Connect's do, an answer of one message and a status trailer)
// to the same small upstream, each in a process of its own, so a round's CPU is read from the
// relay's process alone. Calls go one at a time (a client waiting on each answer, as a query's
// critical path does) and CONNECT_RELAY_CONCURRENCY at once (as pyspark's background
// ReleaseExecute calls arrive beside them).
//   node --import tsx bench/connect-relay.ts   (CONNECT_RELAY_CALLS 2000 per round, CONNECT_RELAY_ROUNDS 4,
//   CONNECT_RELAY_CONCURRENCY 8; CONNECT_RELAY_PROFILE=DIR: a V8 CPU profile of the service's relay into DIR)
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type ClientHttp2Session, type Http2Server } from 'node:http2';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createConnectEndpoint } from '../connect/endpoint.js';
import { Upstreams } from '../connect/relay.js';
import type { ConnectSessions } from '../connect/sessions.js';
import { envNumber, fmt, load, median, table } from './lib.js';

const CALLS = envNumber('CONNECT_RELAY_CALLS', 2000);
const ROUNDS = Math.max(1, envNumber('CONNECT_RELAY_ROUNDS', 4));
const CONCURRENCY = Math.max(1, envNumber('CONNECT_RELAY_CONCURRENCY', 8));
const SESSION = randomUUID();

/** A gRPC message (flag, length, bytes) holding field 1 = the session id, as every Connect request starts. */
function requestMessage(sessionId: string): Buffer {
  const id = Buffer.from(sessionId);
  const body = Buffer.concat([Buffer.from([0x0a, id.length]), id, Buffer.alloc(40, 0x20)]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** The upstream: answers every call with one small message and status OK, as a Connect server's quick calls do. */
function upstreamServer(): Http2Server {
  const answer = requestMessage('answer');
  const server = createServer();
  server.on('stream', (stream) => {
    stream.on('error', () => { /* reset by the relay */ });
    stream.on('data', () => { /* the request */ });
    stream.once('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(answer);
    });
  });
  return server;
}

/** The ceiling: a stream up for each stream in, everything piped, nothing looked at. */
function bareRelay(upstreamPort: number): Http2Server {
  const upstream = connect(`http://127.0.0.1:${upstreamPort}`);
  const server = createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => { /* reset */ });
    const request = upstream.request({ ':method': 'POST', ':path': headers[':path'] ?? '/', 'content-type': 'application/grpc', te: 'trailers' });
    let trailers: Record<string, string> = {};
    request.on('response', (responded) => {
      stream.respond({ ':status': responded[':status'] ?? 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      request.pipe(stream);
    });
    request.on('trailers', (received) => { trailers = { 'grpc-status': String(received['grpc-status'] ?? '0') }; });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.pipe(request);
  });
  server.once('close', () => upstream.close());
  return server;
}

/** The service's endpoint (connect/endpoint.ts) with one session whose server is the upstream: keys off, as local mode's default. */
function serviceRelay(upstreamPort: number): Http2Server {
  const upstreams = new Upstreams();
  const session = { sessionId: SESSION, owner: null, key: undefined, template: undefined, appName: 'bench', server: { host: '127.0.0.1', port: upstreamPort }, ready: Promise.resolve(), openCalls: 0, lastActivity: 0 };
  const sessions = {
    upstreams,
    acquire: () => Promise.resolve(session),
    release: () => undefined,
    serverToken: () => 'server-token',
    checkEnded: () => Promise.resolve(undefined),
    endOwnedBy: () => Promise.resolve(),
  } as unknown as ConnectSessions;
  return createConnectEndpoint({ auth: { enabled: false, store: { verify: () => undefined } as never }, sessions, log: pino({ level: 'silent' }) });
}

/** A child process: serves the role given and answers 'cpu' with its CPU time so far (µs). */
async function child(role: string, upstreamPort: number): Promise<void> {
  const server = role === 'upstream' ? upstreamServer() : role === 'bare' ? bareRelay(upstreamPort) : serviceRelay(upstreamPort);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.send!({ port: (server.address() as AddressInfo).port });
  process.on('message', (message) => {
    if (message === 'cpu') { const { user, system } = process.cpuUsage(); process.send!({ cpu: user + system }); }
    if (message === 'exit') server.close(() => process.exit(0));
  });
}

function start(role: string, upstreamPort = 0): Promise<{ process: ChildProcess; port: number }> {
  const started = fork(fileURLToPath(import.meta.url), [role, String(upstreamPort)], { execArgv: ['--import', 'tsx', ...(process.env.CONNECT_RELAY_PROFILE && role === 'service' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CONNECT_RELAY_PROFILE}`] : [])] });
  return new Promise((resolve, reject) => {
    started.once('message', (message: { port: number }) => resolve({ process: started, port: message.port }));
    started.once('exit', (code) => reject(new Error(`${role} exited (${code}) before listening`)));
  });
}

function cpuOf(relay: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    relay.once('message', (message: { cpu: number }) => resolve(message.cpu));
    relay.send('cpu');
  });
}

/** One call: the request message, then the answer's body and its status trailer. */
function call(client: ClientHttp2Session, body: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = client.request({ ':method': 'POST', ':path': '/spark.connect.SparkConnectService/ReleaseExecute', 'content-type': 'application/grpc', te: 'trailers' });
    let status: string | undefined;
    request.on('trailers', (trailers) => { status = String(trailers['grpc-status']); });
    request.on('data', () => { /* the answer */ });
    request.once('end', () => (status === '0' ? resolve() : reject(new Error(`status ${status}`))));
    request.once('error', reject);
    request.end(body);
  });
}

/** `count` calls, `concurrency` at a time; the relay's CPU µs per call and the calls' median wall time (ms). */
async function round(relay: { process: ChildProcess; port: number }, count: number, concurrency: number) {
  const client = connect(`http://127.0.0.1:${relay.port}`);
  const body = requestMessage(SESSION);
  await call(client, body); // the connection and the relay's first upstream stream
  const before = await cpuOf(relay.process);
  const walls: number[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < count) {
      const began = performance.now();
      await call(client, body);
      walls.push(performance.now() - began);
    }
  }));
  const cpu = (await cpuOf(relay.process)) - before;
  client.close();
  return { cpuPerCall: cpu / count, wall: median(walls) };
}

async function main(): Promise<void> {
  const upstream = await start('upstream');
  const relays = { service: await start('service', upstream.port), bare: await start('bare', upstream.port) };
  const seen: Record<string, { one: number[]; many: number[]; wallOne: number[] }> = { service: { one: [], many: [], wallOne: [] }, bare: { one: [], many: [], wallOne: [] } };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? ['service', 'bare'] as const : ['bare', 'service'] as const;
    for (const name of order) {
      const one = await round(relays[name], CALLS, 1);
      const many = await round(relays[name], CALLS, CONCURRENCY);
      seen[name]!.one.push(one.cpuPerCall);
      seen[name]!.wallOne.push(one.wall);
      seen[name]!.many.push(many.cpuPerCall);
    }
  }
  const rows = (['service', 'bare'] as const).map((name) => [
    name === 'service' ? 'the service\'s endpoint (connect/endpoint.ts)' : 'bare node:http2 proxy (ceiling)',
    fmt(median(seen[name]!.one), 0), fmt(median(seen[name]!.many), 0), fmt(median(seen[name]!.wallOne), 3),
  ]);
  console.log(`Relayed calls, ${CALLS} a round, ${ROUNDS} rounds each, alternating (load ${load()})`);
  console.log(table(['relay', 'CPU µs per call, one at a time', `CPU µs per call, ${CONCURRENCY} at once`, 'call ms p50, one at a time'], rows));
  for (const started of [upstream, relays.service, relays.bare]) started.process.send('exit');
}

if (process.argv[2]) await child(process.argv[2], Number(process.argv[3]));
else await main();
