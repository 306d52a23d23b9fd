// The end of a daemon's log for an error message (a test bed or node daemon that exited or
// did not get ready): read from the file's last 64 KiB only, as such logs grow large.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

const WINDOW_BYTES = 64 * 1024;

/** The last `lines` lines of `file`; '(no log)' when it cannot be read. */
export function logTail(file: string, lines: number): string {
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const buffer = Buffer.alloc(Math.min(size, WINDOW_BYTES));
      readSync(fd, buffer, 0, buffer.length, size - buffer.length);
      return buffer.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } finally { closeSync(fd); }
  } catch { return '(no log)'; }
}
