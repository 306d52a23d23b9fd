// Kubernetes mode: a session may be used through several API replicas (one took it over from
// another, connect/sessions.ts adopt), and each culls the idle sessions it holds. So that a
// replica whose client moved away does not stop a session still in use elsewhere, every replica
// writes the session's last activity onto its application (a label, at most every quarter of the
// idle time) and reads it back through the cluster's read side before culling: all replicas then
// decide from the same value, and the stop they may both ask for is one spec request (idempotent).
import { CONNECT_ACTIVITY_LABEL } from '../domain/labels.js';

export { CONNECT_ACTIVITY_LABEL };

/** The application's shared last activity: how it is written and read (absent: one endpoint, local mode). */
export interface SharedActivity {
  mark: (appName: string, at: number) => Promise<unknown>;
  /** The last activity another replica wrote (ms since the epoch), undefined if none. */
  read: (appName: string) => Promise<number | undefined>;
}

/** The label's value as the time it names, undefined if absent or not a time. */
export function activityOf(labels: Record<string, string> | undefined): number | undefined {
  const at = Number(labels?.[CONNECT_ACTIVITY_LABEL]);
  return Number.isFinite(at) && at > 0 ? at : undefined;
}

/** How stale a written activity may be: a replica writes it at most this often, so a reader adds it (never culls early). */
export const markEvery = (idleMs: number) => Math.max(1000, idleMs / 4);
