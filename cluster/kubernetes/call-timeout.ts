// A timeout for one apiserver call. client-node 1.x sets none on ordinary calls: a call on a
// connection that stopped answering (a hung apiserver, a dead proxy, a half-open TCP
// connection) waits for ever. The controller's calls must not (a leader must know it failed
// to renew before its deadline), so they pass these options: the request is aborted after
// `ms`, and the call rejects.
import { type ConfigurationOptions, Observable } from '@kubernetes/client-node';

/** What client-node's object-style calls (`api.readNamespacedLease({ … }, options)`) take: their middleware returns its Observable. */
export type CallOptions = ConfigurationOptions;

/** An aborted call, told apart from an apiserver's answer. */
export class CallTimeoutError extends Error {
  constructor(readonly what: string, readonly ms: number) {
    super(`${what} did not answer within ${ms} ms`);
  }
}

/** Aborts after `ms`, or when `cancel` aborts. */
function timeoutSignal(ms: number, cancel?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(Math.max(1, Math.round(ms)));
  return cancel ? AbortSignal.any([timeout, cancel]) : timeout;
}

/** Options for one client-node call: abort it after `ms`, or when `cancel` aborts. */
export function timeoutOptions(ms: number, cancel?: AbortSignal): CallOptions {
  return signalOptions(timeoutSignal(ms, cancel));
}

function signalOptions(signal: AbortSignal): CallOptions {
  return {
    middlewareMergeStrategy: 'append',
    middleware: [{
      pre: (context) => { context.setSignal(signal); return new Observable(Promise.resolve(context)); },
      post: (response) => new Observable(Promise.resolve(response)),
    }],
  };
}

/** Runs `call` with a timeout (client-node's options, or the signal for a plain call); an abort becomes a CallTimeoutError. */
export async function withTimeout<T>(what: string, ms: number, call: (options: CallOptions, signal: AbortSignal) => Promise<T>, cancel?: AbortSignal): Promise<T> {
  const signal = timeoutSignal(ms, cancel);
  try {
    return await call(signalOptions(signal), signal);
  } catch (error) {
    const name = (error as { name?: string })?.name ?? (error as { cause?: { name?: string } })?.cause?.name;
    if (name === 'AbortError' || name === 'TimeoutError' || /aborted/i.test((error as Error)?.message ?? '')) throw new CallTimeoutError(what, Math.round(ms));
    throw error;
  }
}
