// A resume of the events stream measured in bytes before it is built (cluster/events.ts): the
// feed keeps each held record's JSON size, and a resume whose missed records are more bytes than
// a stream may be sent gets a `reset` without one event being delivered (before, up to 1,000
// events were made into text and only then refused). End to end: fewer events than the count
// cap, more bytes than the byte cap, answered `reset`; a small resume is still replayed.
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { AppRecord } from '../../cluster/cluster.js';
import { EventFeed, type FeedMessage, replayFits } from '../../cluster/events.js';
import { type ServerEvent, serverEvents } from '../../lib/server-events.js';
import { defaultStreamBudget } from '../../submit-api/event-stream-writer.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';

const sized = (appName: string, bytes: number) => ({ appName, padding: 'x'.repeat(bytes) }) as unknown as AppRecord;

t.test('the byte decision: held sizes are summed before any event is delivered', async (t) => {
  const feed = new EventFeed();
  const first = feed.publish('changed', sized('a', 10));
  for (const name of ['b', 'c', 'd']) feed.publish('changed', sized(name, 2000));
  const delivered: FeedMessage[] = [];
  feed.subscribe(first.id, (m) => delivered.push(m), { maxReplay: 10, maxReplayBytes: 5000 });
  t.same(delivered, [{ type: 'reset', id: feed.lastId }], 'three events of ~2 KB, 5,000 bytes allowed: reset, and nothing else delivered');
  const within: FeedMessage[] = [];
  feed.subscribe(first.id, (m) => within.push(m), { maxReplay: 10, maxReplayBytes: 7000 });
  t.same(within.map((m) => m.type), ['changed', 'changed', 'changed'], '7,000 bytes allowed: replayed');

  const wide = new EventFeed();
  const start = wide.publish('changed', sized('w', 0));
  wide.publish('changed', { appName: 'x', padding: '\u20ac'.repeat(2000) } as unknown as AppRecord);
  const counted: FeedMessage[] = [];
  wide.subscribe(start.id, (m) => counted.push(m), { maxReplay: 10, maxReplayBytes: 5000 });
  t.same(counted.map((m) => m.type), ['reset'], 'counted in UTF-8 bytes: 2,000 euro signs are 6,000 bytes (2,000 characters)');

  t.ok(replayFits([], 0, 0), 'nothing missed always fits');
  t.ok(replayFits([{ bytes: 100 }, { bytes: 100 }], 2, 200), 'at the caps: fits');
  t.notOk(replayFits([{ bytes: 100 }, { bytes: 101 }], 2, 200), 'one byte over');
  t.notOk(replayFits([{ bytes: 1 }, { bytes: 1 }, { bytes: 1 }], 2, 200), 'one event over');
});

/** The first `count` events of a resumed stream. */
async function resume(base: string, lastEventId: string, count: number, t: { teardown(fn: () => void): void }): Promise<ServerEvent[]> {
  const seen: ServerEvent[] = [];
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  void (async () => {
    const response = await fetch(`${base}/api/apps/events`, { headers: { 'last-event-id': lastEventId }, signal: abort.signal });
    for await (const event of serverEvents(response.body as unknown as AsyncIterable<Uint8Array>)) seen.push(event);
  })().catch(() => undefined);
  await until(() => seen.length >= count, { what: 'the resumed stream\'s first events' });
  abort.abort();
  return seen;
}

t.test('a resume over the byte budget, under the event count, is answered reset', async (t) => {
  const api = await startTestApi(t);
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  // One real application with about 8 KB of Spark properties, copied into the feed.
  const engineConf = Object.fromEntries(Array.from({ length: 2 }, (_, i) => [`spark.probe.${i}`, 'x'.repeat(4000)]));
  const submitted = await api.call('POST', '/api/apps/', { jobName: 'probe', configOverrides: { ...fakeJob(), engineConf } });
  t.equal(submitted.status, 201);
  const record = await waitForState(async () => (await api.cluster.get(submitted.json.appName))!, 'COMPLETED');
  const { events } = api.cluster;
  const held = Math.floor(defaultStreamBudget.maxReplayEvents * 0.9);
  const oldest = events.publish('changed', { ...record, appName: 'probe-held-0' });
  let newest = oldest;
  for (let i = 1; i <= held; i++) newest = events.publish('changed', { ...record, appName: `probe-held-${i}` });
  const bytes = held * JSON.stringify(record).length;
  t.ok(bytes > defaultStreamBudget.maxReplayBytes, `${held} missed events of ${bytes} bytes: more than the ${defaultStreamBudget.maxReplayBytes} allowed`);

  const seen = await resume(base, oldest.id, 2, t);
  t.same(seen.slice(0, 2).map((e) => e.event), ['ready', 'reset'], 'reset, not a replay');
  // The feed's newest position when the reset was written: at or past the last held event (the live
  // service may publish one of its own meanwhile, e.g. the probe's record changing once more).
  const sequence = (id: string | undefined) => Number(id?.split('.').pop());
  const reset = sequence(seen[1]!.id);
  t.ok(reset >= sequence(newest.id) && reset <= sequence(events.lastId), `the reset carries the position to carry on from (${seen[1]!.id})`);

  const recent = events.publish('changed', { ...record, appName: 'probe-last-but-one' });
  events.publish('changed', { ...record, appName: 'probe-last' });
  const small = await resume(base, recent.id, 2, t);
  t.same(small.slice(0, 2).map((e) => e.event), ['ready', 'changed'], 'a small resume is replayed');
  t.equal(JSON.parse(small[1]!.data).appName, 'probe-last');
});
