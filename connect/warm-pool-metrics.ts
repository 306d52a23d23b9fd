// The warm pools' servers by template and state, read at each scrape of /metrics: what an operator
// watches to size `--connect-warm-pool`, and how a client (or a test) knows a pooled server has
// passed its warm-up without reading the service's log.
import { gauge, METRIC_PREFIX } from '../lib/metrics.js';
import { NO_TEMPLATE } from './server-app.js';

interface CountedPool { status(): ReadonlyArray<{ template: string | undefined; ready: number; starting: number }> }

const open = new Set<CountedPool>();

gauge({
  name: `${METRIC_PREFIX}connect_warm_pool_servers`,
  help: 'Spark Connect warm pool servers by template and state (starting: started or warming up; ready: warmed up, not handed out)',
  labelNames: ['template', 'state'] as const,
  collect() {
    this.reset();
    for (const pool of open) {
      for (const { template, ready, starting } of pool.status()) {
        this.inc({ template: template ?? NO_TEMPLATE, state: 'ready' }, ready);
        this.inc({ template: template ?? NO_TEMPLATE, state: 'starting' }, starting);
      }
    }
  },
});

/** Counts `pool` in the gauge until the returned function is called. */
export function countWarmPool(pool: CountedPool): () => void {
  open.add(pool);
  return () => { open.delete(pool); };
}
