// One address's slow requests against everyone else's (lib/address-cap.ts): 127.0.0.1 opens
// more slow connections than the server's maxConnections; it holds its cap of them and the
// rest are answered 429 and closed, while a client from another address (127.0.0.2, the
// client socket bound there) is still served. Before the cap, the slow ones took every
// connection and the other client was refused.
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { connectionLimitsFrom } from '../../cli/connection-flags.js';
import { addressGroup, defaultPerAddress } from '../../lib/address-cap.js';
import { startTestApi } from '../helpers/api.js';
import { until } from '../helpers/poll.js';

interface Slow { socket: Socket; answer: string; closed: boolean }

/** A client that sends half its headers and waits. */
function slowClient(port: number): Slow {
  const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
  const slow: Slow = { socket, answer: '', closed: false };
  socket.write('GET /api/apps/ HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  socket.on('data', (chunk) => { slow.answer += String(chunk); });
  socket.on('error', () => undefined);
  socket.on('close', () => { slow.closed = true; });
  return slow;
}

/** GET /healthz from a given source address: its status, or 0 when the connection was closed without one (the old server's refusal). */
function healthzFrom(port: number, localAddress: string): Promise<number> {
  return new Promise((ok) => {
    const req = httpRequest({ port, host: '127.0.0.1', localAddress, path: '/healthz', agent: false, timeout: 20_000 }, (res) => {
      res.resume();
      res.on('end', () => ok(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => ok(0));
    req.end();
  });
}

t.test('one address holds its cap of slow connections; another address is still served', { timeout: 120_000 }, async (t) => {
  const api = await startTestApi(t, {
    limits: { maxConnections: 10, connectionsPerAddress: 4, requestTimeoutMs: 120_000, headersTimeoutMs: 120_000 },
  });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = api.app.server.address() as { port: number };
  const slow = Array.from({ length: 10 }, () => slowClient(port));
  t.teardown(() => { for (const s of slow) s.socket.destroy(); });

  const refused = () => slow.filter((s) => s.answer.startsWith('HTTP/1.1 429'));
  await until(() => refused().length === 6 && refused().every((s) => s.closed), { what: 'six slow connections refused', timeoutMs: 60_000 });
  t.equal(refused().length, 6, 'the connections over the cap of 4 are answered 429 and closed');
  t.match(JSON.parse(refused()[0]!.answer.split('\r\n\r\n')[1]!), { statusCode: 429, error: 'Too Many Requests' });
  t.equal(slow.filter((s) => !s.closed).length, 4, 'four are held (until the request timeout cuts them)');

  t.equal(await healthzFrom(port, '127.0.0.2'), 200, 'a client from another address is served');
  t.equal(await healthzFrom(port, '127.0.0.1'), 429, 'the full address is answered 429, for now');
  for (const s of slow) s.socket.destroy();
  await until(async () => await healthzFrom(port, '127.0.0.1') === 200, { what: 'the address served again', intervalMs: 100 });
  t.pass('served again once its slow connections closed');
});

t.test('an address group is the IPv4 address or the IPv6 /64', async (t) => {
  t.equal(addressGroup('10.1.2.3'), '10.1.2.3');
  t.equal(addressGroup('::ffff:10.1.2.3'), '10.1.2.3', 'an IPv4-mapped address counts as the IPv4 one');
  t.equal(addressGroup('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(addressGroup('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64', 'one /64, whatever the host part and spelling');
  t.equal(addressGroup('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(addressGroup('::1'), '0:0:0:0::/64');
  t.equal(addressGroup(undefined), 'unknown');
});

t.test('the flags: a whole number each, and no per-address cap behind a proxy unless set', async (t) => {
  t.same(connectionLimitsFrom({}), { limits: {}, sparkUiLimits: {} }, 'defaults');
  t.same(connectionLimitsFrom({ 'trust-proxy': true }).limits, { connectionsPerAddress: 0 }, 'behind a proxy every client has its address');
  t.same(connectionLimitsFrom({ 'trust-proxy': true, 'connections-per-address': '500' }).limits, { connectionsPerAddress: 500 });
  t.same(connectionLimitsFrom({ 'spark-ui-requests-per-key': '4', 'spark-ui-answer-seconds': '60', 'spark-ui-answer-mib': '10' }).sparkUiLimits,
    { requestsPerKey: 4, answerMs: 60_000, answerBytes: 10 * 1024 * 1024 });
  t.throws(() => connectionLimitsFrom({ 'connections-per-address': '-1' }), /whole number/);
  t.equal(defaultPerAddress(768), 192, 'a quarter of a 1,024-descriptor budget');
  t.equal(defaultPerAddress(40), 16, 'at least 16');
  t.equal(defaultPerAddress(786_432), 256, 'at most 256');
});
