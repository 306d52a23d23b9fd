// The warm pools' servers in /metrics (connect/warm-pool-metrics.ts): by template and state, read
// at each scrape, gone with the pool.
import t from 'tap';
import { countWarmPool } from '../../connect/warm-pool-metrics.js';
import { scrape } from '../../lib/metrics.js';

const series = async () => (await scrape()).body.split('\n').filter((line) => line.startsWith('submission_service_connect_warm_pool_servers{'));

t.test('each open pool\'s ready and starting servers by template, read at the scrape; a closed pool counts no more', async (t) => {
  let ready = 0;
  const pool = { status: () => [{ template: undefined, ready, starting: 1 - ready }, { template: 'spark4', ready: 1, starting: 0 }] };
  const uncount = countWarmPool(pool);
  t.same(await series(), [
    'submission_service_connect_warm_pool_servers{template="none",state="ready"} 0',
    'submission_service_connect_warm_pool_servers{template="none",state="starting"} 1',
    'submission_service_connect_warm_pool_servers{template="spark4",state="ready"} 1',
    'submission_service_connect_warm_pool_servers{template="spark4",state="starting"} 0',
  ], 'a pool naming no template is "none", as its servers\' label');
  ready = 1;
  t.match((await series())[0], /state="ready"} 1$/, 'the value now, not at registration');
  uncount();
  t.same(await series(), [], 'nothing once the pool is closed');
});
