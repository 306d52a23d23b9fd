// How many connections a server may hold, from the process's open-files limit. Every accepted
// socket is a file descriptor, and so is each file, pipe and outgoing connection the service
// needs to answer (a driver's log, spark-submit's pipes, the proxy's and the gateway's calls).
// With maxConnections at or above the limit, slow clients alone took every descriptor: the
// next file the service opened failed with EMFILE and the process died. So the server stops
// accepting well below the limit and leaves the rest for the work.
//
// The soft limit needs no raising of ours: Node raises it to the hard limit when it starts
// (node.cc, PlatformInit), so what /proc reports is already the most this process can have.
import { readFileSync } from 'node:fs';

/** The process's open-files limit (the soft one, as Node left it), or undefined where /proc is absent. */
export function openFilesLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    if (soft === 'unlimited') return Number.MAX_SAFE_INTEGER;
    return soft === undefined || !/^\d+$/.test(soft) ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}

/**
 * Connections to accept at most with `limit` descriptors: a quarter of them (at least 128) stay
 * free for files, child processes' pipes and outgoing calls; never fewer than 16.
 */
export function connectionBudget(limit: number = openFilesLimit() ?? 1024): number {
  return Math.max(16, limit - Math.max(128, Math.floor(limit / 4)));
}

/**
 * Caps `server`'s connections at the budget (or at `max` when lower) and keeps an accept that
 * failed for want of descriptors from ending the process: Node reports it as the server's
 * 'error' event, which throws when nobody listens. libuv then closes the waiting connections
 * and goes on accepting once descriptors are free again.
 */
export function holdConnectionsBelowFdLimit(server: import('node:net').Server, log: { warn(obj: object, msg: string): void }, max = Number.POSITIVE_INFINITY): void {
  server.maxConnections = Math.min(max, connectionBudget());
  let lastWarning = 0;
  server.on('error', (error: NodeJS.ErrnoException) => {
    // One line a second at most: a flood of refused accepts must not flood the log too.
    if (Date.now() - lastWarning < 1000) return;
    lastWarning = Date.now();
    log.warn({ err: error, maxConnections: server.maxConnections }, error.syscall === 'accept' ? 'the server could not accept a connection' : 'server error');
  });
}
