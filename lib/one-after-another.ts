// Calls that run one after another: each starts once the call before it has settled, and
// resolves or rejects with its own result. The webhook's certificate checks use it (their
// writes must not interleave: cli/webhook-service.ts), and so do the served certificate's
// re-reads (webhook/server/certificate-watcher.ts: a re-read under way may have begun before the
// caller's latest write, so joining it could miss that write). SerialCheck (serial-check.ts)
// is for the other kind of work: pokes folded into one more run, no result to return.

export interface OneAfterAnother<A extends unknown[], T> {
  (...args: A): Promise<T>;
  /** Resolves once every call made so far has settled (failed ones too). */
  idle(): Promise<void>;
}

/** `run`, made to run one call at a time in the order of the calls; a failed call does not stop the next. */
export function oneAfterAnother<A extends unknown[], T>(run: (...args: A) => Promise<T>): OneAfterAnother<A, T> {
  let last: Promise<unknown> = Promise.resolve();
  const call = (...args: A): Promise<T> => {
    const result = last.then(() => run(...args));
    last = result.catch(() => undefined);
    return result;
  };
  return Object.assign(call, { idle: () => last.then(() => undefined) });
}
