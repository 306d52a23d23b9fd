// Local mode's launcher credentials, kept out of the application's config: the one-time token
// is a file in a per-kernel directory (0700, the file 0600) whose path, not its content, goes
// in the driver's env; the launcher reads it and deletes it at start. The reconnect secret the
// gateway then hands over is random per kernel, and only its SHA-256 is kept on disk (so a
// restarted gateway still knows it, and nothing readable lets anyone derive it: the old
// HMAC of the kernel id under `DIR/gateway-secret` could be computed by any local driver).
//
// Drivers may come to run as another OS user in a sandbox: writeLauncherToken is the one place
// that decides where the token lives and who owns it.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LAUNCHER_TOKEN_FILE_ENV } from '../domain/index.js';

/** The env variable that tells the launcher where its token is. */
export const TOKEN_FILE_ENV = LAUNCHER_TOKEN_FILE_ENV;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const KERNEL_ID = /^[0-9a-f-]{36}$/;

/** Writes the token where only the kernel's driver is meant to read it; returns the file's path. */
export function writeLauncherToken(dir: string, kernelId: string, token: string): string {
  const kernelDir = join(dir, kernelId);
  mkdirSync(kernelDir, { recursive: true, mode: 0o700 });
  const file = join(kernelDir, 'token');
  writeFileSync(file, token, { mode: 0o600, flag: 'w' });
  return file;
}

export class LauncherFiles {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The driver env entries that hand the launcher its token (by path). */
  env(kernelId: string, token: string): Record<string, string> {
    return { [TOKEN_FILE_ENV]: writeLauncherToken(this.dir, kernelId, token) };
  }

  /**
   * The kernel's reconnect secret for a launcher that just proved itself with `presented`: the
   * same one when it presented it, else a new random one (its hash replaces the kept one).
   */
  reconnectSecret(kernelId: string, presented: string | undefined): string {
    if (presented && this.isReconnectSecret(kernelId, presented)) return presented;
    const secret = randomBytes(32).toString('base64url');
    mkdirSync(join(this.dir, kernelId), { recursive: true, mode: 0o700 });
    writeFileSync(join(this.dir, kernelId, 'reconnect.sha256'), sha256(secret), { mode: 0o600 });
    return secret;
  }

  isReconnectSecret(kernelId: string, credential: string): boolean {
    if (!KERNEL_ID.test(kernelId)) return false;
    let kept: string;
    try {
      kept = readFileSync(join(this.dir, kernelId, 'reconnect.sha256'), 'utf8').trim();
    } catch {
      return false;
    }
    const a = Buffer.from(kept);
    const b = Buffer.from(sha256(credential));
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** A kernel that is gone: its directory goes too. */
  forget(kernelId: string): void {
    if (KERNEL_ID.test(kernelId)) rmSync(join(this.dir, kernelId), { recursive: true, force: true });
  }
}
