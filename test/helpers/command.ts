// A command run to its end: its exit code and its output (stdout, then stderr), never a rejection.
import { execFile, type ExecFileOptions } from 'node:child_process';

/** Runs `command` with `args`; output beyond `options.maxBuffer` (default 64 MiB) ends it with a non-zero code. */
export function run(command: string, args: string[], options: ExecFileOptions = {}): Promise<{ code: number; output: string }> {
  return new Promise((ok) => {
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024, ...options, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      ok({ code, output: `${stdout}${stderr}` });
    });
  });
}
