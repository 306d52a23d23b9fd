// Open connections per client address. maxConnections (fd-limit.ts) protects the process, not
// its clients: ~770 slow requests from one anonymous address took every connection and every
// other client was refused until the request timeout cut them. So one address (an IPv6 /64,
// which one host usually has whole) holds at most `perAddress` connections at once, well below
// maxConnections; a connection over it is answered 429 and closed at once, before any request
// is read. Behind a proxy or an ingress every client has the proxy's address: raise the cap (or
// 0: none) there and let the proxy cap its clients.
import { isIPv4, isIPv6, type Server, type Socket } from 'node:net';
import { ConnectionSlots } from './connection-slots.js';

/** The key one client's connections are counted under: its IPv4 address, or its IPv6 /64. */
export function addressGroup(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return mapped;
  if (isIPv4(address) || !isIPv6(address)) return address;
  // Expanded to its eight groups, so that every spelling of one /64 gives the same key.
  const [head, tail = ''] = address.split('%', 1)[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/**
 * The default cap: a quarter of the server's connections, between 16 and 256 (a 1,024-descriptor
 * process: 192 of 768, so one address leaves three quarters to the others).
 */
export function defaultPerAddress(maxConnections: number): number {
  return Math.max(16, Math.min(256, Math.floor(maxConnections / 4)));
}

const REFUSAL = JSON.stringify({
  message: 'Too many open connections from this address: close some (or reuse them) and try again.',
  statusCode: 429, error: 'Too Many Requests',
});

/** An HTTP/1.1 429 with a JSON body, then the connection closed. */
function refuseHttp(socket: Socket): void {
  socket.end(`HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(REFUSAL)}\r\nconnection: close\r\n\r\n${REFUSAL}`);
  // Never left half-open: destroyed once the answer is out, whatever the client does.
  socket.once('finish', () => socket.destroy());
}

/**
 * Counts `server`'s connections per address and refuses those over `perAddress` (0: no cap):
 * `refuse` answers the connection over the cap (by default an HTTP/1.1 429).
 */
export function capConnectionsPerAddress(server: Server, perAddress: number, refuse: (socket: Socket) => void = refuseHttp): void {
  const slots = new ConnectionSlots(perAddress);
  if (perAddress === 0) return;
  server.on('connection', (socket: Socket) => {
    const release = slots.take(addressGroup(socket.remoteAddress), () => socket.destroy());
    if (release) {
      socket.once('close', release);
      return;
    }
    socket.on('error', () => undefined); // a client gone already: nothing to tell it
    refuse(socket);
  });
}
