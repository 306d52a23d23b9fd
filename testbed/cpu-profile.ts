// The test bed's service process under V8's profiler on demand, for benches that ask what a
// phase costs it (bench/kubernetes/controller-ceiling.ts, CEILING_PROFILE). With
// TESTBED_CPU_PROFILE_DIR set, SIGUSR2 starts a CPU profile and the next SIGUSR2 writes it there
// (service-N.cpuprofile, for Chrome's DevTools or any .cpuprofile reader): between the two
// signals only, so that a profile holds one phase, not the start or the other phases.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

export function profileOnSignal(dir: string | undefined): void {
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  let running = false;
  let written = 0;
  process.on('SIGUSR2', () => {
    running = !running;
    if (running) {
      session.post('Profiler.enable', () => session.post('Profiler.start'));
      return;
    }
    session.post('Profiler.stop', (error, result) => {
      if (error) process.stderr.write(`cpu profile: ${error.message}\n`);
      else writeFileSync(join(dir, `service-${written++}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
