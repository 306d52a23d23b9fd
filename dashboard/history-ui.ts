// An ended application's Spark UI, from the history: which History Server, which of its paths.
import type { IncomingMessage } from 'node:http';
import { type Cluster, isTerminal } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import { historyPath } from './history-paths.js';

export type HistoryRequest = { target: URL; path: string } | { refused: string } | undefined;

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
  const path = historyPath(rest, found.sparkAppId);
  if (!path) return { refused: `That page is not part of the run of ${appName}.` };
  raw.headers['x-forwarded-context'] = prefix;
  return { target: found.server, path };
}
