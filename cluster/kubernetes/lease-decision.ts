// The decisions of leader election, pure, with the clock passed in: client-go's semantics
// (tools/leaderelection). All times are milliseconds of ONE monotonic clock of this process
// (performance.now): never the wall clock, never another machine's time.
//
// Safety rests on two numbers:
// - a follower takes a Lease over only when its resourceVersion has not changed for the
//   lease duration (15 s) since the follower itself first saw that version;
// - a leader leads only while its last successful renewal STARTED less than the renew
//   deadline (10 s) ago.
// The follower saw the renewal after it was written, and it was written after the leader
// sent it; so the leader stops at least `lease - renewDeadline` (5 s) before any follower may
// take over, whatever the network delays, as long as the two clocks run at about one rate.

export interface LeaseTiming {
  /** How long a Lease holds without renewal, for followers (client-go LeaseDuration, 15 s). */
  leaseMs: number;
  /** How long a leader goes on without a successful renewal before it stops (RenewDeadline, 10 s). */
  renewDeadlineMs: number;
  /** Between attempts, to acquire or to renew (RetryPeriod, 2 s). */
  retryMs: number;
}

export const CLIENT_GO_TIMING: LeaseTiming = { leaseMs: 15_000, renewDeadlineMs: 10_000, retryMs: 2_000 };

/** client-go's constraints, so that the leader always stops before a follower may start. */
export function checkTiming(timing: LeaseTiming): void {
  if (!(timing.leaseMs > timing.renewDeadlineMs)) throw new Error('the lease duration must be longer than the renew deadline');
  if (!(timing.renewDeadlineMs > timing.retryMs)) throw new Error('the renew deadline must be longer than the retry period');
  if (!(timing.retryMs > 0)) throw new Error('the retry period must be positive');
}

/** Durations derived from one lease duration in the proportions of client-go's defaults (15 : 10 : 2). */
export function timingForLease(leaseMs: number): LeaseTiming {
  return { leaseMs, renewDeadlineMs: Math.round(leaseMs * 2 / 3), retryMs: Math.max(50, Math.round(leaseMs * 2 / 15)) };
}

/** What this replica last saw of the Lease, and when (its own clock). */
export interface Observation {
  version: string;
  holder: string;
  /** When this replica first saw this version. */
  at: number;
}

export interface LeaseView {
  version: string;
  holder?: string;
  durationSeconds?: number;
}

export type LeaseAction =
  | 'create' // no Lease yet
  | 'renew' // ours
  | 'take' // free (released) or expired
  | 'wait'; // another holder's, still valid

/** What to do with the Lease as just read, and the observation to keep. */
export function decide(lease: LeaseView | undefined, previous: Observation | undefined, identity: string, now: number, timing: LeaseTiming): { action: LeaseAction; observed?: Observation; expiresInMs?: number } {
  if (!lease) return { action: 'create' };
  const holder = lease.holder ?? '';
  const observed = previous?.version === lease.version ? previous : { version: lease.version, holder, at: now };
  if (holder === identity) return { action: 'renew', observed };
  if (holder === '') return { action: 'take', observed };
  // The Lease's own duration, as its holder wrote it (client-go reads leaseDurationSeconds too).
  const duration = lease.durationSeconds !== undefined && lease.durationSeconds > 0 ? lease.durationSeconds * 1000 : timing.leaseMs;
  const expiresInMs = observed.at + duration - now;
  return expiresInMs <= 0 ? { action: 'take', observed } : { action: 'wait', observed, expiresInMs };
}

/** Whether a leader whose last successful renewal started at `renewStartedAt` may still act (write). */
export function mayLead(renewStartedAt: number | undefined, now: number, timing: LeaseTiming): boolean {
  return renewStartedAt !== undefined && now - renewStartedAt < timing.renewDeadlineMs;
}

/**
 * How long the next call may take: a leader's must end before its renew deadline (so it
 * learns of the failure while it can still step down in time); a candidate's is bounded by
 * the renew deadline too (a hung call never stalls the loop).
 */
export function callBudget(renewStartedAt: number | undefined, leading: boolean, now: number, timing: LeaseTiming): number {
  if (!leading || renewStartedAt === undefined) return timing.renewDeadlineMs;
  return Math.max(0, renewStartedAt + timing.renewDeadlineMs - now);
}

/** client-go waits retryPeriod × [1, 1.2) between a candidate's attempts, so candidates do not move in step. */
export function retryDelay(timing: LeaseTiming, random: () => number = Math.random): number {
  return Math.round(timing.retryMs * (1 + 0.2 * random()));
}
