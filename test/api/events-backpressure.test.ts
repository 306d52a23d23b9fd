// The events stream under unread and stale clients (submit-api/event-stream-writer.ts): a resume
// that missed more than a stream may be sent is answered `reset`, and a client that reads
// nothing while events flow is disconnected at its byte cap instead of being buffered for;
// the API answers meanwhile. The records are copies of one real submission's, published into the
// service's real feed (10,000 real submissions would take minutes; bench/events-resume.ts does it).
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { AppRecord } from '../../cluster/cluster.js';
import { EventFeed, type FeedMessage } from '../../cluster/events.js';
import { type ServerEvent, serverEvents } from '../../lib/server-events.js';
import { defaultStreamBudget } from '../../submit-api/event-stream-writer.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';

t.test('the feed answers a resume that missed more than maxReplay with a reset', async (t) => {
  const feed = new EventFeed();
  const first = feed.publish('changed', { appName: 'a' } as AppRecord);
  for (const name of ['b', 'c', 'd']) feed.publish('changed', { appName: name } as AppRecord);
  const within: FeedMessage[] = [];
  feed.subscribe(first.id, (m) => within.push(m), { maxReplay: 3 });
  t.same(within.map((m) => m.type), ['changed', 'changed', 'changed'], 'three missed, three allowed');
  const beyond: FeedMessage[] = [];
  feed.subscribe(first.id, (m) => beyond.push(m), { maxReplay: 2 });
  t.same(beyond, [{ type: 'reset', id: feed.lastId }], 'three missed, two allowed: reset');
});

/** A client that sends its request and then reads nothing at all. */
function unreadStream(port: number, lastEventId: string): Promise<Socket> {
  return new Promise((ok, fail) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET /api/apps/events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: ${lastEventId}\r\n\r\n`);
      socket.pause();
      ok(socket);
    });
    socket.once('error', fail);
  });
}

t.test('stale resumes get a reset, unread streams are closed at their cap, and the API answers meanwhile', async (t) => {
  const api = await startTestApi(t);
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (api.app.server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  // One real application with a large config (about 80 KB of Spark properties), copied into the feed.
  const engineConf = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`spark.probe.${i}`, 'x'.repeat(4000)]));
  const submitted = await api.call('POST', '/api/apps/', { jobName: 'probe', configOverrides: { ...fakeJob(), engineConf } });
  t.equal(submitted.status, 201);
  // Ended first, so the feed has nothing of its own to add while the test publishes.
  const record = await waitForState(async () => (await api.cluster.get(submitted.json.appName))!, 'COMPLETED');
  const { events } = api.cluster;
  // 10,000 held events (the feed's capacity), with a small config each.
  const small: AppRecord = { ...record, config: fakeJob() as AppRecord['config'] };
  const oldest = events.publish('changed', { ...small, appName: 'probe-held-0' });
  let newest = oldest;
  for (let i = 1; i < 10_000; i++) newest = events.publish('changed', { ...small, appName: `probe-held-${i}` });
  const baseline = events.subscriberCount;

  // A reader that resumes from the oldest held event: 10,000 missed, more than a stream is sent.
  const seen: ServerEvent[] = [];
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  void (async () => {
    const response = await fetch(`${base}/api/apps/events`, { headers: { 'last-event-id': oldest.id }, signal: abort.signal });
    for await (const event of serverEvents(response.body as unknown as AsyncIterable<Uint8Array>)) seen.push(event);
  })().catch(() => undefined);
  await until(() => seen.length >= 2, { what: 'the reader\'s first events' });
  t.same(seen.slice(0, 2).map((e) => e.event), ['ready', 'reset'], `${10_000 - 1} missed, over ${defaultStreamBudget.maxReplayEvents}: reset, not a replay`);
  // The position when the reset was made: the test's newest event, or a later one if the service
  // published after the test (its own change of the ended run can land late on a loaded machine).
  const position = (id: string | undefined) => Number(id?.split('.')[1]);
  t.ok(position(seen[1].id) >= position(newest.id) && position(seen[1].id) <= position(events.lastId),
    `the reset carries the position to carry on from (${seen[1].id}: the test's newest ${newest.id}, the feed's ${events.lastId})`);

  // Six clients that resume the same way and then read nothing.
  const probes = await Promise.all(Array.from({ length: 6 }, () => unreadStream(port, oldest.id)));
  t.teardown(() => probes.forEach((s) => s.destroy()));
  await until(() => events.subscriberCount === baseline + 7, { what: 'the six unread streams to be followed' });
  t.equal((await fetch(`${base}/healthz`)).status, 200, 'the API answers while they are open');

  // Live events go on: 500 of about 80 KB each, 40 MB per stream: past what the kernel's socket
  // buffers take on loopback (about 4 MB) plus every unread stream's cap. Published in batches the
  // reader keeps up with (it runs in this process too), so only the unread streams fall behind.
  const LIVE = 500;
  const sawLive = (i: number) => seen.some((e) => e.event === 'changed' && JSON.parse(e.data).appName === `probe-live-${i}`);
  for (let i = 0; i < LIVE; i++) {
    events.publish('changed', { ...record, appName: `probe-live-${i}` });
    if (i % 20 === 19) await until(() => sawLive(i), { what: `the reader to get event ${i}`, timeoutMs: 30_000 });
    if (i % 100 === 0) t.equal((await fetch(`${base}/healthz`)).status, 200, `the API answers while event ${i} is sent`);
  }
  await until(() => events.subscriberCount === baseline + 1, { what: 'the unread streams to be closed', timeoutMs: 30_000 });
  t.pass(`the six unread streams were closed at their ${defaultStreamBudget.maxBufferedBytes / 1024 / 1024} MiB cap`);
  const live = seen.filter((e) => e.event === 'changed' && JSON.parse(e.data).appName.startsWith('probe-live-'));
  t.equal(live.length, LIVE, 'the reading stream got every live event, in full');
  t.equal((await fetch(`${base}/healthz`)).status, 200);
});
