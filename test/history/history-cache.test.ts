// The proxy's cache of ended runs' history pages (dashboard/history-cache.ts) and what fills it:
// its byte cap and least-recently-used eviction, the rule that only a final run's pages (and the
// History Server's own static files) are kept, never a live UI's; collecting an answer as it
// streams to the viewer, with a real HTTP server; which pages and files the warm-up fetches; and
// which runs a restart warms again.
import { createServer, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { IndexedRun } from '../../cluster/history/event-log-index.js';
import { recentRuns, REWARM, WARM_BYTES } from '../../cluster/history/warm.js';
import { acceptsGzip, cacheKey, collectAnswer, HistoryPageCache, type CacheableRequest } from '../../dashboard/history-cache.js';
import { FIRST_JOBS, FIRST_STAGES, firstJobs, firstStages, stagePageData, staticPaths } from '../../dashboard/history-prefill.js';

const body = (bytes: number, fill = 'x') => Buffer.from(fill.repeat(bytes));

t.test('the cache stays under its byte cap, the least recently used out first', async (t) => {
  const cache = new HistoryPageCache({ maxBytes: 1000, maxEntryBytes: 400 });
  cache.set('a', {}, body(300));
  cache.set('b', {}, body(300));
  cache.set('c', {}, body(300));
  t.equal(cache.size, 3);
  t.ok(cache.get('a'), 'a is used: now the most recent');
  cache.set('d', {}, body(300));
  t.ok(cache.bytes <= 1000, `held ${cache.bytes} bytes, cap 1000`);
  t.notOk(cache.has('b'), 'b, the least recently used, went');
  t.ok(cache.has('a') && cache.has('c') && cache.has('d'), 'the others stay');
  cache.set('big', {}, body(401));
  t.notOk(cache.has('big'), 'an answer over the entry cap is not kept');
  t.ok(cache.has('a') && cache.has('c') && cache.has('d'), 'nor does it push others out');
});

t.test('headers count toward the cap; those of one connection are not kept', async (t) => {
  const cache = new HistoryPageCache({ maxBytes: 1000, maxEntryBytes: 400 });
  cache.set('a', { 'Content-Type': 'text/html', 'transfer-encoding': 'chunked', connection: 'keep-alive', date: 'now', 'content-length': '3' }, body(3));
  t.same(cache.get('a')?.headers, { 'content-type': 'text/html' });
  t.equal(cache.bytes, 3 + 'content-type'.length + 'text/html'.length);
  cache.set('fat', { 'x-long': 'y'.repeat(398) }, body(3));
  t.notOk(cache.has('fat'), 'a small body with headers over the entry cap is not kept');
});

t.test('only a final run\'s pages are kept, never a live UI\'s; keys part by run, prefix, path, query and coding', async (t) => {
  const final = { sparkAppId: 'local-1', completed: true };
  const base: CacheableRequest = { method: 'GET', run: final, prefix: '/dashboard/apps/a-1/spark-ui', path: '/history/local-1/jobs/', query: '', gzip: true };
  const key = cacheKey(base)!;
  t.ok(key, 'a final run\'s jobs page is kept');
  t.equal(cacheKey({ ...base, run: undefined }), undefined, 'the live UI is never kept');
  t.equal(cacheKey({ ...base, run: undefined, path: '/static/webui.js' }), undefined, 'nor its static files (the driver\'s)');
  t.equal(cacheKey({ ...base, run: { sparkAppId: 'local-1', completed: false } }), undefined, 'nor a run whose log is still open (a killed driver\'s)');
  t.equal(cacheKey({ ...base, method: 'POST' }), undefined, 'only GET and HEAD');
  t.equal(cacheKey({ ...base, method: 'HEAD' }), key, 'HEAD reads what GET kept');
  const others = [
    cacheKey({ ...base, prefix: '/dashboard/apps/b-1/spark-ui' }),
    cacheKey({ ...base, run: { sparkAppId: 'local-2', completed: true } }),
    cacheKey({ ...base, query: '?id=0' }),
    cacheKey({ ...base, path: '/history/local-1/stages/' }),
    cacheKey({ ...base, gzip: false }),
  ];
  t.equal(new Set([key, ...others]).size, 6, 'each differs');
  const stat = cacheKey({ ...base, path: '/static/webui.js', run: { sparkAppId: 'local-1', completed: false } });
  t.match(stat, /^static /, "the History Server's static files are kept whatever the run's state");
  t.equal(stat, cacheKey({ ...base, path: '/static/webui.js', prefix: '/dashboard/apps/b-1/spark-ui', run: final }), 'once for every run');
  t.match(cacheKey({ ...base, path: '/static/webui.js', query: '?v=1' }), /^page /, 'a static path with a query is kept as a page of the run');
});

t.test('which Accept-Encoding takes gzip', async (t) => {
  t.ok(acceptsGzip('gzip, deflate, br'));
  t.ok(acceptsGzip('br;q=1.0, gzip;q=0.8'));
  t.ok(acceptsGzip('*'));
  t.notOk(acceptsGzip('gzip;q=0'));
  t.notOk(acceptsGzip('identity'));
  t.notOk(acceptsGzip(undefined));
});

t.test('an answer is collected as it streams to the viewer, up to the cap; the viewer gets it whole either way', async (t) => {
  const server = createServer((req, res) => {
    const size = Number(new URL(req.url!, 'http://x').searchParams.get('size'));
    res.writeHead(req.url!.startsWith('/missing') ? 404 : 200, { 'content-type': 'text/plain' });
    // In pieces, without a length: the cap is checked as it streams.
    for (let sent = 0; sent < size; sent += 1000) res.write(body(Math.min(1000, size - sent)));
    res.end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => server.close());
  const { port } = server.address() as AddressInfo;
  const both = (path: string, cap: number) => new Promise<{ kept: Buffer | undefined; got: number }>((ok, fail) => {
    get(`http://127.0.0.1:${port}${path}`, (answer: IncomingMessage) => {
      const kept = collectAnswer(answer, cap);
      let got = 0;
      answer.on('data', (chunk: Buffer) => { got += chunk.length; });
      answer.once('end', () => { void kept.then((k) => ok({ kept: k, got })); });
    }).once('error', fail);
  });
  const small = await both('/page?size=5000', 8000);
  t.equal(small.kept?.length, 5000, 'within the cap: kept whole');
  t.equal(small.got, 5000);
  const big = await both('/page?size=20000', 8000);
  t.equal(big.kept, undefined, 'over the cap: not kept');
  t.equal(big.got, 20000, 'and the viewer still gets all of it');
  t.equal((await both('/missing?size=10', 8000)).kept, undefined, 'only a 200 is kept');
});

t.test('the warm-up fetches the first jobs and the static files the pages name', async (t) => {
  t.same(firstJobs([{ jobId: 0 }, { jobId: 3, status: 'FAILED' }, { jobId: 1 }, { jobId: 2 }, { jobId: 4 }]), [3, 0, 1], 'failed first, then by id');
  t.equal(firstJobs(Array.from({ length: 50 }, (_, jobId) => ({ jobId }))).length, FIRST_JOBS);
  const prefix = '/dashboard/apps/a-1/spark-ui';
  const html = `<link rel="stylesheet" href="${prefix}/static/bootstrap.min.css" type="text/css"/>`
    + `<script src="${prefix}/static/webui.js"></script><script src="${prefix}/static/webui.js"></script>`
    + `<script src="/dashboard/apps/b-1/spark-ui/static/other.js"></script><a href="${prefix}/history/local-1/jobs/">`;
  t.same(staticPaths(html, prefix), ['/static/bootstrap.min.css', '/static/webui.js'], "its own prefix's static files, once each");
});

t.test('the warm-up fetches the stage pages a user opens from the first jobs, at their last attempt, bounded', async (t) => {
  const jobs = [{ jobId: 0, stageIds: [0, 1] }, { jobId: 1, status: 'FAILED', stageIds: [2, 3, 4] }, { jobId: 2, stageIds: [1, 5] }];
  const stages = [
    { stageId: 0, attemptId: 0, status: 'COMPLETE' }, { stageId: 1, attemptId: 0, status: 'COMPLETE' },
    { stageId: 2, attemptId: 0, status: 'COMPLETE' }, { stageId: 3, attemptId: 0, status: 'FAILED' }, { stageId: 3, attemptId: 1, status: 'FAILED' },
    { stageId: 4, attemptId: 0, status: 'SKIPPED' }, { stageId: 5, attemptId: 0, status: 'COMPLETE' },
  ];
  t.same(firstStages(jobs, stages), ['?id=3&attempt=1', '?id=2&attempt=0', '?id=1&attempt=0'],
    'the failed job first, its failed stage first at its last attempt, then the latest; a skipped stage has no page');
  t.same(firstStages([{ jobId: 0, stageIds: [0, 1] }], stages.slice(0, 2)), ['?id=1&attempt=0', '?id=0&attempt=0'], 'one job: its stages as its page lists them');
  t.equal(firstStages([{ jobId: 0, stageIds: Array.from({ length: 50 }, (_, i) => i) }], Array.from({ length: 50 }, (_, stageId) => ({ stageId, attemptId: 0 }))).length, FIRST_STAGES);
  t.same(firstStages([{ jobId: 0 }], []), [], 'no stages known: none');
  t.same(stagePageData('/api/v1/applications/local-1', '?id=3&attempt=1'), [
    '/api/v1/applications/local-1/stages/3/1', '/api/v1/applications/local-1/stages/3/1/taskSummary?quantiles=0,0.25,0.5,0.75,1.0', '/api/v1/applications/local-1/allexecutors',
  ], 'and what its scripts ask for, as stagepage.js spells it');
});

t.test('a restart warms again the runs that ended last, most recent first, bounded', async (t) => {
  const now = Date.parse('2026-11-26T08:00:00Z');
  const run = (minutesAgo: number, extra: Partial<IndexedRun> = {}): IndexedRun =>
    ({ sparkAppId: `local-${minutesAgo}`, entry: `eventlog_v2_local-${minutesAgo}`, completed: true, bytes: WARM_BYTES, modifiedMs: now - minutesAgo * 60_000, ...extra });
  const runs: Array<[string, IndexedRun]> = [
    ['old', run(25 * 60)], ['ten', run(10)], ['one', run(1)], ['small', run(2, { bytes: WARM_BYTES - 1 })],
    ['open', run(3, { completed: false })], ['five', run(5)],
  ];
  t.same(recentRuns(runs, now).map(([name]) => name), ['one', 'five', 'ten'], 'big, complete, within a day; the latest first');
  const many = Array.from({ length: 30 }, (_, i): [string, IndexedRun] => [`r${i}`, run(i)]);
  t.same(recentRuns(many, now).map(([name]) => name), Array.from({ length: REWARM.count }, (_, i) => `r${i}`), `at most ${REWARM.count}`);
});
