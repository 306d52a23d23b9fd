// An ended application's Spark UI, from the history: which History Server, which of its paths.
import type { IncomingMessage } from 'node:http';
import { type Cluster, isTerminal } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import { historyPath, isRunList } from './history-paths.js';

/** `ownRun`: the path is the run's own entry, to answer as the list of every run (isRunList). */
export type HistoryRequest = { target: URL; path: string; headers?: Readonly<Record<string, string>>; ownRun?: true } | { refused: string } | undefined;

/** The run's own entry in the History Server's list is a few hundred bytes. */
const RUN_INFO_BYTES = 64 * 1024;

/**
 * Where to send a request for an ended application's UI (undefined: it has no history). Sets
 * X-Forwarded-Context, from which the History Server writes its links under our prefix.
 */
export async function historyRequest(
  opts: { cluster: Cluster; history?: SparkHistory },
  appName: string, rest: string, prefix: string, raw: IncomingMessage,
): Promise<HistoryRequest> {
  if (!opts.history) return undefined;
  const record = await opts.cluster.get(appName);
  if (!record || !isTerminal(record.state)) return undefined;
  const abort = new AbortController();
  raw.once('close', () => abort.abort());
  const found = await opts.history.target(appName, abort.signal);
  if (!found) return undefined;
  const { headers } = found;
  if (isRunList(rest)) return { target: found.server, path: `/api/v1/applications/${found.sparkAppId}`, headers, ownRun: true };
  const path = historyPath(rest, found.sparkAppId);
  if (!path) return { refused: `That page is not part of the run of ${appName}.` };
  raw.headers['x-forwarded-context'] = prefix;
  return { target: found.server, path, headers };
}

/** The list of every run as an application's link shows it: its own run alone; undefined when the History Server did not say. */
export async function ownRunList(target: URL, path: string, signal: AbortSignal, headers?: Readonly<Record<string, string>>): Promise<unknown[] | undefined> {
  const response = await fetch(new URL(path, target), { headers, signal }).catch(() => undefined);
  if (!response?.ok || Number(response.headers.get('content-length') ?? 0) > RUN_INFO_BYTES) {
    await response?.body?.cancel();
    return undefined;
  }
  const text = await response.text();
  if (text.length > RUN_INFO_BYTES) return undefined;
  try {
    return [JSON.parse(text) as unknown];
  } catch {
    return undefined;
  }
}
