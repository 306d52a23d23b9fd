// Schedules: when a tick falls due and what it does. Pure functions of (schedule, last tick,
// now, active runs), so local mode's loop, the Kubernetes controller and the unit tests share
// one truth. Cron parsing and time zones (DST included) are croner's, not ours.
import { createHash } from 'node:crypto';
import { Cron } from 'croner';

export type ConcurrencyPolicy = 'Allow' | 'Forbid' | 'Replace';

/** What the decision reads of a schedule. */
export interface ScheduleTiming {
  /** Cron: 5 fields (minute precision) or 6 (seconds first). */
  schedule: string;
  /** IANA time zone the cron is read in; default UTC. */
  timeZone?: string;
  concurrencyPolicy?: ConcurrencyPolicy;
  suspend?: boolean;
  /** A tick later than this by more than these seconds is missed, not run; undefined: no limit. */
  startingDeadlineSeconds?: number;
}

/**
 * A run of a schedule is labelled with the schedule's name and its tick (not reserved keys: the
 * record shows them; but refused in any submission, so only the scheduler sets them).
 */
export const SCHEDULE_LABEL = 'schedule.submission-service.io/name';
export const SCHEDULE_TICK_LABEL = 'schedule.submission-service.io/tick';
export const isScheduleLabel = (key: string): boolean => key.startsWith('schedule.submission-service.io/');

/** Missed ticks are counted up to this many (the count is for people; the decision needs only the latest). */
const MAX_COUNTED = 100;

function cron(timing: ScheduleTiming): Cron {
  return new Cron(timing.schedule, { timezone: timing.timeZone || 'UTC', mode: '5-or-6-parts', paused: true });
}

/** Why a cron and time zone cannot be used (a sentence naming the field), or undefined. */
export function scheduleProblem(timing: ScheduleTiming): { field: string; message: string } | undefined {
  if (timing.timeZone) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timing.timeZone });
    } catch {
      return { field: 'timeZone', message: `field "timeZone": "${timing.timeZone}" is not an IANA time zone (such as Europe/Berlin or UTC)` };
    }
  }
  let next: Date | null;
  try {
    next = cron(timing).nextRun(new Date());
  } catch (error) {
    return { field: 'schedule', message: `field "schedule": ${(error as Error).message.replace(/^CronPattern: /, '')} (5 fields, minute first, or 6 with seconds first)` };
  }
  if (!next) return { field: 'schedule', message: `field "schedule": "${timing.schedule}" never falls due` };
  return undefined;
}

/** The first tick strictly after `after`; null when there is none. */
export function nextTick(timing: ScheduleTiming, after: Date): Date | null {
  return cron(timing).nextRun(after);
}

/** The latest tick at or before `at`; null when there is none. */
export function latestTick(timing: ScheduleTiming, at: Date): Date | null {
  return cron(timing).previousRuns(1, new Date(at.getTime() + 1))[0] ?? null;
}

export interface TickInput {
  timing: ScheduleTiming;
  /** The last tick acted upon (run, skipped or missed); a new schedule: its creation time. */
  since: Date;
  now: Date;
  /** The schedule's runs that have not ended, oldest first. */
  activeRuns: string[];
}

export type TickDecision =
  /** Nothing due (or suspended): wake again at `next`. */
  | { action: 'wait'; next: Date | null }
  /** Run `tick` (after stopping `stop`, under Replace). `missed`: older due ticks dropped. */
  | { action: 'run'; tick: Date; stop: string[]; missed: number; next: Date | null }
  /** `tick` is settled without a run: past its deadline, or Forbid while a run is active. */
  | { action: 'skip'; tick: Date; reason: 'deadline' | 'forbid'; missed: number; next: Date | null };

/**
 * Which tick is due and what to do with it. As Kubernetes' CronJob: of the ticks since the last
 * one acted upon, only the latest counts (the service was down, or the schedule suspended: one
 * run, not a burst); it runs if it is within startingDeadlineSeconds of now. Suspended: nothing,
 * and the ticks wait (on resume they follow the deadline like any missed tick).
 */
export function decideTick({ timing, since, now, activeRuns }: TickInput): TickDecision {
  const next = nextTick(timing, now);
  if (timing.suspend) return { action: 'wait', next };
  const due = latestTick(timing, now);
  if (!due || due.getTime() <= since.getTime()) return { action: 'wait', next };
  const missed = countTicks(timing, since, due);
  const late = (now.getTime() - due.getTime()) / 1000;
  if (timing.startingDeadlineSeconds !== undefined && late > timing.startingDeadlineSeconds) {
    return { action: 'skip', tick: due, reason: 'deadline', missed, next };
  }
  const policy = timing.concurrencyPolicy ?? 'Allow';
  if (policy === 'Forbid' && activeRuns.length > 0) return { action: 'skip', tick: due, reason: 'forbid', missed, next };
  return { action: 'run', tick: due, stop: policy === 'Replace' ? [...activeRuns] : [], missed, next };
}

/** Ticks strictly between `since` and `due` (capped at MAX_COUNTED). */
function countTicks(timing: ScheduleTiming, since: Date, due: Date): number {
  const runs = cron(timing).nextRuns(MAX_COUNTED, since);
  return runs.filter((tick) => tick.getTime() < due.getTime()).length;
}

/** `20261127T230500Z`: a tick as a label value (no colons). */
export function tickLabelValue(tick: Date): string {
  return tick.toISOString().replace(/\.\d{3}Z$/, 'Z').replaceAll('-', '').replaceAll(':', '');
}

/** Digest characters in a run's name: ~52 bits, so no schedule name can be searched out that gives another schedule's names. */
export const RUN_DIGEST_CHARS = 10;
/** Names a tick tries, in order, when the ones before are held by applications that are not its run. */
export const RUN_NAME_CANDIDATES = 4;
const POD_NAME_LIMIT = 63;
const BASE36 = 'abcdefghijklmnopqrstuvwxyz0123456789';

/**
 * The run of `schedule` (created by `owner`) at `tick`, name number `candidate`: the appName
 * shape of every application (`<jobName>-<yyyymmdd>-<hhmmss>-<10 characters>`, UTC; a job name
 * too long for that is cut), the characters derived from the owner, the schedule's name and the
 * candidate instead of drawn. The same tick always gives the same names on every replica, so a
 * tick never makes two runs: a second create meets the first (409), whichever process makes it.
 * A name held by an application that is not this tick's run (isRunOfTick) moves the tick to the
 * next candidate: another key cannot take a tick by holding its name first.
 */
export function scheduledRunName(jobName: string, scheduleName: string, tick: Date, owner: string | null = null, candidate = 0): string {
  const iso = tick.toISOString();
  const date = iso.slice(0, 10).replaceAll('-', '');
  const time = iso.slice(11, 19).replaceAll(':', '');
  const digest = createHash('sha256').update(JSON.stringify([owner ?? '', scheduleName, candidate])).digest();
  let suffix = '';
  for (let i = 0; suffix.length < RUN_DIGEST_CHARS; i++) suffix += BASE36[digest[i] % 36];
  const room = POD_NAME_LIMIT - `-${date}-${time}-${suffix}`.length;
  const job = jobName.length > room ? jobName.slice(0, room).replace(/-+$/, '') : jobName;
  return `${job}-${date}-${time}-${suffix}`;
}

/**
 * Whether `app` is provably the run of `schedule` at `tick`: labelled with the schedule's name
 * and the tick (labels only the scheduler sets: submit-api/service-labels.ts refuses them in a
 * submission) and submitted by the schedule's owner. Anything else holding the tick's name is a
 * foreign application, never taken for the tick's run.
 */
export function isRunOfTick(app: { labels: Record<string, string>; submittedBy: string | null }, schedule: { name: string; owner: string | null }, tick: Date): boolean {
  return app.labels[SCHEDULE_LABEL] === schedule.name && app.labels[SCHEDULE_TICK_LABEL] === tickLabelValue(tick)
    && (app.submittedBy ?? null) === (schedule.owner ?? null);
}

export interface EndedRun { appName: string; state: string; createdAt: string }

/**
 * Ended runs beyond what the schedule keeps, to delete: the newest `successful` COMPLETED runs
 * and the newest `failed` others (FAILED, KILLED, UNKNOWN) stay. Runs not ended are never named.
 */
export function runsBeyondHistory(runs: EndedRun[], limits: { successful: number; failed: number }): string[] {
  const newestFirst = [...runs].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  const ended = (state: string) => ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'].includes(state);
  const completed = newestFirst.filter((r) => r.state === 'COMPLETED');
  const failed = newestFirst.filter((r) => r.state !== 'COMPLETED' && ended(r.state));
  return [...completed.slice(limits.successful), ...failed.slice(limits.failed)].map((r) => r.appName);
}
