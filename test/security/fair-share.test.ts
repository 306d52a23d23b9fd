// Fair shares between keys (submit-api/fair-share.ts): two user keys, A and B, and an admin.
// A floods submissions, fills its applications at once and its streams; B is not touched by any
// of it. Drivers are the fake-spark-submit TEST DOUBLE (real processes, no JVM).
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { type ServerEvent, serverEvents } from '../../lib/server-events.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

function keys(t: Parameters<typeof tempDir>[0]) {
  const store = new FileKeyStore(tempDir(t));
  return { store, a: store.create('user', 'A'), b: store.create('user', 'B'), admin: store.create('admin', 'ops') };
}

/** An event stream on a real connection, read with the reader the CLI uses; `status` once answered. */
function follow(base: string, key: string) {
  const events: ServerEvent[] = [];
  const abort = new AbortController();
  const state: { status?: number; ended: boolean } = { ended: false };
  void (async () => {
    const response = await fetch(`${base}/api/apps/events`, { headers: { 'x-api-key': key }, signal: abort.signal });
    state.status = response.status;
    if (response.ok) for await (const event of serverEvents(response.body as unknown as AsyncIterable<Uint8Array>)) events.push(event);
    else await response.text();
  })().catch(() => undefined).finally(() => { state.ended = true; });
  return { events, state, stop: () => abort.abort() };
}

t.test('A flooding submissions gets 429 with Retry-After; B and the admin still submit', async (t) => {
  const { store, a, b, admin } = keys(t);
  const api = await startTestApi(t, { auth: { enabled: true, store }, fairShare: { submissionsPerMinute: 3 } });
  const submit = (key: string) => api.call('POST', '/api/apps/?dryRun=true', { jobName: 'flood', configOverrides: fakeJob() }, { 'x-api-key': key });
  for (let i = 0; i < 3; i++) t.equal((await submit(a.key)).status, 200, `A's submission ${i + 1} of 3`);
  const refused = await submit(a.key);
  t.equal(refused.status, 429, 'the fourth in the minute is refused');
  t.equal(refused.json.statusCode, 429);
  t.equal(refused.json.error, 'Too Many Requests');
  t.match(refused.json.message, /3 submissions a key may make per minute/);
  t.match(refused.headers['content-type'], /application\/json/);
  const retryAfter = Number(refused.headers['retry-after']);
  t.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 60, `Retry-After in seconds (${refused.headers['retry-after']})`);
  t.equal((await submit(b.key)).status, 200, 'B is counted apart');
  for (let i = 0; i < 5; i++) t.equal((await submit(admin.key)).status, 200, `admin submission ${i + 1}: admins are not limited`);
  const invalid = await api.call('POST', '/api/apps/', { jobName: 'Not A Name' }, { 'x-api-key': a.key });
  t.equal(invalid.status, 400, 'a body that fails validation is answered as such, not counted');
});

t.test('A\'s unfinished applications are capped; B is not affected', async (t) => {
  const { store, a, b } = keys(t);
  // One core: A's first application runs (for a while), the second waits.
  const api = await startTestApi(t, { cores: 1, auth: { enabled: true, store }, fairShare: { applicationsPerKey: 2 } });
  const submit = (key: string, directives = {}) =>
    api.call('POST', '/api/apps/', { jobName: 'cap', configOverrides: { ...fakeJob(directives), executor: { cores: 1 } } }, { 'x-api-key': key });
  const running = await submit(a.key, { sleep: 60 });
  t.equal(running.status, 201);
  const waiting = await submit(a.key);
  t.equal(waiting.status, 201);
  const refused = await submit(a.key);
  t.equal(refused.status, 429, 'a third unfinished application of A is refused');
  t.match(refused.json.message, /2 unfinished applications/);
  t.equal((await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'cap', configOverrides: fakeJob() }, { 'x-api-key': a.key })).status, 200,
    'a dry run creates nothing, so it is not refused');
  const other = await submit(b.key);
  t.equal(other.status, 201, 'B submits beside A');
  t.equal((await api.call('POST', `/api/apps/${waiting.json.appName}/stop`, undefined, { 'x-api-key': a.key })).status, 200);
  t.equal((await submit(a.key)).status, 201, 'once one of A\'s applications ended, A submits again');
  t.equal((await submit(a.key)).status, 429, 'and is at its cap again');
  const stopped = await api.call('POST', `/api/apps/${running.json.appName}/stop`, undefined, { 'x-api-key': a.key });
  t.equal(stopped.json.state, 'KILLED');
});

t.test('A\'s streams are capped per key; B\'s and anonymous addresses apart; revoking A closes A\'s at once', async (t) => {
  const { store, a, b, admin } = keys(t);
  const api = await startTestApi(t, { auth: { enabled: true, store }, fairShare: { streamsPerKey: 2 } });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const streams = [follow(base, a.key), follow(base, a.key)];
  t.teardown(() => streams.forEach((s) => s.stop()));
  await until(() => streams.every((s) => s.events.some((e) => e.event === 'ready')), { what: 'A\'s two streams' });
  const third = follow(base, a.key);
  await until(() => third.state.ended, { what: 'the answer to A\'s third stream' });
  t.equal(third.state.status, 429, 'A\'s third stream is refused');
  const refusedLog = await api.call('GET', '/api/apps/nothing/log?follow=true', undefined, { 'x-api-key': a.key });
  t.equal(refusedLog.status, 404, 'an unknown application is 404 before any stream is counted');
  const bs = follow(base, b.key);
  t.teardown(bs.stop);
  await until(() => bs.events.some((e) => e.event === 'ready'), { what: 'B\'s stream' });
  t.equal(bs.state.status, 200, 'B\'s stream is not affected by A\'s');

  streams[0].stop();
  let again: ReturnType<typeof follow> | undefined;
  await until(async () => {
    again?.stop();
    again = follow(base, a.key);
    await until(() => again!.state.status !== undefined || again!.state.ended, { what: 'an answer' });
    return again.state.status === 200;
  }, { what: 'A\'s slot to be free again once a stream closed' });
  streams.push(again!);

  // Revoked as an operator does it: the key store's file is rewritten (here by this process).
  t.ok(store.revoke(a.id));
  await until(() => streams[1].state.ended && again!.state.ended, { what: 'A\'s streams to end' });
  t.pass('A\'s open streams ended with the revocation');
  const submitted = await api.call('POST', '/api/apps/', { jobName: 'after', configOverrides: fakeJob() }, { 'x-api-key': b.key });
  t.equal(submitted.status, 201);
  await until(() => bs.events.some((e) => e.event === 'changed' && JSON.parse(e.data).appName === submitted.json.appName), { what: 'B\'s stream to carry on' });
  t.notOk(bs.state.ended, 'B\'s stream is still open');
  const admins = follow(base, admin.key);
  t.teardown(admins.stop);
  await until(() => admins.state.status !== undefined, { what: 'the admin\'s stream' });
  t.equal(admins.state.status, 200);
});

t.test('without authentication the stream cap counts per address', async (t) => {
  const api = await startTestApi(t, { fairShare: { streamsPerKey: 1 } });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const first = follow(base, '');
  t.teardown(first.stop);
  await until(() => first.events.some((e) => e.event === 'ready'), { what: 'the first stream' });
  const second = follow(base, '');
  await until(() => second.state.ended, { what: 'the second answer' });
  t.equal(second.state.status, 429, 'a second stream from the same address is refused');
  t.equal((await api.call('POST', '/api/apps/?dryRun=true', { jobName: 'anon', configOverrides: fakeJob() })).status, 200, 'submissions are not limited without keys');
});
