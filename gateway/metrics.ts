// The gateway's background work as counters, so an operator (and a test) can tell that a pass
// happened and what it decided, without reading logs or waiting for a time to pass.
import { counter } from '../lib/metrics.js';

/** Each pass of the culler over kernels idle past --cull-idle-seconds, by what it did with one. */
export const idleKernelsTotal = counter({
  name: 'submission_service_gateway_idle_kernels_total',
  help: 'Kernels the culler found idle past --cull-idle-seconds (no connection, execution idle), once per pass: culled, or spared (an unclaimed warm-pool kernel, which waits by design)',
  labelNames: ['outcome'] as const,
});

/** Completed checks of the warm pools (templates looked up, pools topped up or drained). */
export const poolChecksTotal = counter({
  name: 'submission_service_gateway_pool_checks_total',
  help: 'Completed checks of the warm pools (every 5 s and after each claim): templates looked up, pools topped up, replaced or drained',
});
