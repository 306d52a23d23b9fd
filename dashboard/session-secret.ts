// Where the session secret comes from: in Kubernetes mode the chart's auth Secret, given to
// every replica as an environment variable (all replicas must share it); in local mode a file
// in the data dir, created once with mode 0600 so a restart keeps everyone signed in.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const SESSION_SECRET_ENV = 'SUBMISSION_SERVICE_SESSION_SECRET';
export const SESSION_SECRET_FILE = 'session-secret';

/** The secret from `env` when set (at least 32 characters), else from `<dataDir>/session-secret`, created when absent. */
export function loadSessionSecret(dataDir: string, env: NodeJS.ProcessEnv = process.env): Buffer {
  const given = env[SESSION_SECRET_ENV];
  if (given !== undefined && given !== '') {
    if (given.length < 32) throw new Error(`${SESSION_SECRET_ENV} must have at least 32 characters`);
    return Buffer.from(given, 'utf8');
  }
  const path = join(dataDir, SESSION_SECRET_FILE);
  try {
    return readSecret(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Written whole to a temp file, then hard-linked into place: of two processes starting at once,
  // one links and the other gets EEXIST and reads the winner's complete file.
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, randomBytes(48).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(tmp);
  }
  return readSecret(path);
}

function readSecret(path: string): Buffer {
  const text = readFileSync(path, 'utf8').trim();
  if (text.length < 32) throw new Error(`${path}: the session secret must have at least 32 characters`);
  return Buffer.from(text, 'utf8');
}
