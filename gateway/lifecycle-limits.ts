// How long the gateway waits on a kernel and its sockets, as jupyter_server's settings do: a
// websocket that stops answering pings is closed, a kernel that never gets ready is ended, a
// restart or an interrupt the launcher does not confirm is answered as failed, not as done.

export interface LifecycleLimits {
  /** Ping every websocket (clients and launchers) this often; 0: never (jupyter_server's `ws_ping_interval`). */
  pingIntervalMs: number;
  /** A websocket that answered no ping for this long is closed (jupyter_server's `ws_ping_timeout`). */
  pingTimeoutMs: number;
  /** A kernel whose launcher has not reported ready this long after its submission is ended; 0: never. */
  launchTimeoutMs: number;
  /** A restart the launcher has not confirmed within this is answered as failed (jupyter_server's `kernel_info_timeout`). */
  restartTimeoutMs: number;
  /** An interrupt the launcher has not confirmed within this is answered as failed. */
  interruptTimeoutMs: number;
}

/** jupyter_server's 30 s ping and max(3 pings, 30 s) timeout, its 60 s `kernel_info_timeout`; a launch may wait for a node and an image pull. */
export const DEFAULT_LIFECYCLE: LifecycleLimits = {
  pingIntervalMs: 30_000,
  pingTimeoutMs: 90_000,
  launchTimeoutMs: 600_000,
  restartTimeoutMs: 60_000,
  interruptTimeoutMs: 10_000,
};

/** jupyter_server's rule when only the interval is set: the timeout is three pings, at least 30 s. */
export const pingTimeoutFor = (intervalMs: number) => Math.max(3 * intervalMs, 30_000);
