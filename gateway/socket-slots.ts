// The Jupyter clients' websockets counted per key (per address without one): one key cannot
// hold every connection of the gateway, and every websocket of a revoked key closes at once
// (the key store tells, submit-api/auth/key-store.ts), not at its next upgrade.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { ConnectionSlots, connectionOwner, keyOwner } from '../lib/connection-slots.js';
import { authenticate, type GatewayAuthOptions } from './auth.js';

/** Policy Violation: what a client is told when its key was revoked. */
const REVOKED = 1008;

export class SocketSlots {
  private readonly slots: ConnectionSlots;
  private readonly stopFollowing: (() => void) | undefined;

  constructor(readonly perKey: number, private readonly auth: GatewayAuthOptions) {
    this.slots = new ConnectionSlots(perKey);
    this.stopFollowing = auth.enabled ? auth.store.onRevoked?.((keyId) => this.slots.closeOwner(keyOwner(keyId))) : undefined;
  }

  close(): void {
    this.stopFollowing?.();
  }

  /**
   * A slot for the websocket being upgraded on `socket`, freed when the socket closes; undefined
   * when its owner holds the cap. Call `upgraded` with the websocket once the upgrade is done.
   */
  take(request: IncomingMessage, socket: Duplex): { upgraded(ws: WebSocket): void } | undefined {
    const result = authenticate(this.auth, request);
    const keyId = this.auth.enabled && result.ok && result.key ? this.auth.store.verify(result.key)?.id : undefined;
    let ws: WebSocket | undefined;
    const release = this.slots.take(connectionOwner(keyId, request.socket.remoteAddress), () => {
      if (!ws) return void socket.destroy();
      ws.close(REVOKED, 'the API key was revoked');
      // The close frame is on its way; nothing more from this client is read.
      setImmediate(() => ws!.terminate());
    });
    if (!release) return undefined;
    socket.once('close', release);
    return { upgraded: (upgraded) => { ws = upgraded; } };
  }
}
