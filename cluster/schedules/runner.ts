// The scheduler loop: wakes at the next tick of any schedule, asks the pure decision
// (domain/schedule.ts) what each schedule's due tick does, does it through the one submission
// path (cluster/submit-application.ts) as the schedule's owner, and records the tick. Both
// modes run it: local mode always, Kubernetes mode on the replica holding the Lease
// (cluster/kubernetes/schedule-reconciler.ts). The clock and the timers are injected, so the
// unit tests drive it through days in milliseconds.
//
// A tick never makes two runs: its run's name derives from the schedule, its owner and the
// tick, so a second create (this loop after a crash between the run and the status write, or
// another replica after a leader change) meets the first one (409) and is taken as done, but
// only when that application is provably the tick's run (its scheduler-only labels and its
// owner): a name held by anything else moves the tick to its next name, and is reported.
import {
  decideTick, isRunOfTick, RUN_NAME_CANDIDATES, runsBeyondHistory, SCHEDULE_LABEL, SCHEDULE_TICK_LABEL, scheduledRunName, tickLabelValue, type TickDecision,
} from '../../domain/index.js';
import { type AppRecord, type Cluster, ConflictError, isTerminal } from '../cluster.js';
import { submitApplication } from '../submit-application.js';
import type { ScheduleStore, StoredSchedule } from './schedule-store.js';

export interface SchedulerClock {
  now(): Date;
  setTimer(run: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

export const realClock: SchedulerClock = {
  now: () => new Date(),
  setTimer: (run, ms) => { const timer = setTimeout(run, ms); timer.unref(); return timer; },
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * Whether a tick may submit as the schedule's owner key now: the per-key limits an HTTP
 * submission meets (submit-api/fair-share.ts), asked before each run. `done` is told what the
 * run created (or nothing), as the API's own submissions tell it.
 */
export type TickPermit = { ok: true; done: (created?: AppRecord) => void } | { ok: false; status: number; message: string };
export type TickAdmission = (ownerKeyId: string | null) => TickPermit;

export type SchedulerLog = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

export interface ScheduleRunnerOptions {
  store: ScheduleStore;
  cluster: Pick<Cluster, 'createDriver' | 'get' | 'list' | 'stop' | 'delete'>;
  clock?: SchedulerClock;
  log?: SchedulerLog;
  /** Checked before every run and write: false once this replica no longer leads (default: always true). */
  mayWrite?: () => boolean;
  /** Schedules are read again at least this often (changes made by other replicas; default 30 s). */
  maxSleepMs?: number;
  /** The owner key's limits, asked before each run (the API's, once it is built: `admitTicksWith`); absent: none. */
  admit?: TickAdmission;
}

export class ScheduleRunner {
  private timer?: unknown;
  private active = false;
  private pass?: Promise<void>;
  private again = false;

  constructor(private readonly options: ScheduleRunnerOptions) {}

  private get clock() { return this.options.clock ?? realClock; }

  /** From now on each run is first admitted by `admit` (the API's per-key limits, built after this loop). */
  admitTicksWith(admit: TickAdmission): void {
    this.options.admit = admit;
  }
  private get mayWrite() { return this.options.mayWrite?.() ?? true; }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.wake();
  }

  /** Stops waking; resolves once a pass in flight has ended. */
  async stop(): Promise<void> {
    this.active = false;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    await this.pass;
  }

  /** A schedule changed (or time moved): a pass now, or right after the one in flight. */
  wake(): void {
    if (!this.active) return;
    if (this.pass) { this.again = true; return; }
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    this.pass = this.runOnce().then((next) => this.sleepUntil(next), (error: unknown) => {
      this.log('error', `scheduler pass failed: ${(error as Error)?.message ?? String(error)}`);
      this.sleepUntil(null);
    }).finally(() => {
      this.pass = undefined;
      if (this.again) { this.again = false; this.wake(); }
    });
  }

  /** Resolves once the pass in flight (if any) has ended (tests). */
  async idle(): Promise<void> {
    while (this.pass) await this.pass;
  }

  /** Settles every schedule's due tick; resolves to the earliest next tick (null: none). */
  async runOnce(): Promise<Date | null> {
    let earliest: Date | null = null;
    for (const schedule of await this.options.store.list()) {
      if (!this.mayWrite) return null;
      let next: Date | null = null;
      try {
        next = await this.settle(schedule);
      } catch (error) {
        // This schedule's tick stays due: the next pass tries it again.
        this.log('warn', `schedule ${schedule.spec.name}: ${(error as Error)?.message ?? String(error)}`, { schedule: schedule.spec.name });
      }
      if (next && (!earliest || next < earliest)) earliest = next;
    }
    return earliest;
  }

  private sleepUntil(next: Date | null): void {
    if (!this.active) return;
    const cap = this.options.maxSleepMs ?? 30_000;
    const ms = next ? Math.min(cap, Math.max(0, next.getTime() - this.clock.now().getTime())) : cap;
    this.timer = this.clock.setTimer(() => { this.timer = undefined; this.wake(); }, ms);
  }

  /** One schedule's due tick, if any; returns its next tick. */
  private async settle(schedule: StoredSchedule): Promise<Date | null> {
    const { spec } = schedule;
    const runs = await this.runsOf(schedule);
    const activeRuns = runs.filter((r) => !isTerminal(r.state)).sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map((r) => r.appName);
    const since = new Date(schedule.status.lastScheduleTime ?? schedule.createdAt);
    const decision = decideTick({ timing: spec, since, now: this.clock.now(), activeRuns });
    if (decision.action === 'wait') return decision.next;
    if (!this.mayWrite) return null;
    const outcome = decision.action === 'skip' ? skipOutcome(decision, activeRuns) : await this.run(schedule, decision);
    if (outcome === undefined) return decision.next; // not this replica's to record any more
    await this.options.store.setStatus(spec.name, {
      lastScheduleTime: decision.tick.toISOString(),
      lastRunName: outcome.runName ?? schedule.status.lastRunName,
      lastOutcome: outcome.text,
    });
    this.log(outcome.warn ? 'warn' : 'info', `schedule ${spec.name}: ${outcome.text}`, { schedule: spec.name, tick: decision.tick.toISOString() });
    await this.prune(schedule, runs);
    return decision.next;
  }

  /** The schedule's runs: labelled with its name and submitted by its owner (a label alone is not proof). */
  private async runsOf(schedule: StoredSchedule): Promise<AppRecord[]> {
    const page = await this.options.cluster.list({ labels: { [SCHEDULE_LABEL]: schedule.spec.name }, limit: 500 });
    return page.items.filter((r) => r.submittedBy === schedule.createdBy);
  }

  private async run(schedule: StoredSchedule, decision: Extract<TickDecision, { action: 'run' }>): Promise<Outcome | undefined> {
    for (const appName of decision.stop) {
      if (!this.mayWrite) return undefined;
      await this.options.cluster.stop(appName, `schedule ${schedule.spec.name} replaced it with its next run (concurrencyPolicy Replace)`);
    }
    if (!this.mayWrite) return undefined;
    const missed = decision.missed > 0 ? ` (${decision.missed} earlier tick(s) missed)` : '';
    const replaced = decision.stop.length > 0 ? `, after stopping ${decision.stop.join(', ')} (Replace)` : '';
    // As the owner key, within its limits, exactly like its HTTP submissions: a schedule is no way around them.
    const permit = this.options.admit?.(schedule.createdBy ?? null) ?? { ok: true, done: () => undefined };
    if (!permit.ok) return { text: `tick ${decision.tick.toISOString()} refused (${permit.status}): ${permit.message}` };
    let made: TickSubmission | undefined;
    try {
      made = await this.submitTick(schedule, decision.tick);
    } catch (error) {
      permit.done();
      throw error;
    }
    permit.done(made?.created);
    if (made === undefined) return undefined; // not this replica's to record any more
    const taken = made.foreign.length > 0 ? ` (${made.foreign.map((name) => `the name ${name}`).join(', ')} held by another key's application: reported)` : '';
    const warn = made.foreign.length > 0;
    if (made.runName === undefined) return { text: `${made.text}${taken}`, warn };
    return { runName: made.runName, text: `${made.text}${made.created ? replaced : ''}${taken}${missed}`, warn };
  }

  /**
   * Creates the tick's run under the first of its names (scheduledRunName) that is free or is
   * already this tick's run (made before: a crash, a leader change). A name held by any other
   * application is passed over, said in the log and in the outcome: whoever made it, it does
   * not settle this tick. Every replica tries the same names in the same order.
   */
  private async submitTick(schedule: StoredSchedule, tick: Date): Promise<TickSubmission | undefined> {
    const { spec } = schedule;
    const owner = schedule.createdBy ?? null;
    const labels = { ...spec.labels, [SCHEDULE_LABEL]: spec.name, [SCHEDULE_TICK_LABEL]: tickLabelValue(tick) };
    const foreign: string[] = [];
    for (let candidate = 0; candidate < RUN_NAME_CANDIDATES; candidate++) {
      if (!this.mayWrite) return undefined;
      const appName = scheduledRunName(spec.jobName, spec.name, tick, owner, candidate);
      try {
        const result = await submitApplication(this.options.cluster, {
          appName, jobName: spec.jobName, configTemplateName: spec.configTemplateName || undefined, configOverrides: spec.configOverrides, labels,
          submittedBy: owner ?? undefined,
        }, { dryRun: false });
        if (!result.ok) return { foreign, text: `tick ${tick.toISOString()} refused (${result.status}): ${result.body.message}` };
        return { foreign, runName: appName, created: result.record, text: `tick ${tick.toISOString()} ran ${appName}` };
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
      }
      const holder = await this.options.cluster.get(appName);
      // A 409 for a name this replica cannot read yet: the next pass looks again (never a second run).
      if (!holder) throw new Error(`the name ${appName} is taken by an application not visible yet; the tick is tried again`);
      if (isRunOfTick(holder, { name: spec.name, owner }, tick)) {
        return { foreign, runName: appName, text: `tick ${tick.toISOString()} ran ${appName} (made before: the name settled it)` };
      }
      foreign.push(appName);
      this.log('warn', `schedule ${spec.name}: tick ${tick.toISOString()}: the name ${appName} is held by ${holder.appName}, not this schedule's run (submitted by ${holder.submittedBy ?? 'no key'}); the tick takes its next name`,
        { schedule: spec.name, tick: tick.toISOString(), holder: holder.appName, holderSubmittedBy: holder.submittedBy });
    }
    return { foreign, text: `tick ${tick.toISOString()} not run: all its ${RUN_NAME_CANDIDATES} names are held by other applications` };
  }

  /** Ended runs beyond the schedule's history limits are deleted. */
  private async prune(schedule: StoredSchedule, runs: AppRecord[]): Promise<void> {
    const limits = { successful: schedule.spec.successfulRunsHistoryLimit ?? 3, failed: schedule.spec.failedRunsHistoryLimit ?? 1 };
    for (const appName of runsBeyondHistory(runs, limits)) {
      if (!this.mayWrite) return;
      await this.options.cluster.delete(appName);
    }
  }

  private log(level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void {
    this.options.log?.(level, message, fields);
  }
}

/** `warn`: the tick met something to report (its names held by other keys' applications). */
interface Outcome { runName?: string; text: string; warn?: boolean }
/** What a tick's submission did: its run (made now, or before), and the names it found held by foreign applications. */
interface TickSubmission extends Outcome { created?: AppRecord; foreign: string[] }

function skipOutcome(decision: Extract<TickDecision, { action: 'skip' }>, activeRuns: string[]): Outcome {
  const tick = decision.tick.toISOString();
  return decision.reason === 'forbid'
    ? { text: `tick ${tick} skipped: ${activeRuns.join(', ')} still running (Forbid)` }
    : { text: `tick ${tick} missed: found after its startingDeadlineSeconds` };
}
