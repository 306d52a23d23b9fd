// The overload guard (@fastify/under-pressure): a loop blocked for longer than the limit answers
// 503 with Retry-After; a shorter stall does not, wherever it falls. Each stall starts just
// after the guard has taken its sample (seen as a new heapUsed in memoryUsage()): the moment at
// which, with the guard's default 1 s interval, a 1.5 s stall counted as an infinite delay and
// answered 503 for a second although the limit was 2 s.
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { startTestApi } from '../helpers/api.js';

// The limit well above the short stall: on a loaded machine (two CPU hogs, load 25) a 1.5 s stall
// measured 2.16 s, a true overload of a 2 s limit. 1.5 s is still past the old 1 s sample interval.
const LIMIT_MS = 4000;
const SHORT_STALL_MS = 1500;

const spin = (ms: number) => { const end = Date.now() + ms; while (Date.now() < end) { /* the loop is blocked */ } };

/** An answer, when it came (ms after the stall ended) and the delay the guard had measured. */
interface Answer { status: number; afterMs: number; guardDelayMs: number }

/** What the guard last measured (its decoration). */
const guard = (app: FastifyInstance) => (app as unknown as { memoryUsage(): { heapUsed: number; eventLoopDelay: number } }).memoryUsage();

/** Resolves within a millisecond or so of the guard's next sample. */
async function justSampled(app: FastifyInstance): Promise<void> {
  const before = guard(app).heapUsed;
  const deadline = Date.now() + 4 * LIMIT_MS;
  while (guard(app).heapUsed === before) {
    if (Date.now() > deadline) throw new Error('the guard took no sample');
    await new Promise((ok) => setImmediate(ok));
  }
}

t.test('a stall shorter than the limit is not an overload; one longer is, and passes', async (t) => {
  const api = await startTestApi(t, { limits: { maxEventLoopDelayMs: LIMIT_MS } });
  const statuses = async () => {
    const seen: Answer[] = [];
    const start = Date.now();
    while (Date.now() < start + LIMIT_MS) {
      const { status } = await api.call('GET', '/api/apps/');
      seen.push({ status, afterMs: Date.now() - start, guardDelayMs: Math.round(guard(api.app).eventLoopDelay) });
      await new Promise((ok) => setTimeout(ok, 100));
    }
    return seen;
  };

  // The first request after start runs cold code (642 ms with three CPU hogs beside it): right
  // after a 1.5 s stall that blocks the loop beyond the limit, a true overload. Warm it first.
  t.equal((await api.call('GET', '/api/apps/')).status, 200, 'served before any stall');

  // Three times: on the old interval one such stall answered 503 about every other time.
  const seen: Answer[] = [];
  for (let i = 0; i < 3; i++) {
    await justSampled(api.app);
    spin(SHORT_STALL_MS);
    seen.push(...await statuses());
  }
  const refused = seen.filter((s) => s.status !== 200);
  t.same(refused, [], `three ${SHORT_STALL_MS} ms stalls just after a sample: only 200 in the ${LIMIT_MS} ms after each (${seen.length} requests)`);

  await justSampled(api.app);
  spin(LIMIT_MS * 1.25);
  await justSampled(api.app); // the guard's first sample after the stall is the one that measured it
  const after = await api.call('GET', '/api/apps/');
  t.equal(after.status, 503, `a ${LIMIT_MS * 1.25} ms stall: 503`);
  t.equal(after.headers['retry-after'], '5', 'with Retry-After');
  t.match(after.json, { statusCode: 503 }, 'as JSON');
  const later = Date.now() + 60_000; // a safety net: the loop ends at the first 200
  let status = after.status;
  while (status === 503 && Date.now() < later) {
    await new Promise((ok) => setTimeout(ok, 100));
    status = (await api.call('GET', '/api/apps/')).status;
  }
  t.equal(status, 200, 'served again once the loop is free');
});
