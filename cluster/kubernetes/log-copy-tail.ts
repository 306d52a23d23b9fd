// The last bytes of a followed log's copy, and the two checks made against them (kept apart from
// log-follower.ts, which reads and uploads): a replayed stretch of the log must equal the copy
// where the tail covers it, and at the end the kubelet's last lines must be the copy's last bytes.
// Either failing means the log changed under the follower, so the archive reads the whole log.
import type { KubeConfig } from '@kubernetes/client-node';
import type { openPodLog } from './log-request.js';

/** The copy's last bytes kept in memory: to check a replay joins up, and the end check. */
const TAIL_BYTES = 64 * 1024;
/** The end check asks the kubelet for this many last lines (at most TAIL_BYTES of them). */
const TAIL_LINES = 100;

/** The tail after `bytes` were added to a copy whose tail was `tail`. */
export function appendToTail(tail: Buffer, bytes: Buffer): Buffer {
  return bytes.length >= TAIL_BYTES ? Buffer.from(bytes.subarray(bytes.length - TAIL_BYTES))
    : Buffer.concat([tail.subarray(Math.max(0, tail.length + bytes.length - TAIL_BYTES)), bytes]);
}

/** Replayed bytes at [at, at + bytes.length) equal the copy (of `copyBytes` bytes, ending in `tail`) where the tail covers them. */
export function replayMatchesTail(bytes: Buffer, at: number, copyBytes: number, tail: Buffer): boolean {
  const tailStart = copyBytes - tail.length;
  const from = Math.max(at, tailStart);
  const to = at + bytes.length;
  if (from >= to) return true;
  return bytes.subarray(from - at, to - at).equals(tail.subarray(from - tailStart, to - tailStart));
}

export interface EndedContainer { namespace: string; pod: string; container?: string }

/** The kubelet's last lines of the ended container are the last bytes of the copy. */
export async function logEndMatchesTail(openLog: typeof openPodLog, kc: KubeConfig, target: EndedContainer, tail: Buffer): Promise<boolean> {
  const res = await openLog(kc, { ...target, tailLines: TAIL_LINES });
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > TAIL_BYTES) { res.destroy(); return false; }
    chunks.push(chunk);
  }
  const last = Buffer.concat(chunks);
  return last.length > 0 && last.length <= tail.length && tail.subarray(tail.length - last.length).equals(last);
}
