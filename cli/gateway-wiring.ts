// What both `local` and `gateway` need to serve the notebook gateway: the launcher's path,
// the gateway secret kept in the data dir (launchers' reconnect credentials outlive restarts).
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FileKeyStore } from '../submit-api/auth/key-store.js';
import { loadGatewaySecret } from '../gateway/launcher-auth.js';
import { DEFAULT_KERNELS_PER_KEY } from '../gateway/kernel-owners.js';
import { DEFAULT_LIFECYCLE, type LifecycleLimits, pingTimeoutFor } from '../gateway/lifecycle-limits.js';
import { gatewayProof, processGatewayProof } from '../lib/gateway-proof.js';
import { packageRoot } from '../lib/package-root.js';

/** launcher.py on this machine, as a `local://` main file (local mode maps it to this path). */
export const localLauncherFile = () => `local://${join(packageRoot, 'gateway', 'kernel', 'launcher.py')}`;

/** The secret from SUBMISSION_SERVICE_GATEWAY_SECRET, else `DIR/gateway-secret` (created 0600). */
export function gatewaySecret(dataDir: string): string {
  return process.env.SUBMISSION_SERVICE_GATEWAY_SECRET || loadGatewaySecret(join(dataDir, 'gateway-secret'));
}

/**
 * The proof an API accepts the service's own labels with (kernels', Connect sessions';
 * lib/gateway-proof.ts): derived from SUBMISSION_SERVICE_GATEWAY_SECRET, which a standalone
 * gateway shares with it (the chart's `gateway.secret`); without it a random one for this process
 * alone, which its in-process gateway and Connect endpoint use (never the data dir's
 * `gateway-secret`, which a local driver could read).
 */
export function apiGatewayProof(): string {
  const shared = process.env.SUBMISSION_SERVICE_GATEWAY_SECRET;
  return shared ? gatewayProof(shared) : processGatewayProof();
}

/** `--kernels-per-key N`: kernels one key may hold at once (0: no limit). */
export const kernelsPerKeyFlag = { type: 'string', default: String(DEFAULT_KERNELS_PER_KEY) } as const;

export function parseKernelsPerKey(value: string): number {
  if (!/^\d{1,4}$/.test(value)) throw new Error(`--kernels-per-key takes a number of kernels (0: no limit), not ${JSON.stringify(value)}`);
  return Number(value);
}

const seconds = (ms: number) => String(ms / 1000);

/** The kernels' lifecycle, in seconds (gateway/lifecycle-limits.ts); 0 turns the pings or the launch timeout off. */
export const lifecycleFlags = {
  'kernel-launch-timeout': { type: 'string', default: seconds(DEFAULT_LIFECYCLE.launchTimeoutMs) },
  'kernel-restart-timeout': { type: 'string', default: seconds(DEFAULT_LIFECYCLE.restartTimeoutMs) },
  'kernel-interrupt-timeout': { type: 'string', default: seconds(DEFAULT_LIFECYCLE.interruptTimeoutMs) },
  'websocket-ping-interval': { type: 'string', default: seconds(DEFAULT_LIFECYCLE.pingIntervalMs) },
  // Absent: three pings, at least 30 s, as jupyter_server derives it.
  'websocket-ping-timeout': { type: 'string' },
} as const;

export function parseLifecycle(values: { [K in keyof typeof lifecycleFlags]?: string }): LifecycleLimits {
  const ms = (flag: keyof typeof lifecycleFlags, fallback: number) => {
    const value = values[flag];
    if (value === undefined) return fallback;
    if (!/^\d{1,6}(\.\d{1,3})?$/.test(value)) throw new Error(`--${flag} takes a number of seconds, not ${JSON.stringify(value)}`);
    return Math.round(Number(value) * 1000);
  };
  const pingIntervalMs = ms('websocket-ping-interval', DEFAULT_LIFECYCLE.pingIntervalMs);
  return {
    pingIntervalMs,
    pingTimeoutMs: ms('websocket-ping-timeout', pingTimeoutFor(pingIntervalMs)),
    launchTimeoutMs: ms('kernel-launch-timeout', DEFAULT_LIFECYCLE.launchTimeoutMs),
    restartTimeoutMs: ms('kernel-restart-timeout', DEFAULT_LIFECYCLE.restartTimeoutMs),
    interruptTimeoutMs: ms('kernel-interrupt-timeout', DEFAULT_LIFECYCLE.interruptTimeoutMs),
  };
}

/** An address to dial from this machine: a wildcard listen address becomes loopback. */
export function dialable(host: string, address: AddressInfo | string | null): string {
  const port = typeof address === 'object' && address ? address.port : 0;
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/**
 * Local mode with auth on: the gateway's own key (for following kernels and finding them after
 * a restart) is SUBMISSION_SERVICE_API_KEY, else one it created in the key store and keeps in
 * `DIR/gateway-key` (0600), created again if revoked.
 */
export function localGatewayKey(dataDir: string, store: FileKeyStore): string {
  if (process.env.SUBMISSION_SERVICE_API_KEY) return process.env.SUBMISSION_SERVICE_API_KEY;
  const file = join(dataDir, 'gateway-key');
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept && store.verify(kept)) return kept;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const created = store.create('user', 'notebook gateway (local mode)');
  writeFileSync(file, `${created.key}\n`, { mode: 0o600 });
  return created.key;
}

/** `--warm-pool TEMPLATE=N` (repeatable) → {TEMPLATE: N}; a later value for a template wins. */
export function parseWarmPool(values: string[] | undefined): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const value of values ?? []) {
    const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)=(\d{1,3})$/.exec(value);
    if (!match) throw new Error(`--warm-pool takes TEMPLATE=N (a template name and a number of kernels, 0-999), not ${JSON.stringify(value)}`);
    sizes[match[1]!] = Number(match[3]);
  }
  return sizes;
}

/** Accepts exactly `ownKey` (compared as hashes, in constant time): the standalone gateway's own key. */
export function ownKeyVerifier(ownKey: string): (key: string) => { id: string; role: 'user' } | undefined {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(ownKey);
  return (key) => (timingSafeEqual(digest(key), expected) ? { id: 'gateway', role: 'user' } : undefined);
}
