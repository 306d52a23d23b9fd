// Stopping a server without failing a request, which is what a rolling update asks of a pod.
// When Kubernetes deletes a pod, the kubelet's SIGTERM and the removal of the pod from its
// Service's endpoints happen at the same time, and kube-proxy (or an ingress) takes a moment
// to stop sending new connections to it; clients also hold keep-alive connections to it.
// So on SIGTERM a process first drains: it keeps serving for a delay, answering every request
// with `Connection: close` so that clients open their next connection elsewhere, then waits
// until no request is still being worked on, and only then closes its server (which cuts what
// is left: event streams and followed logs, whose clients reconnect).
import type { IncomingMessage, ServerResponse } from 'node:http';

/** An http or https server. */
interface RequestSource {
  prependListener(event: 'request', listener: (req: IncomingMessage, res: ServerResponse) => void): unknown;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class Drain {
  private draining = false;
  /** Responses not yet closed; those without headers sent are still being worked on. */
  private readonly open = new Set<ServerResponse>();

  /** Tracks the server's requests; call before it serves. Works for http and https servers. */
  attach(server: RequestSource): void {
    // Before the server's own handler, so that the header is set before anything is written.
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
      this.open.add(res);
      res.once('close', () => this.open.delete(res));
      if (this.draining) res.setHeader('connection', 'close');
    });
  }

  get active(): boolean { return this.draining; }

  /** Requests still waiting for their answer (streams that sent their headers do not count). */
  get working(): number {
    let count = 0;
    for (const res of this.open) if (!res.headersSent) count += 1;
    return count;
  }

  /**
   * Serves on for `delayMs` with `Connection: close` on every answer, then waits until no
   * request is being worked on (at most `settleMs`). Resolves when the server may close.
   */
  async run(delayMs: number, settleMs = 10_000): Promise<void> {
    this.draining = true;
    if (delayMs > 0) await sleep(delayMs);
    const deadline = Date.now() + settleMs;
    while (this.working > 0 && Date.now() < deadline) await sleep(50);
  }
}
