// The websockets under /notebooks/: the Jupyter server's channels
// (/notebooks/api/kernels/{id}/channels?session_id=…) and the launchers dialling out from their
// drivers (/notebooks/launcher/{id}). One WebSocketServer without a server of its own, fed by
// the HTTP server's `upgrade` event; UTF-8 is not validated (browsers' binary frames arrive as
// text that is not UTF-8) and only text is ever sent.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { WebSocketServer } from 'ws';
import { authenticate, type GatewayAuthOptions } from './auth.js';
import { Heartbeat } from './heartbeat.js';
import type { KernelRegistry } from './kernel-registry.js';
import type { LauncherAuth } from './launcher-auth.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits } from './lifecycle-limits.js';
import type { SocketSlots } from './socket-slots.js';
import { guardUpgrades, refuseUpgrade, type UpgradeGuardOptions } from './upgrade-guard.js';

/** Jupyter's own limit: bigger frames kill its side anyway (FIELD-NOTES). */
const MAX_FRAME = 10 * 1024 * 1024;
const CHANNELS = /^\/notebooks\/api\/kernels\/([0-9a-f-]{36})\/channels$/;
const LAUNCHER = /^\/notebooks\/launcher\/([0-9a-f-]{36})$/;

// Every upgrade is answered (upgrade-guard.ts): a refusal is written and the socket closed.
const refuse = (socket: Duplex, status: number, _reason: string, message: string) => refuseUpgrade(socket, status, message);

export interface ChannelOptions {
  registry: KernelRegistry;
  auth: GatewayAuthOptions;
  launcherAuth: LauncherAuth;
  log: FastifyBaseLogger;
  /** Websockets per key, closed when the key is revoked (socket-slots.ts). */
  sockets: SocketSlots;
  /** Host and Origin checks, the handshake's timeout (upgrade-guard.ts). */
  upgrades?: Omit<UpgradeGuardOptions, 'log'>;
  /** The pings every websocket gets, and how long a silent one is kept (heartbeat.ts). */
  ping?: Pick<LifecycleLimits, 'pingIntervalMs' | 'pingTimeoutMs'>;
}

/** Handles upgrades under /notebooks/ on `server`; returns the function that detaches and closes. */
export function attachChannels(server: Server, options: ChannelOptions): () => void {
  const wss = new WebSocketServer({ noServer: true, skipUTF8Validation: true, maxPayload: MAX_FRAME, perMessageDeflate: false });
  const ping = options.ping ?? DEFAULT_LIFECYCLE;
  const heartbeat = new Heartbeat(ping.pingIntervalMs, ping.pingTimeoutMs, options.log);
  heartbeat.start();
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://gateway');
    const channels = CHANNELS.exec(url.pathname);
    const launcher = LAUNCHER.exec(url.pathname);
    if (channels) {
      const auth = authenticate(options.auth, request);
      if (!auth.ok) return refuse(socket, 401, 'Unauthorized', auth.message);
      // Another key's kernel does not exist for this one (kernel-owners.ts): checked before the upgrade.
      const session = options.registry.find(channels[1], auth.caller);
      if (!session) return refuse(socket, 404, 'Not Found', `Kernel does not exist: ${channels[1]}`);
      const sessionId = url.searchParams.get('session_id') ?? '';
      const slot = options.sockets.take(request, socket);
      if (!slot) return refuse(socket, 429, 'Too Many Requests', `This key (or address) holds ${options.sockets.perKey} websockets, the most at once: close one first.`);
      wss.handleUpgrade(request, socket, head, (ws) => {
        slot.upgraded(ws);
        heartbeat.watch(ws, 'client');
        session.addClient(ws, sessionId);
      });
    } else if (launcher) {
      const id = launcher[1];
      const credential = /^token\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
      const proof = options.launcherAuth.check(id, credential);
      if (!proof) return refuse(socket, 401, 'Unauthorized', 'Not a valid launcher credential for this kernel.');
      const session = options.registry.kernels.get(id);
      if (!session) return refuse(socket, 404, 'Not Found', `Kernel does not exist: ${id}`);
      // A second launcher never silently takes the kernel over: the first keeps it while it is
      // connected. But a later attempt's token (taken once) says the earlier driver has ended: its
      // socket is one whose close has not come yet (a lost node), and the new driver replaces it.
      if (session.launcherConnected && proof.kind !== 'attempt') {
        options.log.warn({ kernel: id, remote: request.socket.remoteAddress }, 'refused a second launcher connection while the first is connected');
        session.probeLauncher();
        return refuse(socket, 409, 'Conflict', 'This kernel\'s launcher is connected already.');
      }
      wss.handleUpgrade(request, socket, head, (ws) => {
        heartbeat.watch(ws, 'launcher');
        session.setLauncher(ws, options.launcherAuth.reconnectSecret(id, credential), proof.kind === 'attempt' ? proof.attempt : undefined);
      });
    } else {
      refuse(socket, 404, 'Not Found', `No websocket at ${url.pathname}`);
    }
  };
  const detach = guardUpgrades(server, { ...options.upgrades, log: options.log }, onUpgrade);
  return () => {
    detach();
    heartbeat.stop();
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  };
}
