// The process between a driver and its log file (started by process-runner.ts's wrapper, outside
// any sandbox): reads the driver's stdout and stderr from its stdin and writes at most the cap to
// its stdout, the log file (log-cap.ts). It outlives a stop's SIGTERM to write the tail, and ends
// when its input ends, or shortly after the wrapper recorded the driver's exit code (a process
// the driver left behind may hold the pipe open for ever).
//   node log-capper.js CAP_BYTES EXIT_FILE
import { readFileSync, writeSync } from 'node:fs';
import { HeadTailLog } from './log-cap.js';

const [capText, exitFile] = process.argv.slice(2);
const log = new HeadTailLog(Number(capText));
// A write that fails (a full disk) loses those bytes, never the driver: the pipe keeps being read.
const write = (chunks: Buffer[]) => {
  for (const chunk of chunks) { try { writeSync(1, chunk); } catch { /* dropped */ } }
};

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => undefined);

let done = false;
function finish(): void {
  if (done) return;
  done = true;
  write(log.end());
  process.exit(0);
}

const recorded = () => { try { return /\d/.test(readFileSync(exitFile!, 'utf8')); } catch { return false; } };
const watch = setInterval(() => {
  if (!recorded()) return;
  clearInterval(watch);
  setTimeout(finish, 1000).unref(); // what is still in the pipe
}, 500);
watch.unref();

process.stdin.on('data', (chunk: Buffer) => write(log.push(chunk)));
process.stdin.on('end', finish);
process.stdin.on('error', finish);
