// A driver's log, kept within a byte cap by the service's side of the pipe, not by the driver:
// the first bytes up to the cap (less the tail) are written as they come, so the log can be
// followed live; past them, only the last `tailBytes` are kept, in memory, and written when the
// driver's output ends, after a line that says how much was dropped. Pure: the capper process
// (log-capper.ts) feeds it and writes what it returns.

/** The tail kept of a log over its cap: a quarter of the cap, at most 4 MiB (held in memory). */
export const tailBytesOf = (cap: number): number => Math.min(Math.floor(cap / 4), 4 * 1024 * 1024);

export const formatBytes = (bytes: number): string =>
  bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;

export class HeadTailLog {
  private written = 0;
  private dropped = 0;
  private tail: Buffer[] = [];
  private tailSize = 0;
  private readonly headBytes: number;
  private readonly tailBytes: number;

  constructor(private readonly cap: number) {
    this.tailBytes = tailBytesOf(cap);
    this.headBytes = cap - this.tailBytes;
  }

  /** What to write now of `chunk`. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    const room = this.headBytes - this.written;
    if (room > 0) {
      const head = chunk.subarray(0, room);
      this.written += head.length;
      out.push(head);
      chunk = chunk.subarray(head.length);
      if (chunk.length > 0) out.push(Buffer.from(`\n[submission-service: this log reached its cap of ${formatBytes(this.cap)}; the rest is dropped but its last ${formatBytes(this.tailBytes)}, written when the driver's output ends]\n`));
    }
    if (chunk.length > 0) this.keep(chunk);
    return out;
  }

  /** What to write once the output ended: the note on what was dropped, and the tail. */
  end(): Buffer[] {
    if (this.tailSize === 0) return [];
    const tail = Buffer.concat(this.tail);
    const kept = tail.subarray(Math.max(0, tail.length - this.tailBytes));
    const dropped = this.dropped + tail.length - kept.length;
    this.tail = [];
    this.tailSize = 0;
    return [Buffer.from(`\n[submission-service: ${dropped} bytes of this log were dropped; its last ${kept.length} bytes follow]\n`), kept];
  }

  private keep(chunk: Buffer): void {
    this.tail.push(Buffer.from(chunk));
    this.tailSize += chunk.length;
    // Whole chunks that lie before the last tailBytes are dropped at once.
    while (this.tail.length > 1 && this.tailSize - this.tail[0]!.length >= this.tailBytes) {
      const first = this.tail.shift()!;
      this.tailSize -= first.length;
      this.dropped += first.length;
    }
  }
}
