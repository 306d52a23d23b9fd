// The benches with Chromium or notebook kernels: the dashboard, the gateway against Kernel Gateway,
// the History Server's UI.
// Each runs as bench/README.md says with tiny counts (test/helpers/bench-smoke.ts).
import { smokeTests } from '../helpers/bench-smoke.js';

smokeTests([
  'dashboard/dashboard.ts',
  'gateway/compare.ts',
  'history/history-ui.ts',
]);
