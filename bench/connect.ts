// Spark Connect through the service's endpoint vs straight to the same Connect server (issue 24):
// `submission-service local` (auth off), one session of the real pyspark[connect] 3.5.7 client;
// its first query (cold: the session's application starts with it), then CONNECT_QUERIES small
// queries (`select 1`) through the endpoint, then as many straight to the session's own server
// (its loopback port, read from the application's submission). Reported: p50 and p99 of each.
//   node --import tsx bench/connect.ts      (CONNECT_QUERIES, default 1000)
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { envNumber, fmt, load, percentileSorted, table } from './lib.js';
import { connectClientPython, connectPortOf, runConnectClient } from '../test/connect/connect-client.js';
import { http, realSpark, sparkEnv, startService } from '../test/helpers/service.js';
import { tempDir } from '../test/helpers/temp.js';

const QUERIES = envNumber('CONNECT_QUERIES', 1000);
const cleanup: Array<() => unknown> = [];
const teardown = { teardown: (fn: () => unknown) => { cleanup.push(fn); } };

if (!realSpark() || !connectClientPython()) {
  console.log('skipped: needs the Spark virtualenv and the Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)');
  process.exit(0);
}
try {
  const service = await startService(teardown, { dataDir: join(tempDir(teardown), 'data'), env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args: ['--connect-port', '0', '--cores', '2'] });
  const sessionId = randomUUID();
  const through = await runConnectClient('bench', `sc://localhost:${connectPortOf(service.output())}/;session_id=${sessionId}`, String(QUERIES));
  const app = (await http(service.url, 'GET', `/api/apps/?labelSelector=connect.submission-service.io/session=${sessionId}`)).json.items[0];
  const submission = (await http(service.url, 'GET', `/api/apps/${app.appName}/submission`)).json;
  const serverPort = submission.configOverrides.engineConf['spark.connect.grpc.binding.port'];
  const direct = await runConnectClient('bench', `sc://localhost:${serverPort}/`, String(QUERIES));
  const row = (name: string, result: Record<string, any>, first: string) => {
    const sorted = Float64Array.from(result.times as number[]).sort();
    return [name, first, fmt(percentileSorted(sorted, 50), 2), fmt(percentileSorted(sorted, 99), 2)];
  };
  console.log(`Spark Connect round trips, ${QUERIES} queries each (load ${load()})`);
  console.log(table(['path', 'first query (ms)', 'p50 (ms)', 'p99 (ms)'], [
    row('through the endpoint', through, `${fmt(through.first)} (cold: the session's application starts)`),
    row('straight to the session\'s server', direct, `${fmt(direct.first)} (a new client session, server up)`),
  ]));
  await service.stop();
} finally {
  for (const fn of cleanup.reverse()) await fn();
}
