// The change feed (cluster/events.ts) and its API: labels on applications, the list filtered
// by them, and GET /api/apps/events as server-sent events resumed with Last-Event-ID.
// Drivers are the fake-spark-submit TEST DOUBLE (real processes, no JVM).
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { AppRecord } from '../../cluster/cluster.js';
import { EventFeed, type FeedMessage } from '../../cluster/events.js';
import { type ServerEvent, serverEvents } from '../../lib/server-events.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until } from '../helpers/poll.js';

const record = (appName: string) => ({ appName }) as AppRecord;

t.test('the feed replays what a subscriber missed, and resets when it cannot', async (t) => {
  const feed = new EventFeed({ capacity: 3 });
  const first = feed.publish('changed', record('a'));
  feed.publish('changed', record('b'));
  const seen: FeedMessage[] = [];
  feed.subscribe(first.id, (m) => seen.push(m)); // missed b only
  feed.publish('deleted', record('c'));
  t.same(seen.map((m) => m.type === 'reset' ? 'reset' : `${m.type}:${m.record.appName}`), ['changed:b', 'deleted:c']);

  const fresh: FeedMessage[] = [];
  feed.subscribe(feed.lastId, (m) => fresh.push(m));
  t.same(fresh, [], 'an up-to-date position replays nothing');

  for (const name of ['d', 'e', 'f']) feed.publish('changed', record(name));
  const tooOld: FeedMessage[] = [];
  feed.subscribe(first.id, (m) => tooOld.push(m));
  t.same(tooOld.map((m) => m.type), ['reset'], 'a position older than the ring is a reset');

  for (const foreign of ['00000000.1', 'garbage', `${feed.epoch}.999`, `${feed.epoch}.-1`]) {
    const got: FeedMessage[] = [];
    feed.subscribe(foreign, (m) => got.push(m));
    t.same(got.map((m) => m.type), ['reset'], `${foreign}: reset`);
  }
});

t.test('the feed tells its source when someone listens', async (t) => {
  const demand: boolean[] = [];
  const feed = new EventFeed({ onDemand: (active) => demand.push(active) });
  const one = feed.subscribe(undefined, () => undefined);
  const two = feed.subscribe(undefined, () => undefined);
  one();
  one(); // twice is harmless
  two();
  t.same(demand, [true, false]);
});

t.test('labels reach the record, filter the list, and reserved keys are refused', async (t) => {
  const api = await startTestApi(t);
  const growth = await api.call('POST', '/api/apps/', { jobName: 'lab', labels: { team: 'growth', 'example.com/tier': 'batch' }, configOverrides: fakeJob() });
  t.equal(growth.status, 201);
  t.same(growth.json.labels, { team: 'growth', 'example.com/tier': 'batch' });
  t.equal(growth.json.submittedBy, null, 'no submitter while authentication is off');
  const other = await api.call('POST', '/api/apps/', { jobName: 'lab', labels: { team: 'core' }, configOverrides: fakeJob() });
  t.equal(other.status, 201);
  const pod = api.cluster['records'].get(growth.json.appName)!.pod;
  t.equal(pod.metadata?.labels?.team, 'growth', 'the label is on the driver pod');

  const byTeam = await api.call('GET', '/api/apps/?labelSelector=team%3Dgrowth');
  t.same(byTeam.json.items.map((a: { appName: string }) => a.appName), [growth.json.appName]);
  const both = await api.call('GET', '/api/apps/?labelSelector=team==growth,example.com/tier=batch');
  t.equal(both.json.items.length, 1);
  const none = await api.call('GET', '/api/apps/?labelSelector=team=nobody');
  t.same(none.json.items, []);
  const bad = await api.call('GET', '/api/apps/?labelSelector=team');
  t.equal(bad.status, 400);
  t.equal(bad.json.field, 'labelSelector');

  for (const labels of [{ 'submission-service/job-name': 'x' }, { 'spark-role': 'driver' }, { 'bad key': 'x' }, { team: 'a'.repeat(64) }]) {
    const refused = await api.call('POST', '/api/apps/', { jobName: 'lab', labels, configOverrides: fakeJob() });
    t.equal(refused.status, 400, `refused: ${JSON.stringify(labels).slice(0, 60)}`);
    t.match(refused.json.field, /^labels/);
  }
});

/** Reads server-sent events from a real connection, with the reader the CLI and the gateway use, until stopped. */
function follow(base: string, path: string, headers: Record<string, string> = {}) {
  const events: ServerEvent[] = [];
  const abort = new AbortController();
  void (async () => {
    const response = await fetch(`${base}${path}`, { headers, signal: abort.signal });
    for await (const event of serverEvents(response.body as unknown as AsyncIterable<Uint8Array>)) events.push(event);
  })().catch(() => undefined); // ended by stop()
  return { events, stop: () => abort.abort() };
}

t.test('GET /api/apps/events streams changes and resumes after a reconnect', async (t) => {
  const api = await startTestApi(t);
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;

  const first = follow(base, '/api/apps/events?jobName=ev');
  t.teardown(first.stop);
  const searched = follow(base, '/api/apps/events?q=OTH'); // the list's search, ignoring case
  t.teardown(searched.stop);
  await until(() => [first, searched].every((s) => s.events.some((e) => e.event === 'ready')), { timeoutMs: 60_000 });
  const submitted = await api.call('POST', '/api/apps/', { jobName: 'ev', labels: { team: 'x' }, configOverrides: fakeJob() });
  const other = await api.call('POST', '/api/apps/', { jobName: 'other', configOverrides: fakeJob() });
  await until(() => first.events.some((e) => e.event === 'changed' && JSON.parse(e.data).state === 'COMPLETED'), { timeoutMs: 60_000 });
  const changes = first.events.filter((e) => e.event === 'changed').map((e) => JSON.parse(e.data));
  t.ok(changes.every((a) => a.appName === submitted.json.appName), 'only the job asked for');
  t.same(changes.map((a) => a.state).filter((s, i, all) => all.indexOf(s) === i), ['PENDING', 'RUNNING', 'COMPLETED'], 'each transition, in order');
  t.same(changes[0].labels, { team: 'x' }, 'events carry the Application');
  const final = changes.at(-1);
  t.same(final.transitions.map((x: { state: string }) => x.state), ['PENDING', 'RUNNING', 'COMPLETED'], 'local records keep each transition');
  t.ok(final.transitions.every((x: { at: string }, i: number, all: Array<{ at: string }>) => i === 0 || all[i - 1].at <= x.at), 'in time order');
  t.equal(final.transitions[0].at, final.createdAt, 'PENDING at creation');
  t.equal(final.transitions[1].at, final.startedAt, 'RUNNING at the start');
  first.stop();
  await until(() => searched.events.some((e) => e.event === 'changed' && JSON.parse(e.data).state === 'COMPLETED'), { timeoutMs: 60_000 });
  const found = searched.events.filter((e) => e.event === 'changed').map((e) => JSON.parse(e.data).appName);
  t.same([...new Set(found)], [other.json.appName], 'q: only what the search finds');
  searched.stop();

  // Missed while disconnected: a deletion.
  const lastSeen = first.events.filter((e) => e.id).at(-1)!.id!;
  t.equal((await api.call('DELETE', `/api/apps/${submitted.json.appName}`)).status, 204);
  const resumed = follow(base, '/api/apps/events', { 'last-event-id': lastSeen });
  t.teardown(resumed.stop);
  await until(() => resumed.events.some((e) => e.event === 'deleted'), { timeoutMs: 60_000 });
  t.equal(resumed.events[0].event, 'ready');
  t.equal(resumed.events[0].id, undefined, 'a resumed stream keeps its position');
  const deleted = resumed.events.find((e) => e.event === 'deleted')!;
  t.equal(JSON.parse(deleted.data).appName, submitted.json.appName);
  const sequence = (id: string) => Number(id.split('.')[1]);
  t.ok(sequence(deleted.id!) > sequence(lastSeen), 'ids increase');

  const foreign = follow(base, '/api/apps/events?lastEventId=0000.1');
  t.teardown(foreign.stop);
  await until(() => foreign.events.some((e) => e.event === 'reset'), { timeoutMs: 60_000 });
  t.pass('an id from elsewhere is answered with a reset');
});
