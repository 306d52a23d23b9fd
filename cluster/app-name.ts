// appName: `<jobName>-<yyyymmdd>-<hhmmss>-<5 random lowercase alphanumerics>` (UTC).
import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

// Random bytes drawn 4 KiB at a time: one randomBytes call costs microseconds, a name needs 5 bytes.
let pool = Buffer.alloc(0);
let next = 0;
function randomByte(): number {
  if (next >= pool.length) {
    pool = randomBytes(4096);
    next = 0;
  }
  return pool[next++];
}

export function newAppName(jobName: string, now = new Date()): string {
  const iso = now.toISOString(); // 2026-11-22T23:04:05.123Z
  const date = iso.slice(0, 10).replaceAll('-', '');
  const time = iso.slice(11, 19).replaceAll(':', '');
  let suffix = '';
  while (suffix.length < 5) {
    const byte = randomByte();
    if (byte < 252) suffix += ALPHABET[byte % 36]; // 252 = 7 x 36: no modulo bias
  }
  return `${jobName}-${date}-${time}-${suffix}`;
}
