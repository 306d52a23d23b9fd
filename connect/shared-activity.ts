// Kubernetes mode: a session may be used through several API replicas (one took it over from
// another, connect/session-adoption.ts), and each culls the idle sessions it holds. So that a
// replica whose client moved away does not stop a session still in use elsewhere, every replica
// writes the session's last activity onto its application (a label, at most every quarter of the
// idle time) and reads it back through the cluster's read side before culling: all replicas then
// decide from the same value, and the stop they may both ask for is one spec request (idempotent).
// The same label tells every replica's orphan sweep (connect/orphan-sweep.ts) that a session is
// still in use somewhere, and that a warm pool's server (no session yet) still has its pool: the
// pool's replica writes it on each of its servers as long as it lives, at the same pace.
import type { FastifyBaseLogger } from 'fastify';
import { CONNECT_ACTIVITY_LABEL } from '../domain/labels.js';
import type { ConnectSession } from './session.js';

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

/**
 * How long after its written activity a session nobody here holds counts as an orphan. A live
 * holder writes a call's activity at most markEvery late, and while a call stays open its cull
 * tick (at most every markEvery) writes it again; its own idle culling stops the session an idle
 * time after the last call. Past idle + 2 × markEvery, then, no live replica has used the session
 * for an idle time: either its holder died, or the holder's own culling is about to stop it too.
 */
export const orphanAfter = (idleMs: number) => idleMs + 2 * markEvery(idleMs);

/** This endpoint's writes and reads of its sessions' shared activity (nothing without shared activity). */
export class ActivityBook {
  /** The servers kept for no session (the warm pool's): when this endpoint last wrote each one's activity. */
  private readonly kept = new Map<string, number>();

  constructor(private readonly activity: SharedActivity | undefined, private readonly idleMs: number, private readonly log: FastifyBaseLogger) {}

  /**
   * Writes `now` as the activity of the applications this endpoint keeps for no session yet (its
   * warm pool's servers), each at most every markEvery: called on every cull tick (at most
   * markEvery apart), so no write is more than twice that old while this endpoint lives, well
   * within orphanAfter. One that left (handed out, stopped) is no longer written by this: a
   * session's holder writes its own. A failed write is tried again at the next tick.
   */
  keep(appNames: readonly string[], now: number): void {
    const { activity } = this;
    if (!activity) return;
    const current = new Set(appNames);
    for (const appName of this.kept.keys()) if (!current.has(appName)) this.kept.delete(appName);
    for (const appName of current) {
      const marked = this.kept.get(appName);
      if (marked !== undefined && now - marked < markEvery(this.idleMs)) continue;
      this.kept.set(appName, now);
      activity.mark(appName, now).catch((error: Error) => {
        if (this.kept.get(appName) === now) this.kept.delete(appName);
        this.log.warn({ err: error, appName }, 'could not record a Spark Connect warm pool server\'s activity');
      });
    }
  }

  /** Writes the session's activity onto its application for the other replicas (at most every markEvery unless `force`). */
  share(session: ConnectSession, force = false): void {
    const { activity } = this;
    if (!activity || !session.appName || (!force && session.markedAt !== undefined && session.lastActivity - session.markedAt < markEvery(this.idleMs))) return;
    session.markedAt = session.lastActivity;
    activity.mark(session.appName, session.lastActivity)
      .catch((error: Error) => this.log.warn({ err: error, appName: session.appName }, 'could not record a Spark Connect session\'s activity'));
  }

  /** Moves the session's last activity up to what another replica wrote (plus its possible lateness). */
  async catchUp(session: ConnectSession): Promise<void> {
    const elsewhere = this.activity && session.appName && await this.activity.read(session.appName);
    if (elsewhere) session.lastActivity = Math.max(session.lastActivity, elsewhere + markEvery(this.idleMs));
  }
}
