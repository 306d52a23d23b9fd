// Writes one server-sent events stream with backpressure and a byte cap: a block is handed to
// the socket only while it takes more (`write` returning false waits for 'drain'); what waits
// meanwhile is counted, and a consumer that falls further behind than `maxBufferedBytes` is
// closed rather than buffered for without end (it reconnects with Last-Event-ID, or gets a
// `reset`). Six unread streams resumed from 10,000 held events once took the API from 222 to
// 1,585 MiB and stalled it 8.5 s; with this, each holds at most its cap.
import type { ServerResponse } from 'node:http';

export interface StreamBudget {
  /** Events a resumed stream may be sent to catch up; more missed: `reset` instead. */
  maxReplayEvents: number;
  /** Bytes of those events at most; more: `reset` instead. */
  maxReplayBytes: number;
  /** Bytes waiting for a slow consumer (in this writer and the socket) before it is closed. */
  maxBufferedBytes: number;
}

export const defaultStreamBudget: StreamBudget = {
  maxReplayEvents: 1000,
  maxReplayBytes: 4 * 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
};

export class EventStreamWriter {
  private readonly waiting: { text: string; bytes: number }[] = [];
  private waitingBytes = 0;
  private draining = false;
  private closed = false;

  constructor(
    private readonly out: ServerResponse,
    private readonly maxBufferedBytes: number,
    /** Called once when the consumer fell too far behind, after the stream was destroyed. */
    private readonly onOverflow: (bufferedBytes: number) => void,
  ) {
    out.once('close', () => { this.closed = true; this.waiting.length = 0; });
  }

  /** Queues a block (one event or comment, with its blank line) and writes what the socket takes. */
  send(block: string): void {
    if (this.closed) return;
    const bytes = Buffer.byteLength(block);
    this.waiting.push({ text: block, bytes });
    this.waitingBytes += bytes;
    const buffered = this.waitingBytes + this.out.writableLength;
    if (buffered > this.maxBufferedBytes) {
      this.closed = true;
      this.waiting.length = 0;
      this.out.destroy();
      this.onOverflow(buffered);
      return;
    }
    this.flush();
  }

  private flush(): void {
    while (!this.draining && !this.closed && this.waiting.length > 0) {
      const block = this.waiting.shift()!;
      this.waitingBytes -= block.bytes;
      if (!this.out.write(block.text)) {
        this.draining = true;
        this.out.once('drain', () => { this.draining = false; this.flush(); });
      }
    }
  }
}
