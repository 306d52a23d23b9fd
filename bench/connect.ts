// Spark Connect through the service's endpoint vs straight to the same Connect server (issue 24),
// for each Spark version side by side in one run: `submission-service local` (auth off); per
// version one session of that version's real client (pyspark[connect] 3.5.7; pyspark-client
// 4.2.0 against a session from a template naming engineVersion 4.2.0, `;template=NAME`); its
// first query (cold: the session's application starts with it), then CONNECT_QUERIES small
// queries (`select 1`) through the endpoint, then as many straight to the session's own server
// (its loopback port, read from the application's submission). Reported: p50 and p99 of each.
//   node --import tsx bench/connect.ts      (CONNECT_QUERIES, default 1000; CONNECT_VERSIONS, default "3.5.7 4.2.0")
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { envNumber, fmt, load, percentileSorted, table } from './lib.js';
import { connectClientPython, connectPortOf, runConnectClientOf } from '../test/connect/connect-client.js';
import { http, realSpark, sparkEnv, startService } from '../test/helpers/service.js';
import { tempDir } from '../test/helpers/temp.js';

const QUERIES = envNumber('CONNECT_QUERIES', 1000);
const VERSIONS = (process.env.CONNECT_VERSIONS ?? '3.5.7 4.2.0').split(/\s+/).filter(Boolean);
const cleanup: Array<() => unknown> = [];
const teardown = { teardown: (fn: () => unknown) => { cleanup.push(fn); } };

const versions = VERSIONS.filter((version) => connectClientPython(version));
for (const version of VERSIONS.filter((v) => !versions.includes(v))) console.log(`${version}: skipped, no client (SETUP_TEST_TOOLS=1 scripts/setup.sh)`);
if (!realSpark() || versions.length === 0) {
  console.log('skipped: needs the Spark virtualenv and a Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)');
  process.exit(0);
}
try {
  const service = await startService(teardown, { dataDir: join(tempDir(teardown), 'data'), env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args: ['--connect-port', '0', '--cores', '2'] });
  const endpoint = `sc://localhost:${connectPortOf(service.output())}/`;
  const rows: string[][] = [];
  for (const version of versions) {
    const template = `connect-${version.replaceAll('.', '-')}`;
    const made = await http(service.url, 'POST', '/api/config-templates/', { name: template, config: { engineVersion: version } });
    if (made.status !== 201) throw new Error(`template ${template}: ${made.status} ${made.text}`);
    const sessionId = randomUUID();
    const through = await runConnectClientOf(version, 'bench', `${endpoint};session_id=${sessionId};template=${template}`, String(QUERIES));
    const app = (await http(service.url, 'GET', `/api/apps/?labelSelector=connect.submission-service.io/session=${sessionId}`)).json.items[0];
    const submission = (await http(service.url, 'GET', `/api/apps/${app.appName}/submission`)).json;
    const serverPort = submission.configOverrides.engineConf['spark.connect.grpc.binding.port'];
    const direct = await runConnectClientOf(version, 'bench', `sc://localhost:${serverPort}/`, String(QUERIES));
    const row = (name: string, result: Record<string, any>, first: string) => {
      const sorted = Float64Array.from(result.times as number[]).sort();
      return [version, name, first, fmt(percentileSorted(sorted, 50), 2), fmt(percentileSorted(sorted, 99), 2)];
    };
    rows.push(row('through the endpoint', through, `${fmt(through.first)} (cold: the session's application starts)`));
    rows.push(row('straight to the session\'s server', direct, `${fmt(direct.first)} (a new client session, server up)`));
    // Its cores back before the next version's session starts (local mode queues it otherwise).
    await http(service.url, 'POST', `/api/apps/${app.appName}/stop`);
    console.log(`${version} done (load ${load()})`);
  }
  console.log(`Spark Connect round trips, ${QUERIES} queries each (load ${load()})`);
  console.log(table(['Spark', 'path', 'first query (ms)', 'p50 (ms)', 'p99 (ms)'], rows));
  await service.stop();
} finally {
  for (const fn of cleanup.reverse()) await fn();
}
