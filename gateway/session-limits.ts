// What one kernel may hold in memory, and how fast its iopub may run, in bytes and messages.
// Every buffer of a kernel session has a byte cap: a client that sends while the driver starts,
// output produced while nobody listens, and a client that reads slower than the kernel writes
// each stop at a known size instead of growing with the process.

export interface SessionLimits {
  /** Client requests held while Spark starts (their text as received). Beyond: refused with an error reply. */
  heldBytes: number;
  /** iopub kept for sessions to come back to (only while no client is attached), and replies kept for a session. Oldest dropped first. */
  replayBytes: number;
  /** Unsent bytes queued on one client's websocket; beyond, the client is closed (1008): a slow consumer. */
  sendBufferBytes: number;
  /** jupyter_server's `iopub_msg_rate_limit` (messages/s over the window; 0: off). */
  iopubMsgRate: number;
  /** jupyter_server's `iopub_data_rate_limit` (bytes/s of `stream` output over the window; 0: off). */
  iopubDataRate: number;
  /** jupyter_server's `rate_limit_window`, in seconds. */
  rateWindowSeconds: number;
}

const MiB = 1024 * 1024;

/** jupyter_server's rate defaults (1,000 messages/s, 1 MB/s, 3 s); byte caps sized for a notebook's output. */
export const DEFAULT_LIMITS: SessionLimits = {
  heldBytes: 16 * MiB,
  replayBytes: 16 * MiB,
  // Above the replay cap: a client that reconnects takes all that was kept in one go.
  sendBufferBytes: 32 * MiB,
  iopubMsgRate: 1000,
  iopubDataRate: 1_000_000,
  rateWindowSeconds: 3,
};

/** Close code for a client that reads slower than its kernel writes (RFC 6455: policy violation). */
export const SLOW_CONSUMER_CLOSE = 1008;
