// Reads which application a Spark event log belongs to from its first lines: Spark writes the
// environment (with every Spark property, ours among them) and the application's start within
// the first few events, before any job runs.
import { APP_NAME_PROPERTY } from '../../webhook/domain/index.js';

export interface RunIdentity {
  sparkAppId: string;
  /** Our appName (APP_NAME_PROPERTY), undefined for a run the service did not submit. */
  appName: string | undefined;
}

/** Spark's name for a log entry's app id: `eventlog_v2_<id>` (rolling) or `<id>[.inprogress]` (one file). */
export function sparkAppIdOfEntry(entry: string): string | undefined {
  if (entry.startsWith('.')) return undefined;
  if (entry.startsWith('eventlog_v2_')) return entry.slice('eventlog_v2_'.length) || undefined;
  const id = entry.replace(/\.inprogress$/, '');
  // A compressed single-file log (`<id>.lz4`, `.zstd`…) cannot be read line by line here.
  return /^[A-Za-z0-9_-]+$/.test(id) ? id : undefined;
}

/**
 * The run's identity from the log's leading lines, once both the environment and the start
 * have been seen; undefined while they have not (read more lines, or give up at the cap).
 */
export function identityFromLines(lines: Iterable<string>): RunIdentity | undefined {
  let appName: string | undefined;
  let sawEnvironment = false;
  for (const line of lines) {
    if (!line.startsWith('{"Event":"SparkListenerEnvironmentUpdate"') && !line.startsWith('{"Event":"SparkListenerApplicationStart"')) continue;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return undefined; // a torn last line: the caller reads on or gives up
    }
    if (event.Event === 'SparkListenerEnvironmentUpdate') {
      const properties = event['Spark Properties'];
      const value = properties && typeof properties === 'object' ? (properties as Record<string, unknown>)[APP_NAME_PROPERTY] : undefined;
      appName = typeof value === 'string' ? value : undefined;
      sawEnvironment = true;
    } else if (sawEnvironment && typeof event['App ID'] === 'string') {
      return { sparkAppId: event['App ID'], appName };
    }
  }
  return undefined;
}
