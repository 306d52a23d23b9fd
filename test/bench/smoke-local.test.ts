// The benches of local mode and the service's own paths (admission, dry runs, sizing, the events
// stream, a local run, the Connect endpoint, the gateway's memory probes, the driver log).
// Each runs as bench/README.md says with tiny counts (test/helpers/bench-smoke.ts).
import { smokeTests } from '../helpers/bench-smoke.js';

smokeTests([
  'admission.ts',
  'dry-run.ts',
  'sizing.ts',
  'events-resume.ts',
  'local-run.ts',
  'connect.ts',
  'connect-first.ts',
  'connect-relay.ts',
  'gateway/memory-probes.ts',
  'history/driver-log.ts',
]);
