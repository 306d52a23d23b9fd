// The iopub rate limit of jupyter_server's own kernel websockets (`iopub_msg_rate_limit`,
// `iopub_data_rate_limit`, `rate_limit_window`), with its semantics: messages and `stream`
// bytes are counted over a sliding window; `status`, `comm_open` and `execute_input` are never
// counted nor dropped; over a limit, output is dropped (and the user told once) until the rate
// falls below 80% of it; an `idle` status starts afresh ("Run All" must not trip it). The Jupyter
// server in front of a gateway relays without limiting, so a kernel printing in a loop would
// otherwise flood every client (and the buffers behind them) at the kernel's pace.
import type { SessionLimits } from './session-limits.js';

const NEVER_LIMITED = new Set(['status', 'comm_open', 'execute_input']);

export type RateVerdict = { send: true } | { send: false; notices: Array<'messages' | 'data'> };

export class IopubRateLimiter {
  private count = 0;
  private bytes = 0;
  /** When each counted message leaves the window, and its bytes. */
  private expiries: Array<[number, number]> = [];
  private head = 0;
  private msgsExceeded = false;
  private dataExceeded = false;

  constructor(private readonly limits: Pick<SessionLimits, 'iopubMsgRate' | 'iopubDataRate' | 'rateWindowSeconds'>) {}

  get limiting(): boolean { return this.msgsExceeded || this.dataExceeded; }

  /**
   * One iopub message: its type, execution state (status only), size (counted for `stream`) and
   * the time in ms. `notices` lists the limits crossed by this very message (say each once).
   */
  admit(msgType: string, state: string | null, size: number, nowMs: number): RateVerdict {
    if (msgType === 'status' && state === 'idle') this.reset();
    if (NEVER_LIMITED.has(msgType)) return { send: true };
    const window = this.limits.rateWindowSeconds;
    while (this.head < this.expiries.length && nowMs >= this.expiries[this.head][0]) {
      this.count--;
      this.bytes -= this.expiries[this.head][1];
      this.head++;
    }
    if (this.head > 1024 && this.head * 2 > this.expiries.length) { this.expiries = this.expiries.slice(this.head); this.head = 0; }
    const counted = msgType === 'stream' ? size : 0;
    this.count++;
    this.bytes += counted;
    this.expiries.push([nowMs + window * 1000, counted]);
    const notices: Array<'messages' | 'data'> = [];
    const msgRate = this.count / window;
    const dataRate = this.bytes / window;
    const msgLimit = this.limits.iopubMsgRate;
    const dataLimit = this.limits.iopubDataRate;
    if (msgLimit > 0 && msgRate > msgLimit) {
      if (!this.msgsExceeded) notices.push('messages');
      this.msgsExceeded = true;
    } else if (this.msgsExceeded && msgRate < 0.8 * msgLimit) this.msgsExceeded = false;
    if (dataLimit > 0 && dataRate > dataLimit) {
      if (!this.dataExceeded) notices.push('data');
      this.dataExceeded = true;
    } else if (this.dataExceeded && dataRate < 0.8 * dataLimit) this.dataExceeded = false;
    if (!this.limiting) return { send: true };
    // Not sent: not counted either, so the rate falls while output is dropped.
    this.count--;
    this.bytes -= counted;
    this.expiries.pop();
    return { send: false, notices };
  }

  private reset(): void {
    this.count = 0;
    this.bytes = 0;
    this.expiries = [];
    this.head = 0;
    this.msgsExceeded = false;
    this.dataExceeded = false;
  }
}

/** What the user reads in the cell when output is dropped (stderr, parented to the cell). */
export function rateNotice(which: 'messages' | 'data', limits: Pick<SessionLimits, 'iopubMsgRate' | 'iopubDataRate' | 'rateWindowSeconds'>): string {
  const what = which === 'messages' ? `${limits.iopubMsgRate} messages/s` : `${limits.iopubDataRate} bytes/s of stream output`;
  return `IOPub ${which === 'messages' ? 'message' : 'data'} rate exceeded: the notebook gateway drops this kernel's output `
    + `while it runs faster than ${what} (averaged over ${limits.rateWindowSeconds} s), so that no client is flooded. `
    + 'Output resumes when the rate falls, or at the next cell.\n';
}
