// A tiny HTTP CONNECT proxy, as a kubeconfig's `proxy-url` names one: it opens a TCP tunnel
// to where each CONNECT asks and records it; any other request (a forward proxy's absolute
// URL) is refused and recorded too, so a test tells tunnelled calls from others.
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

export interface ConnectProxy {
  url: string;
  /** The `host:port` of every tunnel asked for, in order. */
  tunnels: string[];
  /** Requests that were not CONNECT (refused). */
  refused: string[];
  close(): Promise<void>;
}

export async function startConnectProxy(): Promise<ConnectProxy> {
  const tunnels: string[] = [];
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => { sockets.add(socket); socket.once('close', () => sockets.delete(socket)); socket.on('error', () => socket.destroy()); };
  const server = createServer((request, response) => {
    refused.push(`${request.method} ${request.url}`);
    response.writeHead(405).end('only CONNECT\n');
  });
  server.on('connect', (request: IncomingMessage, client: Socket, head: Buffer) => {
    const target = request.url ?? '';
    tunnels.push(target);
    const at = target.lastIndexOf(':');
    const upstream = connect(Number(target.slice(at + 1)), target.slice(0, at).replace(/^\[|\]$/g, ''));
    track(client);
    track(upstream);
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    upstream.once('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    refused,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
