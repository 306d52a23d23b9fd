// Raw TCP clients and what the kernel says about a server's sockets, for the tests of what
// connections the service keeps open: answers read off the wire, CLOSE_WAIT counted in /proc.
import { readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

/** Sockets of local port `port` in CLOSE_WAIT (the peer closed, this side never did), IPv4 and IPv6. */
export function closeWaitCount(port: number): number {
  let count = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(file, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 4) continue;
      const localPort = parseInt(fields[1]!.split(':').at(-1)!, 16);
      if (localPort === port && fields[3] === '08') count++;
    }
  }
  return count;
}

/** Open file descriptors of process `pid`. */
export const openFds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

/** Polls `check` every 100 ms until it holds or `timeoutMs` passed; returns its last value. */
export async function eventually<T>(read: () => T | Promise<T>, check: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  let value = await read();
  for (const deadline = Date.now() + timeoutMs; !check(value) && Date.now() < deadline;) {
    await new Promise((ok) => setTimeout(ok, 100));
    value = await read();
  }
  return value;
}

export interface UpgradeAttempt {
  path: string;
  host?: string;
  origin?: string;
  /** Close our side right after sending, without reading the answer. */
  leaveAtOnce?: boolean;
}

/** What became of one raw upgrade request: the status the server answered, or that it closed without one. */
export interface UpgradeOutcome { status?: number; closedByServer: boolean; hung: boolean }

/**
 * Sends one websocket upgrade request over a raw socket and waits for its answer or for the
 * server to close. `hangAfterMs` only ends a wait that would never end (a server that neither
 * answers nor closes): it is reported as `hung`.
 */
export function rawUpgrade(port: number, attempt: UpgradeAttempt, hangAfterMs = 15_000): Promise<UpgradeOutcome> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    let settled = false;
    const done = (outcome: UpgradeOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => done({ closedByServer: false, hung: true }), hangAfterMs);
    socket.on('error', () => done({ closedByServer: true, hung: false }));
    socket.on('connect', () => {
      const headers = [
        `GET ${attempt.path} HTTP/1.1`, `Host: ${attempt.host ?? `127.0.0.1:${port}`}`, 'Upgrade: websocket', 'Connection: Upgrade',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13',
        ...(attempt.origin === undefined ? [] : [`Origin: ${attempt.origin}`]),
      ];
      socket.write(`${headers.join('\r\n')}\r\n\r\n`);
      if (attempt.leaveAtOnce) {
        socket.end();
        done({ closedByServer: false, hung: false });
      }
    });
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (status) done({ status: Number(status[1]), closedByServer: false, hung: false });
    });
    socket.on('end', () => done({ closedByServer: true, hung: false }));
  });
}

/** `count` sockets that send half a request and then nothing: each holds a connection (and a descriptor) until the server cuts it. */
export function slowClients(port: number, count: number): Promise<{ sockets: Socket[]; open: () => number }> {
  const sockets: Socket[] = [];
  const opened = Array.from({ length: count }, () => new Promise<void>((ok) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => ok());
    socket.on('close', () => ok());
    // Read (and drop) what the server says: a socket nobody reads never sees the server close it
    // after an answer (the per-address cap's 429), only after a reset.
    socket.on('data', () => undefined);
    socket.on('connect', () => { socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n'); ok(); });
  }));
  return Promise.all(opened).then(() => ({ sockets, open: () => sockets.filter((s) => !s.destroyed && s.readyState === 'open').length }));
}
