// Who may use the gateway: `Authorization: token <key>` (jupyter_server's GatewayClient sends
// it on every request and on the websocket upgrade) or `?token=`, checked against the same key
// store as /api. An empty token (`token `) is no token.
import type { IncomingMessage } from 'node:http';
import { keyFromHeaders, type KeyVerifier } from '../submit-api/auth/plugin.js';

export interface GatewayAuthOptions {
  enabled: boolean;
  store: KeyVerifier;
}

/** Who is calling: the key's id and role; null when authentication is off (everyone may do everything). */
export type GatewayCaller = { id: string; role: 'user' | 'admin' } | null;

export type AuthResult = { ok: true; key: string | undefined; caller: GatewayCaller } | { ok: false; message: string };

export function authenticate(options: GatewayAuthOptions, request: IncomingMessage): AuthResult {
  const fromQuery = new URL(request.url ?? '/', 'http://gateway').searchParams.get('token')?.trim();
  const key = keyFromHeaders(request.headers) ?? (fromQuery || undefined);
  if (!options.enabled) return { ok: true, key, caller: null };
  if (!key) return { ok: false, message: 'An API key is required: start the Jupyter server with --GatewayClient.auth_token=<key>.' };
  const identity = options.store.verify(key);
  if (!identity) return { ok: false, message: 'The API key is not valid (unknown or revoked).' };
  return { ok: true, key, caller: { id: identity.id, role: identity.role } };
}
