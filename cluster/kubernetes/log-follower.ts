// Archiving a pod's log while the pod runs (log-archive.ts starts one follower per running
// driver or executor pod, up to a limit): the follower reads the log with follow=true and
// sends each full part of a multipart upload as it fills, so when the pod ends only the last
// part (< PART) and the upload's completion are left, not the whole log.
//
// Memory stays flat whatever the number of followed pods: bytes wait for their part in a spool
// file per pod (at most one part each, on local disk), and a part is read into one of a few
// shared buffers only to be sent.
//
// Exactness: the kubelet API has no byte offset. The follower reads the log with its lines'
// times (timestamps=true) and keeps where its copy ends in the log (log-timestamps.ts). After a
// cut stream it asks again from that second (sinceTime), drops what it has and checks that the
// bytes it drops end as its own copy ends (a log that no longer has them, e.g. rotated by the
// kubelet, fails the follow; the archive falls back to reading the whole log at the end). After
// each part it writes that position beside the archive (follow-state.ts), so a new leader or a
// restarted controller goes on with the same upload from there instead of reading the log anew.
// A stream that ends cleanly while the container still runs (a proxy cut) is followed again. At
// the end the kubelet's last lines (tailLines) must be the last bytes of the copy, else the
// follow is dropped and the whole log is read.
// Not followed: a container's earlier runs (`previous`); the archive keeps the last run's log.
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ObjectStore } from '../history/object-store.js';
import { readFollowState, removeFollowState, writeFollowState } from './follow-state.js';
import type { Log as LogFn } from './informers.js';
import { appendToTail, logEndMatchesTail, replayMatchesTail } from './log-copy-tail.js';
import { openPodLog } from './log-request.js';
import { capMarker } from './log-size-cap.js';
import { FOLLOW_PART_BYTES, type PartBuffers } from './part-buffers.js';
import { compareLineTimes, type LineStart, type LineTime, type LogMark, LogMismatch, Rejoin, sinceTimeOf, TimestampSplitter } from './log-timestamps.js';

/** A cut stream is followed again up to this many times in a row without a new byte. */
const MAX_FAILURES = 5;
/** After a clean end, how long to wait for the pod's end before asking whether the container still runs. */
const QUIET_MS = 5_000;

export interface LogFollowerOptions {
  kc: KubeConfig;
  store: ObjectStore;
  namespace: string;
  pod: string;
  /** The pod's uid: a former leader's state is taken over only for the same pod. */
  podUid: string;
  container?: string;
  /** The archive's object. */
  key: string;
  spoolDir: string;
  /** Spool file name (the pod's uid): unique per pod. */
  spoolName: string;
  buffers: PartBuffers;
  /** The archive keeps at most this many bytes of the log, then capMarker. */
  maxBytes: number;
  isLeader: () => boolean;
  /** Whether the pod's container still runs (a fresh read of the pod): after a stream that ended cleanly. */
  stillRunning: () => Promise<boolean>;
  log: LogFn;
  /** How a log is read (default: from the apiserver); the unit tests pass a fake kubelet. */
  openLog?: typeof openPodLog;
}

export class LogFollower {
  /** Bytes of the log the follower has (sent as parts or in the spool). */
  private confirmed = 0;
  private tail: Buffer = Buffer.alloc(0);
  /** The last line the copy has started: its time, how many lines of that time the copy has, where it starts. */
  private line?: { time: LineTime; same: number; start: number };
  private spool?: FileHandle;
  private spoolBytes = 0;
  private uploadId?: string;
  private readonly etags: { part: number; etag: string }[] = [];
  private capped = false;
  private failed?: string;
  private ending = false;
  private wakeEnding?: () => void;
  private readonly endingSignal = new Promise<void>((ok) => { this.wakeEnding = ok; });
  private readonly stop = new AbortController();
  private readonly running: Promise<void>;
  private readonly openLog: typeof openPodLog;

  constructor(private readonly options: LogFollowerOptions) {
    this.openLog = options.openLog ?? openPodLog;
    this.running = this.run().catch((error: unknown) => { this.failed ??= (error as Error).message ?? String(error); });
  }

  /** Bytes already sent to the store (the test's and the bench's view of progress). */
  get sentBytes(): number {
    return this.confirmed - this.spoolBytes;
  }

  /**
   * The pod has ended: reads what is left, checks the end, sends the last part and completes
   * the upload. False when the follow cannot vouch for the whole log (the caller reads it all).
   */
  async finish(): Promise<boolean> {
    this.ending = true;
    this.wakeEnding?.();
    await this.running;
    try {
      if (this.failed || this.stop.signal.aborted) throw new Error(this.failed ?? 'stopped');
      if (this.uploadId === undefined) throw new Error('less than a part: read whole');
      if (this.capped) await this.write(Buffer.from(capMarker(this.options.maxBytes)));
      else if (!(await this.endMatches())) throw new Error('the log\'s last lines are not the copy\'s');
      if (!this.options.isLeader()) throw new Error('no longer the leader');
      if (this.spoolBytes > 0) await this.sendPart(false);
      await this.options.store.completeMultipart(this.options.key, this.uploadId, this.etags);
      this.uploadId = undefined;
      await removeFollowState(this.options.store, this.options.key);
      return true;
    } catch (error) {
      if (this.uploadId !== undefined) this.options.log(`log follow of ${this.options.pod}: ${(error as Error).message}; reading the whole log`);
      return false;
    } finally {
      await this.discard();
    }
  }

  /**
   * Stops following. `handOver` (leadership lost, the service stops): the sent parts and their
   * state stay for the next leader to go on with; else (the pod went) nothing is kept.
   */
  async close(handOver = false): Promise<void> {
    this.stop.abort();
    this.wakeEnding?.();
    await this.running;
    if (handOver) this.uploadId = undefined;
    await this.discard();
  }

  private async discard(): Promise<void> {
    const uploadId = this.uploadId;
    this.uploadId = undefined;
    if (uploadId !== undefined) {
      await this.options.store.abortMultipart(this.options.key, uploadId).catch(() => undefined);
      await removeFollowState(this.options.store, this.options.key);
    }
    await this.spool?.close().catch(() => undefined);
    this.spool = undefined;
    await rm(join(this.options.spoolDir, this.options.spoolName), { force: true });
  }

  /** A former leader's state of this pod's follow, when its upload is still there: go on from it. */
  private async restore(): Promise<void> {
    const { store, key, pod } = this.options;
    const state = await readFollowState(store, key);
    if (!state) return;
    const usable = state.pod === this.options.podUid && state.bytes > 0 && state.bytes <= this.options.maxBytes
      && state.parts.length > 0 && await store.hasUpload(key, state.uploadId).catch(() => false);
    if (!usable) { await removeFollowState(store, key); return; } // the first part aborts the upload it names
    this.uploadId = state.uploadId;
    this.etags.push(...state.parts);
    this.confirmed = state.bytes;
    this.tail = state.tail;
    this.line = state.mark && { time: state.mark.time, same: state.mark.same, start: state.bytes - state.mark.lineBytes };
    this.options.log(`log follow of ${pod}: going on from byte ${state.bytes} of the upload a former leader left`);
  }

  private async run(): Promise<void> {
    await this.restore();
    let failures = 0;
    while (!this.stop.signal.aborted && !this.capped) {
      const before = this.confirmed;
      try {
        await this.readOnce(!this.ending);
        if (this.ending || this.capped) return;
        // A clean end: the container ended (its pod's end comes soon) or a proxy cut the stream.
        await Promise.race([this.endingSignal, sleep(QUIET_MS, undefined, { signal: this.stop.signal }).catch(() => undefined)]);
        if (this.ending || this.stop.signal.aborted) return;
        if (!(await this.options.stillRunning())) { await this.endingSignal; return; }
        this.options.log(`log follow of ${this.options.pod}: the stream ended while the container runs; following again from byte ${this.confirmed}`);
      } catch (error) {
        if (this.stop.signal.aborted) return;
        if (error instanceof LogMismatch) throw error;
        failures = this.confirmed > before ? 1 : failures + 1;
        if (failures > MAX_FAILURES) throw error;
        this.options.log(`log follow of ${this.options.pod}: ${(error as Error).message}; following again from byte ${this.confirmed}`);
        await sleep(250 * 2 ** failures, undefined, { signal: this.stop.signal }).catch(() => undefined);
      }
    }
  }

  /** Where the copy ends in the log (undefined: nothing yet). */
  private get mark(): LogMark | undefined {
    return this.line && { time: this.line.time, same: this.line.same, lineBytes: this.confirmed - this.line.start };
  }

  /** One read of the log (followed, or the whole of an ended one) from the copy's mark on: drops what the copy has, keeps the rest. */
  private async readOnce(follow: boolean): Promise<void> {
    const mark = this.mark;
    if (!mark && this.confirmed > 0) throw new LogMismatch('a copy without its place in the log');
    const res = await this.openLog(this.options.kc, {
      namespace: this.options.namespace, pod: this.options.pod, container: this.options.container, follow, signal: this.stop.signal,
      timestamps: true, ...(mark ? { sinceTime: sinceTimeOf(mark.time) } : {}),
    });
    const splitter = new TimestampSplitter(mark !== undefined);
    const rejoin = new Rejoin(mark);
    let replayAt = this.confirmed - (mark?.lineBytes ?? 0);
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        const split = splitter.feed(chunk);
        const taken = rejoin.take(split.content, split.starts);
        if (taken.replayed.length > 0) {
          this.checkReplay(taken.replayed, replayAt);
          replayAt += taken.replayed.length;
        }
        const { content, starts } = taken;
        if (content.length === 0) continue;
        const room = this.options.maxBytes - this.confirmed;
        if (content.length >= room) {
          await this.keep(content.subarray(0, room), starts.filter((start) => start.at < room));
          this.capped = true;
          return;
        }
        await this.keep(content, starts);
      }
      // A stream cut before the copy's end came again: read again (the end check catches a log that lost it).
      if (!rejoin.joined) throw new Error('the stream ended before the copy\'s end came again');
    } finally {
      (res as IncomingMessage).destroy();
    }
  }

  /** Replayed bytes [at, at + bytes.length) must equal the copy where the copy's tail covers them. */
  private checkReplay(bytes: Buffer, at: number): void {
    if (!replayMatchesTail(bytes, at, this.confirmed, this.tail)) throw new LogMismatch('the log changed under the follower (rotated?)');
  }

  /**
   * Log bytes into the copy, with the lines that start in them: slice by slice up to each part's
   * end, so that the mark written with a part is where that part ends.
   */
  private async keep(content: Buffer, starts: LineStart[]): Promise<void> {
    let next = 0;
    for (let from = 0; from < content.length;) {
      const to = Math.min(content.length, from + FOLLOW_PART_BYTES - this.spoolBytes);
      for (; next < starts.length && starts[next]!.at < to; next++) {
        const { at, time } = starts[next]!;
        const same = this.line && compareLineTimes(this.line.time, time) === 0 ? this.line.same + 1 : 1;
        this.line = { time, same, start: this.confirmed + at - from };
      }
      const bytes = content.subarray(from, to);
      await this.write(bytes);
      this.confirmed += bytes.length;
      this.tail = appendToTail(this.tail, bytes);
      if (this.spoolBytes === FOLLOW_PART_BYTES) await this.sendPart();
      from = to;
    }
  }

  /** Into the spool (at most up to the part's end: keep sends the part). */
  private async write(bytes: Buffer): Promise<void> {
    if (!this.spool) {
      await mkdir(this.options.spoolDir, { recursive: true, mode: 0o700 });
      this.spool = await open(join(this.options.spoolDir, this.options.spoolName), 'w+', 0o600);
    }
    for (let offset = 0; offset < bytes.length;) {
      const n = Math.min(FOLLOW_PART_BYTES - this.spoolBytes, bytes.length - offset);
      await this.spool.write(bytes, offset, n, this.spoolBytes);
      this.spoolBytes += n;
      offset += n;
      if (this.spoolBytes === FOLLOW_PART_BYTES && offset < bytes.length) await this.sendPart(false); // the cap's line only
    }
  }

  /** The spool as the upload's next part; `recordState`: write where the parts end, for a next leader. */
  private async sendPart(recordState = true): Promise<void> {
    if (!this.options.isLeader()) throw new Error('no longer the leader');
    const { store, key } = this.options;
    if (this.uploadId === undefined) {
      await store.abortUnfinished(key).catch(() => undefined); // a former leader's: replaced by this one
      this.uploadId = await store.startMultipart(key);
    }
    const uploadId = this.uploadId;
    const size = this.spoolBytes;
    await this.options.buffers.use(async (buffer) => {
      const { bytesRead } = await this.spool!.read(buffer, 0, size, 0);
      if (bytesRead !== size) throw new Error(`the spool file gave ${bytesRead} of ${size} bytes`);
      this.etags.push(await store.uploadPart(key, uploadId, this.etags.length + 1, buffer.subarray(0, size)));
    });
    this.spoolBytes = 0;
    // Where the parts end, for a next leader. A state that failed to be written is an older one:
    // going on from it sends the later parts again under the same numbers, which replaces them.
    if (recordState) {
      await writeFollowState(store, key, { pod: this.options.podUid, uploadId, parts: [...this.etags], bytes: this.confirmed, mark: this.mark, tail: this.tail })
        .catch((error: unknown) => this.options.log(`log follow of ${this.options.pod}: its state was not written (${(error as Error).message})`));
    }
  }

  /** The kubelet's last lines of the ended container are the last bytes of the copy. */
  private endMatches(): Promise<boolean> {
    const { kc, namespace, pod, container } = this.options;
    return logEndMatchesTail(this.openLog, kc, { namespace, pod, container }, this.tail);
  }
}
