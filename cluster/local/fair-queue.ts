// Local mode's queue of applications waiting for cores, fair between submitters (API keys):
// first come first served *within* one submitter, but the next turn goes to the submitter who
// holds the fewest cores right now, ties to whoever was served least recently. So a key that
// queued 10,000 applications gets every other turn, not the next 10,000: another key's
// submission waits only for cores to free, never behind the flood.
// Pure bookkeeping: the scheduler (core-scheduler.ts) asks for the head and says what started.
//
// Turns alone do not stop one key from holding every core for as long as its applications run
// (the queue cannot take cores back). So a key also has a share: it holds at most
// `keyCoreLimit` cores at once, its kernels' and its batch applications' together, and an
// application asking for more runs with the share.
// The anonymous submitter (authentication off: one person) has none.

/** The submitter of anonymous applications (authentication off): one submitter like any other. */
const ANONYMOUS = '';

interface Entry { appName: string; order: string }

export class FairQueue {
  /** Waiting applications per submitter, oldest first; a submitter with none is not kept. */
  private readonly waiting = new Map<string, Entry[]>();
  private readonly submitterOf = new Map<string, string>();
  /** When each submitter was last served (a counter; one number per key ever seen); absent: never. */
  private readonly servedAt = new Map<string, number>();
  private turns = 0;

  get size(): number {
    return this.submitterOf.size;
  }

  has(appName: string): boolean {
    return this.submitterOf.has(appName);
  }

  /**
   * Queues `appName` of `submitter` behind its own earlier ones. `order` (its creation time)
   * places it among them when it comes back (requeue, restart); a new one simply goes last.
   */
  push(appName: string, submitter: string | null, order: string): void {
    if (this.has(appName)) return;
    const who = submitter ?? ANONYMOUS;
    let list = this.waiting.get(who);
    if (!list) {
      list = [];
      this.waiting.set(who, list);
    }
    const at = list.findIndex((entry) => entry.order > order);
    list.splice(at < 0 ? list.length : at, 0, { appName, order });
    this.submitterOf.set(appName, who);
  }

  /**
   * Whose turn it is: the oldest application of the submitter holding the fewest cores now
   * (`usage`), ties to the one served least recently, among submitters whose oldest `mayStart`
   * (within its share). Undefined when nothing waits that may start.
   */
  head(usage: (submitter: string | null) => number, mayStart: (submitter: string | null, appName: string) => boolean = () => true): string | undefined {
    let best: { held: number; served: number; appName: string } | undefined;
    for (const [who, list] of this.waiting) {
      const submitter = who === ANONYMOUS ? null : who;
      if (!mayStart(submitter, list[0]!.appName)) continue; // at its share: the others' turn
      const held = usage(submitter);
      const served = this.servedAt.get(who) ?? 0;
      if (!best || held < best.held || (held === best.held && served < best.served)) best = { held, served, appName: list[0]!.appName };
    }
    return best?.appName;
  }

  /** Every waiting application, each submitter's oldest first (for those that skip the queue). */
  all(): string[] {
    return [...this.waiting.values()].flatMap((list) => list.map((entry) => entry.appName));
  }

  /** Takes `appName` out; `served`: it was started, so its submitter's turn is used. */
  remove(appName: string, served = false): boolean {
    const who = this.submitterOf.get(appName);
    if (who === undefined) return false;
    this.submitterOf.delete(appName);
    const list = this.waiting.get(who)!;
    list.splice(list.findIndex((entry) => entry.appName === appName), 1);
    if (served) this.servedAt.set(who, ++this.turns);
    if (list.length === 0) this.waiting.delete(who);
    return true;
  }
}

/** Cores one key may hold at once (kernels included): `share` of the machine's, at least one. Undefined: no share (0 or 1). */
export function keyCoreLimit(cores: number, share: number): number | undefined {
  if (!(share > 0 && share < 1)) return undefined;
  return Math.max(1, Math.floor(cores * share));
}

/**
 * Cores an application of `submitter` starts with, given what it asks for and what its key holds
 * now: at most the key's share (`limit`); undefined while the key's share is used up.
 */
export function coresWithinShare(submitter: string | null, demand: number, held: number, limit: number | undefined): number | undefined {
  if (submitter === null || limit === undefined) return demand;
  const cores = Math.min(demand, limit);
  return held + cores <= limit ? cores : undefined;
}
