// LogFollower (cluster/kubernetes/log-follower.ts) against a fake kubelet log and an in-memory
// object store, on a fake clock: a follow stream cut mid-line goes on from the copy's mark
// (sinceTime) and the archive is the log byte for byte; close() stops at once and keeps or
// drops the upload; a new leader goes on from the state a former one left.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { IncomingMessage } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ObjectStore } from '../../cluster/history/object-store.js';
import { followStateKey } from '../../cluster/kubernetes/follow-state.js';
import { LogFollower } from '../../cluster/kubernetes/log-follower.js';
import { PartBuffers } from '../../cluster/kubernetes/part-buffers.js';
import type { PodLogQuery } from '../../cluster/kubernetes/log-request.js';
import { formatLineTime, type LineTime } from '../../cluster/kubernetes/log-timestamps.js';
import { installFakeClock, type FakeClock } from './fixtures/fake-clock.js';

const KEY = 'logs/app-1/driver.log';
const BASE_SECONDS = 1_700_000_000;

interface Line { time: LineTime; text: string }

/** A container's log: 20 lines a second, two lines to each time (times are shared), ~300 bytes each (the end check reads the last 100 lines, at most 64 KiB). */
function makeLog(count: number): Line[] {
  return Array.from({ length: count }, (_, i) => ({
    time: { seconds: BASE_SECONDS + Math.floor(i / 20), nanos: (Math.floor(i / 2) % 10) * 1_000 },
    text: `line ${i} ${'x'.repeat(200 + (i * 37) % 200)}\n`,
  }));
}

const contentOf = (lines: Line[]) => Buffer.from(lines.map((line) => line.text).join(''));

/** The last line whose first byte (after its time) a timestamped stream cut after `cut` bytes carried. */
function lastStartedBefore(lines: Line[], cut: number): Line {
  let at = 0;
  let last = lines[0]!;
  for (const line of lines) {
    at += formatLineTime(line.time).length + 1;
    if (at >= cut) break;
    last = line;
    at += line.text.length;
  }
  return last;
}

/** The kubelet's log API as openPodLog returns it: timestamps, sinceTime, tailLines, follow; streams that can be cut. */
class FakeKubelet {
  readonly requests: PodLogQuery[] = [];
  /** Per request in turn: cut the stream after this many bytes (undefined: no cut). */
  cuts: (number | undefined)[] = [];
  /** Follow streams stay open after the last line, as while the container runs, until aborted. */
  hold = false;
  constructor(readonly lines: Line[]) {}

  readonly open = async (_kc: KubeConfig, query: PodLogQuery): Promise<IncomingMessage> => {
    this.requests.push(query);
    if (query.tailLines !== undefined) return stream([contentOf(this.lines.slice(-query.tailLines))]);
    const since = query.sinceTime === undefined ? 0 : Date.parse(query.sinceTime) / 1000;
    const bytes = Buffer.from(this.lines.filter((line) => line.time.seconds >= since)
      .map((line) => (query.timestamps ? `${formatLineTime(line.time)} ${line.text}` : line.text)).join(''));
    const cut = this.cuts[this.requests.filter((q) => q.tailLines === undefined).length - 1];
    const chunks: Buffer[] = [];
    for (let at = 0; at < Math.min(bytes.length, cut ?? Infinity); at += 64 * 1024) chunks.push(bytes.subarray(at, Math.min(at + 64 * 1024, cut ?? Infinity)));
    const end = cut !== undefined ? 'cut' : query.follow && this.hold ? 'hold' : 'end';
    return stream(chunks, end, query.signal);
  };
}

function stream(chunks: Buffer[], end: 'end' | 'cut' | 'hold' = 'end', signal?: AbortSignal): IncomingMessage {
  async function* body() {
    for (const chunk of chunks) {
      if (signal?.aborted) throw new Error('aborted');
      yield chunk;
    }
    if (end === 'cut') throw new Error('read ECONNRESET');
    if (end === 'hold') {
      await new Promise((ok) => signal?.addEventListener('abort', ok, { once: true }));
      throw new Error('aborted');
    }
  }
  const iterator = body();
  return { [Symbol.asyncIterator]: () => iterator, destroy: () => undefined } as unknown as IncomingMessage;
}

/** The object store calls LogFollower and its follow state make, in memory. */
class FakeStore {
  readonly objects = new Map<string, Buffer>();
  readonly uploads = new Map<string, Map<number, Buffer>>();
  readonly aborted: string[] = [];
  private nextUpload = 0;
  async put(key: string, bytes: Buffer) { this.objects.set(key, Buffer.from(bytes)); }
  async readSmall(key: string) { return this.objects.get(key); }
  async remove(key: string) { this.objects.delete(key); }
  async hasUpload(_key: string, uploadId: string) { return this.uploads.has(uploadId); }
  async abortUnfinished() { for (const id of this.uploads.keys()) await this.abortMultipart(KEY, id); }
  async startMultipart() { const id = `upload-${++this.nextUpload}`; this.uploads.set(id, new Map()); return id; }
  async uploadPart(_key: string, uploadId: string, part: number, bytes: Buffer) {
    this.uploads.get(uploadId)!.set(part, Buffer.from(bytes)); // a copy: the follower reuses its buffer
    return { part, etag: `etag-${part}` };
  }
  async completeMultipart(key: string, uploadId: string, etags: { part: number }[]) {
    const parts = this.uploads.get(uploadId)!;
    this.objects.set(key, Buffer.concat(etags.map(({ part }) => parts.get(part)!)));
    this.uploads.delete(uploadId);
  }
  async abortMultipart(_key: string, uploadId: string) { this.uploads.delete(uploadId); this.aborted.push(uploadId); }
}

interface Harness { kubelet: FakeKubelet; store: FakeStore; clock: FakeClock; said: string[]; stillRunningAsked: number; spoolDir: string; follower?: LogFollower }

/** What setUp needs of a tap test. */
interface TestLike { teardown(run: () => unknown): void; testdir(): string }

function setUp(t: TestLike, lines: Line[], store = new FakeStore()): Harness {
  const clock = installFakeClock();
  t.teardown(() => clock.restore());
  return { kubelet: new FakeKubelet(lines), store, clock, said: [], stillRunningAsked: 0, spoolDir: t.testdir() };
}

const buffers = new PartBuffers(1);

function follow(h: Harness): LogFollower {
  h.follower = new LogFollower({
    kc: {} as KubeConfig, store: h.store as unknown as ObjectStore, namespace: 'spark', pod: 'app-1-driver', podUid: 'uid-1',
    key: KEY, spoolDir: h.spoolDir, spoolName: 'uid-1', buffers, maxBytes: 100 * 1024 * 1024,
    isLeader: () => true,
    stillRunning: async () => { h.stillRunningAsked++; return false; },
    log: (text) => h.said.push(text), openLog: h.kubelet.open,
  });
  return h.follower;
}

/** Moves fake time on while the follower's real file I/O runs, until `ready` (a hang guard, not a time budget). */
async function until(h: Harness, ready: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000_000 && !ready(); i++) await h.clock.advance(100, 100);
  if (!ready()) throw new Error('the follower never got there');
}

t.test('a follow stream cut mid-line goes on from the copy\'s mark, and the archive is the log byte for byte', async (t) => {
  const lines = makeLog(22_000);
  const h = setUp(t, lines);
  h.kubelet.cuts = [3_000_001];
  const follower = follow(h);
  await until(h, () => h.stillRunningAsked > 0);
  t.ok(await follower.finish(), 'the follow vouches for the whole log');
  const follows = h.kubelet.requests.filter((q) => q.tailLines === undefined);
  t.equal(follows.length, 2, 'read once more after the cut');
  t.ok(follows.every((q) => q.follow && q.timestamps), 'both reads follow, with times');
  t.equal(follows[0]!.sinceTime, undefined, 'the first from the start');
  t.equal(follows[1]!.sinceTime, new Date(lastStartedBefore(lines, 3_000_001).time.seconds * 1000).toISOString().replace('.000Z', 'Z'),
    'the second from the second of the last line the copy had started');
  t.match(h.said.join('\n'), /read ECONNRESET; following again from byte \d+/, 'the cut was said');
  const archive = h.store.objects.get(KEY);
  t.ok(archive?.equals(contentOf(lines)), `the archive is the log exactly (${archive?.length} of ${contentOf(lines).length} bytes)`);
  t.notOk(h.store.objects.has(followStateKey(KEY)), 'the follow state is removed once complete');
  t.notOk(existsSync(join(h.spoolDir, 'uid-1')), 'the spool file is removed');
});

t.test('close() ends a follow that waits on an open stream and drops its upload', async (t) => {
  const h = setUp(t, makeLog(19_000));
  h.kubelet.hold = true;
  const follower = follow(h);
  await until(h, () => h.store.objects.has(followStateKey(KEY)));
  t.equal(h.store.uploads.size, 1, 'a part was sent');
  await follower.close();
  t.ok(h.kubelet.requests[0]!.signal?.aborted, 'the open stream was aborted');
  t.same(h.store.aborted, ['upload-1'], 'the upload was aborted');
  t.notOk(h.store.objects.has(followStateKey(KEY)), 'and its state removed');
  t.notOk(existsSync(join(h.spoolDir, 'uid-1')), 'the spool file is removed');
  await h.clock.advance(60_000, 1_000);
  t.equal(h.kubelet.requests.length, 1, 'no read after the stop');
});

t.test('a follow handed over keeps its upload, and the next leader goes on from its state', async (t) => {
  const lines = makeLog(22_000);
  const first = setUp(t, lines);
  first.kubelet.hold = true;
  const leaving = follow(first);
  await until(first, () => first.store.objects.has(followStateKey(KEY)));
  await leaving.close(true);
  t.same(first.store.aborted, [], 'the upload is kept for the next leader');
  t.ok(first.store.objects.has(followStateKey(KEY)), 'with its state');
  const next: Harness = { ...first, kubelet: new FakeKubelet(lines), said: [], stillRunningAsked: 0 };
  const follower = follow(next);
  await until(next, () => next.stillRunningAsked > 0);
  t.ok(await follower.finish(), 'the next leader vouches for the whole log');
  t.ok(next.kubelet.requests[0]!.sinceTime, 'it reads from the state\'s mark, not from the start');
  t.match(next.said.join('\n'), /going on from byte \d+ of the upload a former leader left/);
  t.ok(next.store.objects.get(KEY)?.equals(contentOf(lines)), 'the archive is the log exactly');
  t.same(next.store.aborted, [], 'the former leader\'s upload was completed, not replaced');
});
