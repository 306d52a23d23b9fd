// Reads a growing log file: everything so far, and with follow, what is appended
// until the application ends or the reader goes away.
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LogSource {
  file: string;
  /** True once nothing more will be written. */
  ended: () => boolean;
  follow: boolean;
  signal?: AbortSignal;
  pollMs?: number;
}

async function* chunks(source: LogSource): AsyncGenerator<Buffer> {
  let offset = 0;
  const buffer = Buffer.alloc(64 * 1024);
  for (;;) {
    const finished = source.ended(); // read before the last pass, so no tail is lost
    // Not there yet (a driver that has not started) is the one expected absence; any other
    // failure (EMFILE, EACCES) ends the stream with that error, which the response reports.
    const handle = await open(source.file, 'r').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (handle) {
      try {
        for (;;) {
          const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
          if (bytesRead === 0) break;
          offset += bytesRead;
          yield Buffer.from(buffer.subarray(0, bytesRead));
        }
      } finally {
        await handle.close();
      }
    }
    if (!source.follow || finished || source.signal?.aborted) return;
    await sleep(source.pollMs ?? 200, undefined, { signal: source.signal }).catch(() => undefined);
  }
}

export const logStream = (source: LogSource): Readable => Readable.from(chunks(source), { objectMode: false });
