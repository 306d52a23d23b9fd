// FakeKubelet's log line times (part of the TEST DOUBLE). A container runtime stamps each line of a
// container's log with the time it read it, and a kubelet serves those times: `timestamps=true`
// puts the time of a line's start before it (RFC3339 with 9 fixed digits of nanoseconds, then a
// space; a line's later pieces get none), and `sinceTime` leaves out lines whose time is before
// it. The fake kubelet's processes write their log file themselves, so it stamps the bytes when it
// first sees them: it looks at the file's size every 100 ms, and before serving bytes not seen
// yet. Lines seen together share a time, as lines a runtime reads within its clock's tick do.
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';

export class LogTimes {
  /** Byte offsets from which bytes were first seen at times[i] (ms since the epoch), ascending. */
  private readonly from: number[] = [];
  private readonly times: number[] = [];
  private seen = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly file: string) {
    this.timer = setInterval(() => void this.look(), 100);
    this.timer.unref();
  }

  /** One last look (the process ended), then no more. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.look();
  }

  private async look(): Promise<void> {
    const size = await stat(this.file).then((s) => s.size, () => 0);
    this.cover(size);
  }

  /** Bytes up to `size` have been seen now, if not before. */
  cover(size: number): void {
    if (size <= this.seen) return;
    this.from.push(this.seen);
    this.times.push(Math.max(Date.now(), this.times.at(-1) ?? 0));
    this.seen = size;
  }

  /** When the byte at `offset` was first seen. */
  timeAt(offset: number): number {
    let low = 0;
    let high = this.from.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.from[middle]! <= offset) low = middle; else high = middle - 1;
    }
    return this.times[low] ?? Date.now();
  }
}

/** RFC3339 with 9 fixed digits, as a kubelet prints a line's time. */
const format = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000000Z');

/**
 * The log file's bytes (from its start) as a kubelet serves them with `timestamps` and
 * `sinceTime` (ms; lines before it are left out). `counted` gets the log bytes served (not the times).
 */
export async function* withTimes(source: Readable, times: LogTimes, options: { timestamps: boolean; sinceMs?: number; counted: (bytes: number) => void }): AsyncGenerator<Buffer> {
  let offset = 0;
  let atLineStart = true;
  let keep = true;
  for await (const chunk of source as AsyncIterable<Buffer>) {
    times.cover(offset + chunk.length);
    const out: Buffer[] = [];
    for (let i = 0; i < chunk.length;) {
      if (atLineStart) {
        const time = times.timeAt(offset + i);
        keep = options.sinceMs === undefined || time >= options.sinceMs;
        if (keep && options.timestamps) out.push(Buffer.from(`${format(time)} `));
        atLineStart = false;
      }
      const newline = chunk.indexOf(0x0a, i);
      const end = newline < 0 ? chunk.length : newline + 1;
      if (keep) { out.push(chunk.subarray(i, end)); options.counted(end - i); }
      if (newline >= 0) atLineStart = true;
      i = end;
    }
    offset += chunk.length;
    if (out.length > 0) yield Buffer.concat(out);
  }
}
