// What no single request, timer or library callback may do: end the process silently, or
// leave it running in a state nobody planned for. An error that escapes every handler is
// logged as one JSON line on stderr and the process exits on purpose (EX_SOFTWARE, 70), so the
// supervisor (Kubernetes, systemd, the shell) restarts it and the cause is in its log.
//
// One known escape is guarded here instead: process.memoryUsage() opens /proc/self/stat, so with
// every descriptor taken it throws EMFILE, and @fastify/under-pressure calls it from a bare timer.
// Until descriptors are free again it answers with the last reading it got. (That it calls
// process.memoryUsage() by name is pinned by test/unit/library-pins.test.ts.)

export const EXIT_UNHANDLED = 70;

function logFatal(message: string, error: unknown): void {
  const err = error instanceof Error ? { type: error.name, message: error.message, stack: error.stack } : { message: String(error) };
  try {
    // Synchronous for files and pipes on Linux: the line is out before exit.
    process.stderr.write(`${JSON.stringify({ level: 60, time: Date.now(), pid: process.pid, msg: message, err })}\n`);
  } catch {
    // stderr itself is gone: the exit status still says it.
  }
}

function guardMemoryUsage(): void {
  const original = process.memoryUsage;
  let last: NodeJS.MemoryUsage | undefined;
  const guarded = Object.assign(() => {
    try {
      last = original.call(process);
      return last;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'EMFILE' && code !== 'ENFILE') || !last) throw error;
      return last;
    }
  }, { rss: original.rss });
  process.memoryUsage = guarded as typeof process.memoryUsage;
  guarded();
}

let installed = false;

/** Installs the process-wide handlers once (each command's entry point calls it first). */
export function installProcessGuards(): void {
  if (installed) return;
  installed = true;
  guardMemoryUsage();
  process.on('unhandledRejection', (reason) => {
    logFatal('unhandled promise rejection: exiting so that the supervisor restarts the process', reason);
    process.exit(EXIT_UNHANDLED);
  });
  process.on('uncaughtException', (error) => {
    logFatal('uncaught exception: exiting so that the supervisor restarts the process', error);
    process.exit(EXIT_UNHANDLED);
  });
}
