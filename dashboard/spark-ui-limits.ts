// What one proxied Spark UI request may hold (spark-ui-proxy.ts). The driver is user code: it may
// answer slowly, never end its answer, or stream without end, and every request it holds is two
// descriptors of the service (the viewer's socket and the upstream one). One key left 907 of
// 1,024 descriptors open that way: the upstream request outlived the viewer. So the upstream
// request ends with the viewer's, each key (or address, without one) has a few at once, and an
// answer is cut after a time and a size.
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';

export interface SparkUiLimits {
  /** Proxied requests one key (or one address, without a key) may have open at once; 0: no cap. */
  requestsPerKey: number;
  /** An answer still streaming after this is cut (504 before its headers); 0: no cap. */
  answerMs: number;
  /** An answer is cut once it passed this many bytes; 0: no cap. */
  answerBytes: number;
}

/** Room for a few viewers' tabs per key, the longest pages and event-log zips of a large run. */
export const defaultSparkUiLimits: SparkUiLimits = {
  requestsPerKey: 32,
  answerMs: 5 * 60_000,
  answerBytes: 256 * 1024 * 1024,
};

/**
 * Ties one proxied request to its viewer: the upstream request (known once it has a socket) is
 * destroyed when the viewer's response closes, when the answer runs past `limits.answerMs`, or
 * past `limits.answerBytes`. `tooLong` answers a viewer still waiting for headers.
 */
export class ProxiedAnswer {
  private upstream?: ClientRequest;
  private closed = false;
  private cut = false;
  private bytes = 0;
  private readonly timer?: NodeJS.Timeout;

  constructor(private readonly res: ServerResponse, private readonly limits: SparkUiLimits, tooLong: (res: ServerResponse) => void) {
    res.once('close', () => this.end());
    if (limits.answerMs > 0) {
      this.timer = setTimeout(() => {
        this.cut = true;
        if (!res.headersSent) tooLong(res);
        else res.destroy();
        this.upstream?.destroy();
      }, limits.answerMs);
      this.timer.unref();
    }
  }

  /** The upstream request, once http-proxy made it. */
  started(upstream: ClientRequest): void {
    this.upstream = upstream;
    if (this.closed) upstream.destroy();
  }

  /** The upstream answer: its bytes are counted as it streams to the viewer. */
  answered(answer: IncomingMessage): void {
    if (this.limits.answerBytes <= 0) return;
    answer.on('data', (chunk: Buffer) => {
      this.bytes += chunk.length;
      if (this.bytes <= this.limits.answerBytes) return;
      this.cut = true;
      answer.destroy();
      this.res.destroy();
    });
  }

  /** Whether the viewer is gone (or the answer was cut): nothing more is written to it. */
  get ended(): boolean {
    return this.closed || this.cut;
  }

  private end(): void {
    this.closed = true;
    clearTimeout(this.timer);
    // After a complete answer this is a no-op; before, it closes the driver's socket.
    this.upstream?.destroy();
  }
}
