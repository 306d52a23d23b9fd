// appName: `<jobName>-<yyyymmdd>-<hhmmss>-<5 random lowercase alphanumerics>` (UTC).
import { randomInt } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function newAppName(jobName: string, now = new Date()): string {
  const iso = now.toISOString(); // 2026-11-22T23:04:05.123Z
  const date = iso.slice(0, 10).replaceAll('-', '');
  const time = iso.slice(11, 19).replaceAll(':', '');
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += ALPHABET[randomInt(ALPHABET.length)];
  return `${jobName}-${date}-${time}-${suffix}`;
}
