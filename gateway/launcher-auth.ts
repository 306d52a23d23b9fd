// Credentials of launchers dialling in: a one-time token per kernel (it sits in the
// application's env, readable in its config, so the first use consumes it), then a reconnect
// secret, HMAC(kernel id) under the gateway's own secret, which survives gateway restarts.
// A retried kernel's later attempts each come with a token derived from `attemptSecret` (by the
// API's controller, or local mode's cluster: domain/launcher-credential.ts): each is taken once,
// and only for a later attempt than any taken before, which also ends the first token.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { attemptLauncherToken, launcherTokenAttempt } from '../domain/index.js';
import type { LauncherFiles } from './launcher-files.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest();

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The gateway secret from a file, created (0600) on first use. */
export function loadGatewaySecret(file: string): string {
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (text) return text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = randomBytes(32).toString('hex');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

/**
 * What a launcher proved itself with: its kernel's one-time token (the first driver), a later
 * attempt's token (a new driver: the application retried it), or its reconnect secret (the same
 * driver again, after a lost connection or a gateway restart).
 */
export type LauncherProof = { kind: 'first' } | { kind: 'attempt'; attempt: number } | { kind: 'reconnect' };

export class LauncherAuth {
  private readonly oneTime = new Map<string, Buffer>();
  /** The latest attempt whose token each kernel's launcher presented. */
  private readonly attemptTaken = new Map<string, number>();

  /**
   * `files`: local mode's random reconnect secrets, kept as hashes (launcher-files.ts), instead of HMACs of `secret`.
   * `attemptSecret`: what retried kernels' tokens derive from; by default `secret` for a standalone
   * gateway, and none in local mode, whose `secret` may be `DIR/gateway-secret`, which local drivers can read.
   */
  constructor(private readonly secret: string, private readonly files?: LauncherFiles, private readonly attemptSecret = files ? undefined : secret) {}

  /** A new one-time token for a kernel; only its hash is kept. */
  issue(kernelId: string): string {
    const token = randomBytes(24).toString('base64url');
    this.oneTime.set(kernelId, sha256(token));
    return token;
  }

  /** The secret to hand a launcher that just proved itself with `presented`. */
  reconnectSecret(kernelId: string, presented?: string): string {
    if (this.files) return this.files.reconnectSecret(kernelId, presented);
    return createHmac('sha256', this.secret).update(`kernel:${kernelId}`).digest('base64url');
  }

  /** True for the kernel's unused one-time token or a new attempt's (now consumed), or its reconnect secret. */
  verify(kernelId: string, credential: string | undefined): boolean {
    return this.check(kernelId, credential) !== undefined;
  }

  /** What `credential` proves (a token is consumed by it), or undefined when it is none of the kernel's. */
  check(kernelId: string, credential: string | undefined): LauncherProof | undefined {
    if (!credential) return undefined;
    const hash = this.oneTime.get(kernelId);
    if (hash && sameBytes(hash, sha256(credential))) {
      this.oneTime.delete(kernelId);
      return { kind: 'first' };
    }
    if (this.isNewAttemptToken(kernelId, credential)) {
      const attempt = launcherTokenAttempt(credential)!;
      this.attemptTaken.set(kernelId, attempt);
      this.oneTime.delete(kernelId);
      return { kind: 'attempt', attempt };
    }
    const reconnect = this.files
      ? this.files.isReconnectSecret(kernelId, credential)
      : sameBytes(Buffer.from(this.reconnectSecret(kernelId)), Buffer.from(credential));
    return reconnect ? { kind: 'reconnect' } : undefined;
  }

  forget(kernelId: string): void {
    this.oneTime.delete(kernelId);
    this.attemptTaken.delete(kernelId);
  }

  /** A retried attempt's token (under `attemptSecret`), for a later attempt than any taken. */
  private isNewAttemptToken(kernelId: string, credential: string): boolean {
    const attempt = launcherTokenAttempt(credential);
    if (!this.attemptSecret || attempt === undefined || attempt <= (this.attemptTaken.get(kernelId) ?? 1)) return false;
    return sameBytes(Buffer.from(attemptLauncherToken(this.attemptSecret, kernelId, attempt)), Buffer.from(credential));
  }
}
