// A TCP proxy in front of the test bed's apiserver, to put faults between one client and the
// real apiserver: `stall` stops forwarding (connections stay open, nothing moves: a hung
// apiserver or a dead network path, as a client sees it), `sever` closes every connection and
// refuses new ones (the apiserver gone), `resume` forwards again. TLS passes through
// untouched: the client still talks to the apiserver itself.
import { writeFileSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export interface StallProxy {
  port: number;
  /** A kubeconfig (written to `path`) like `kubeconfig`, whose server is this proxy. */
  kubeconfig(original: string, path: string): string;
  stall(): void;
  sever(): void;
  /** Client connections open through the proxy now. */
  open(): number;
  /** Client connections accepted since the proxy started. */
  accepted(): number;
  resume(): void;
  close(): Promise<void>;
}

export async function startStallProxy(target: URL): Promise<StallProxy> {
  let mode: 'pass' | 'stall' | 'sever' = 'pass';
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  let accepted = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    if (mode === 'stall') socket.pause();
  };
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => { if (!to.write(chunk)) from.pause(); });
    to.on('drain', () => { if (mode === 'pass') from.resume(); });
    from.on('end', () => to.end());
    from.on('close', () => to.destroy());
  };
  const server = createServer((client) => {
    if (mode === 'sever') { client.destroy(); return; }
    const upstream = connect(Number(target.port), target.hostname);
    clients.add(client);
    accepted++;
    client.on('close', () => clients.delete(client));
    track(client);
    track(upstream);
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    kubeconfig(original, path) {
      const kc = new KubeConfig();
      kc.loadFromFile(original);
      const proxied = new KubeConfig();
      proxied.loadFromOptions({
        clusters: kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
        users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext,
      });
      writeFileSync(path, proxied.exportConfig());
      return path;
    },
    stall() {
      mode = 'stall';
      for (const socket of sockets) socket.pause();
    },
    sever() {
      mode = 'sever';
      for (const socket of sockets) socket.destroy();
    },
    open: () => clients.size,
    accepted: () => accepted,
    resume() {
      mode = 'pass';
      for (const socket of sockets) socket.resume();
    },
    close: () => new Promise<void>((ok) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => ok());
    }),
  };
}
