// Which Spark UI an application's one link opens: the running driver's own, or its run's
// history once the driver has ended (the dashboard's proxy serves both under the same path).
import { sparkUiPath } from './spark-properties.js';

export type SparkUiState = 'live' | 'history' | 'unavailable';

export interface SparkUiView {
  state: SparkUiState;
  /** The one link of the application's Spark UI (the dashboard's), live or from the history; null when neither. */
  url: string | null;
  /** When the history of this run is removed (retention); null while it runs, or when it is kept for ever or not at all. */
  expiresAt: string | null;
}

/** What opening an application's Spark UI gives now: the driver's own UI, its history, or nothing. */
export function sparkUiView(
  app: { appName: string; state: string; endedAt: string | null },
  history: { available: boolean; retentionMs: number | undefined },
): SparkUiView {
  const url = `${sparkUiPath(app.appName)}/`;
  if (app.state === 'RUNNING') return { state: 'live', url, expiresAt: null };
  if (app.endedAt === null || !history.available) return { state: 'unavailable', url: null, expiresAt: null };
  const expiresAt = history.retentionMs === undefined ? null : new Date(Date.parse(app.endedAt) + history.retentionMs).toISOString();
  return { state: 'history', url, expiresAt };
}
