// The pages people open first of an ended run, put into the proxy's cache (history-cache.ts) as
// soon as the History Server has replayed the run (cluster/history/warm.ts), so that the first
// open is answered from memory like the later ones: the jobs list, the first jobs' pages (failed
// ones first), the stages list, the first jobs' stage pages (those a user opens from a job's
// page), and Spark's scripts and styles they name. Asked as a browser
// does (gzip, under the application's prefix), one request at a time: the History Server is the
// one replaying the next run meanwhile.
import { get } from 'node:http';
import { gunzipSync } from 'node:zlib';
import type { HistoryTarget } from '../cluster/history/spark-history.js';
import { cacheKey, collectAnswer, type HistoryPageCache, STATIC_CACHE_CONTROL } from './history-cache.js';
import { historyPath } from './history-paths.js';
import { forViewer } from './spark-ui-access.js';
import { isRewritablePage, rewriteAnswerBody } from './spark-ui-static.js';

/** At most this many of a run's job pages are put in the cache. */
export const FIRST_JOBS = 3;
/** At most this many stage pages (of the first jobs) are put in the cache. */
export const FIRST_STAGES = 3;

interface JobData { jobId: number; status?: string; stageIds?: number[] }
interface StageData { stageId: number; attemptId: number; status?: string }

interface Answer { headers: Record<string, string | string[] | undefined>; body: Buffer }

/** GET without decoding the body (fetch would gunzip it), up to `maxBytes`; undefined unless a whole 200. */
function getRaw(url: URL, headers: Record<string, string>, maxBytes: number, signal: AbortSignal): Promise<Answer | undefined> {
  return new Promise((done, fail) => {
    const request = get(url, { headers, signal }, (answer) => {
      void collectAnswer(answer, maxBytes).then((body) => {
        if (!body) answer.destroy();
        done(body && { headers: answer.headers, body });
      });
    });
    request.once('error', fail);
  });
}

function text(answer: Answer): string {
  return (answer.headers['content-encoding'] === 'gzip' ? gunzipSync(answer.body, { maxOutputLength: 16 * 1024 * 1024 }) : answer.body).toString('utf8');
}

/** The static files a page names under the prefix (`…/static/x.js`), as History Server paths. */
export function staticPaths(html: string, prefix: string): string[] {
  const found = new Set<string>();
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const m of html.matchAll(new RegExp(`(?:src|href)="${escaped}(/static/[A-Za-z0-9._/-]+)"`, 'g'))) found.add(m[1]!);
  return [...found];
}

/** The jobs whose pages are opened first: failed ones, then by id; at most FIRST_JOBS. */
export function firstJobs(jobs: Array<{ jobId: number; status?: string }>): number[] {
  return [...jobs]
    .sort((a, b) => Number(b.status === 'FAILED') - Number(a.status === 'FAILED') || a.jobId - b.jobId)
    .slice(0, FIRST_JOBS)
    .map((job) => job.jobId);
}

/**
 * The stage pages opened from the first jobs' pages, as `?id=…&attempt=…` (the links' own query):
 * each first job's stages, failed ones first, then as its page lists them (the latest first), each
 * at its last attempt; stages that never ran (skipped) have no page worth keeping. At most FIRST_STAGES.
 */
export function firstStages(jobs: JobData[], stages: StageData[]): string[] {
  const attempts = new Map<number, StageData>();
  for (const stage of stages) {
    if (stage.status === 'SKIPPED') continue;
    const known = attempts.get(stage.stageId);
    if (!known || stage.attemptId > known.attemptId) attempts.set(stage.stageId, stage);
  }
  const failed = (id: number) => Number(attempts.get(id)?.status === 'FAILED');
  const chosen: string[] = [];
  for (const jobId of firstJobs(jobs)) {
    const ids = [...(jobs.find((job) => job.jobId === jobId)?.stageIds ?? [])].sort((a, b) => failed(b) - failed(a) || b - a);
    for (const id of ids) {
      const stage = attempts.get(id);
      const query = stage && `?id=${id}&attempt=${stage.attemptId}`;
      if (query && !chosen.includes(query)) chosen.push(query);
      if (chosen.length === FIRST_STAGES) return chosen;
    }
  }
  return chosen;
}

/** What a stage page's scripts ask for once it has loaded (Spark 3.5's stagepage.js): the stage, its task summary, the executors. */
const QUANTILES = '0,0.25,0.5,0.75,1.0';
export function stagePageData(api: string, stageQuery: string): string[] {
  const [, id, attempt] = /^\?id=(\d+)&attempt=(\d+)$/.exec(stageQuery) ?? [];
  if (id === undefined) return [];
  return [`${api}/stages/${id}/${attempt}`, `${api}/stages/${id}/${attempt}/taskSummary?quantiles=${QUANTILES}`, `${api}/allexecutors`];
}

/** A History Server REST answer as JSON (an empty list when it is missing or too big). */
async function restList<T>(target: HistoryTarget, path: string, maxBytes: number, signal: AbortSignal): Promise<T[]> {
  const answer = await getRaw(new URL(path, target.server), { ...target.headers }, maxBytes, signal);
  if (!answer) return [];
  const parsed = JSON.parse(answer.body.toString('utf8')) as unknown;
  return Array.isArray(parsed) ? parsed as T[] : [];
}

export interface PrefillOptions {
  cache: HistoryPageCache;
  target: HistoryTarget;
  /** The application's proxy prefix (its pages' links start with it). */
  prefix: string;
  /** Whether answers carry the sandbox (spark-ui-proxy.ts decides, as for proxied ones). */
  sandboxed: boolean;
  /** The pages' static links as the proxy rewrites them (spark-ui-static.ts); absent: kept as they are. */
  rewrite?: { from: string; to: string };
  signal: AbortSignal;
}

/** Fills the cache with the run's first pages; how many entries it added. */
export async function prefillHistory(options: PrefillOptions): Promise<number> {
  const { cache, target, prefix, signal } = options;
  const run = { sparkAppId: target.sparkAppId, completed: true };
  const headers = { ...target.headers, 'accept-encoding': 'gzip', 'x-forwarded-context': prefix };
  let added = 0;
  const fetchInto = async (path: string, query = ''): Promise<Answer | undefined> => {
    const key = cacheKey({ method: 'GET', run, prefix, path, query, gzip: true });
    if (!key || cache.has(key)) return undefined;
    const answer = await getRaw(new URL(`${path}${query}`, target.server), headers, cache.maxEntryBytes, signal);
    if (!answer) return undefined;
    forViewer(answer.headers, options.sandboxed);
    if (key.startsWith('static ')) answer.headers['cache-control'] = STATIC_CACHE_CONTROL;
    const rewritten = options.rewrite && isRewritablePage(200, answer.headers) ? rewriteAnswerBody(answer.body, answer.headers['content-encoding'], options.rewrite) : undefined;
    cache.set(key, answer.headers, rewritten ?? answer.body);
    added++;
    return answer;
  };
  // The History Server's paths of the pages, as the proxy maps the same pages (so the keys match).
  const pagePath = (rest: string) => historyPath(rest, target.sparkAppId)!;
  const api = `/api/v1/applications/${encodeURIComponent(target.sparkAppId)}`;
  const jobs = await restList<JobData>(target, `${api}/jobs`, cache.maxEntryBytes, signal);
  const stages = jobs.length > 0 ? await restList<StageData>(target, `${api}/stages`, cache.maxEntryBytes, signal) : [];
  const stagePages = firstStages(jobs, stages);
  const pages = [
    pagePath('/jobs/'), ...firstJobs(jobs).map((id) => `${pagePath('/jobs/job/')}?id=${id}`), pagePath('/stages/'),
    ...stagePages.map((query) => `${pagePath('/stages/stage/')}${query}`),
    // The data a stage page asks for is most of its first open (a 10,000-task stage's summary); the task table's own pages are not guessed.
    ...new Set(stagePages.flatMap((query) => stagePageData(api, query))),
  ];
  const statics = new Set<string>();
  for (const page of pages) {
    const [path, query] = page.split('?') as [string, string | undefined];
    const answer = await fetchInto(path, query === undefined ? '' : `?${query}`);
    if (answer && !path.startsWith('/api/')) for (const file of staticPaths(text(answer), prefix)) statics.add(file);
  }
  for (const file of statics) await fetchInto(file);
  return added;
}
