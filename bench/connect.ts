// Spark Connect through the service's endpoint vs straight to the same Connect server (issue 24),
// for each Spark version side by side in one run: `submission-service local` (auth off) with a
// warm pool of one server per version's template; per version that version's real client
// (pyspark[connect] 3.5.7; pyspark-client 4.2.0), sessions from templates naming the version.
// Measured per version:
//   - the first query of a new session, cold (a template without a pool: the session's
//     application starts with it) and from the warm pool (its server up and warmed up), the
//     latter in CONNECT_FIRST_ROUNDS rounds (each a server of its own: the one taken is stopped
//     and the pool's next is waited for), reported as the median and each round;
//   - CONNECT_QUERIES small queries (`select 1`) through the endpoint and straight to the warm
//     session's server (its loopback port, from its submission; its token, which the server asks
//     every call for, from its driver's environment: serverTokenOf), in CONNECT_ROUNDS rounds, each
//     both paths, the first one alternating (through then direct, direct then through, ...), each
//     a new client process whose first query is left out: both paths see the same JVM warmth and
//     the same machine load. They start once the pool's next server is ready: its JVM's start and
//     warm-up, begun when the measured server was taken, would load the first round's path alone;
//   - CONNECT_ARROW_MB of Arrow batches back (rows of an id and 92 bytes), 2 fetches per round in
//     rounds as above; reported as the median rate of each path.
//   node --import tsx bench/connect.ts   (CONNECT_QUERIES 1000, CONNECT_ROUNDS 4, CONNECT_ARROW_MB 100,
//   CONNECT_VERSIONS "3.5.7 4.2.0", CONNECT_COLD 1: 0 leaves the cold start out, CONNECT_FIRST_ROUNDS 1,
//   CONNECT_WARM_UP 1: 0 for a service that does not warm its servers up, an older build, whose
//   server counts as ready once its driver log says it started)
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { envNumber, fmt, load, median, percentileSorted, saveSummary, type SummaryRow, table } from './lib.js';
import { connectClientPython, connectPortOf, runConnectClientOf, serverTokenOf, serverTokenParam } from '../test/connect/connect-client.js';
import { http, realSpark, sparkEnv, startService } from '../test/helpers/service.js';
import { until } from '../test/helpers/poll.js';
import { tempDir } from '../test/helpers/temp.js';

const QUERIES = envNumber('CONNECT_QUERIES', 1000);
const ROUNDS = Math.max(1, envNumber('CONNECT_ROUNDS', 4));
const ARROW_MB = envNumber('CONNECT_ARROW_MB', 100);
// Read as flags: envNumber takes 0 for unset.
const COLD = process.env.CONNECT_COLD !== '0';
const FIRST_ROUNDS = Math.max(1, envNumber('CONNECT_FIRST_ROUNDS', 1));
const WARMS_UP = process.env.CONNECT_WARM_UP !== '0';
const VERSIONS = (process.env.CONNECT_VERSIONS ?? '3.5.7 4.2.0').split(/\s+/).filter(Boolean);
const WARM_LABEL = 'connect.submission-service.io/warm';
const cleanup: Array<() => unknown> = [];
const teardown = { teardown: (fn: () => unknown) => { cleanup.push(fn); } };
const templateOf = (version: string) => `connect-${version.replaceAll('.', '-')}`;
/** run.sh's summary lines (saveSummary): each version's figures against the goals. */
const summary: SummaryRow[] = [];
const judged = (bench: string, metric: string, value: number, unit: string, goal: string, met: boolean): void => {
  summary.push({ bench, metric, value: `${fmt(value, unit === 'ms' ? 1 : 0)} ${unit}`, goal, verdict: met ? 'ok' : unit === '%' ? 'below goal' : 'above goal' });
};

const versions = VERSIONS.filter((version) => connectClientPython(version));
for (const version of VERSIONS.filter((v) => !versions.includes(v))) console.log(`${version}: skipped, no client (SETUP_TEST_TOOLS=1 scripts/setup.sh)`);
if (!realSpark() || versions.length === 0) {
  console.log('skipped: needs the Spark virtualenv and a Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)');
  process.exit(0);
}

type Service = Awaited<ReturnType<typeof startService>>;
interface App { appName: string; state: string; labels?: Record<string, string>; submittedBy?: string | null }

/** Whether the service logged that the pool's server `appName` passed its warm-up and is ready. */
function warmedUp(service: Service, appName: string): boolean {
  return service.output().split('\n').some((line) => line.includes('"appName":"' + appName + '"') && line.includes('Spark Connect warm pool: a server is ready'));
}

/** A ready server of the warm pool of `template` (not one of `seen`): warmed up, or (CONNECT_WARM_UP=0) its driver log says its Connect server started. */
async function readyWarmServer(service: Service, template: string, seen: ReadonlySet<string>): Promise<App> {
  let ready: App | undefined;
  await until(async () => {
    const items = (await http(service.url, 'GET', `/api/apps/?labelSelector=${WARM_LABEL}=${template}`)).json.items as App[];
    for (const app of items.filter((x) => x.state === 'RUNNING' && !x.submittedBy && !seen.has(x.appName))) {
      if (WARMS_UP ? warmedUp(service, app.appName) : /Spark Connect server started/.test((await http(service.url, 'GET', `/api/apps/${app.appName}/log`)).text)) ready = app;
    }
    return ready !== undefined;
  }, { what: `a ready warm server of ${template}`, timeoutMs: 1_200_000, intervalMs: 500 });
  return ready!;
}

/**
 * The first query of a new session from the warm pool, FIRST_ROUNDS times, each on a ready server
 * of its own (stopped after its round, so that the pool starts the next); the last round's session
 * and server are kept for what follows.
 */
async function warmFirstQueries(service: Service, endpoint: string, version: string) {
  const template = templateOf(version);
  const seen = new Set<string>();
  const firsts: number[] = [];
  for (let round = 0; ; round++) {
    const warm = await readyWarmServer(service, template, seen);
    seen.add(warm.appName);
    const through = `${endpoint};session_id=${randomUUID()};template=${template}`;
    firsts.push((await runConnectClientOf(version, 'bench', through, '1')).first as number);
    console.log(`${version}: first query from the warm pool, round ${round + 1}: ${fmt(firsts.at(-1)!)} ms (load ${load()})`);
    if (round + 1 >= FIRST_ROUNDS) return { firsts, warm, through, seen };
    await http(service.url, 'POST', `/api/apps/${warm.appName}/stop`); // its cores back for the pool's next server
  }
}

async function serverPortOf(service: Service, appName: string): Promise<number> {
  const submission = (await http(service.url, 'GET', `/api/apps/${appName}/submission`)).json;
  return Number(submission.configOverrides.engineConf['spark.connect.grpc.binding.port']);
}

/**
 * The URL straight to the server of application `appName`: its loopback port and its token (every
 * server asks each call for it: docs/security.md), read from its driver's environment, as an
 * operator on this machine, as the service's user, finds it; the service shows it nowhere.
 */
async function directUrlOf(service: Service, dataDir: string, appName: string, version: string): Promise<string> {
  return `sc://localhost:${await serverPortOf(service, appName)}/${serverTokenParam(version, serverTokenOf(dataDir, appName))}`;
}

/** Both paths in round `round`'s order: through first in even rounds, direct first in odd ones. */
const pathsOf = (round: number, through: string, direct: string) => {
  const both = [['through', through], ['direct', direct]] as const;
  return round % 2 === 0 ? both : [both[1], both[0]] as const;
};

/** Small queries in rounds; each path's times (ms), first queries of each client left out. */
async function smallQueries(version: string, through: string, direct: string) {
  const times = { through: [] as number[], direct: [] as number[] };
  const perRound = String(Math.max(1, Math.round(QUERIES / ROUNDS)));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [path, url] of pathsOf(round, through, direct)) times[path].push(...(await runConnectClientOf(version, 'bench', url, perRound)).times as number[]);
  }
  return times;
}

/** Arrow fetches in rounds as above: each path's rates (MB/s) and the bytes of one fetch. */
async function arrowRates(version: string, through: string, direct: string) {
  const rates = { through: [] as number[], direct: [] as number[] };
  let bytes = 0;
  for (let round = 0; round < Math.max(1, Math.ceil(ROUNDS / 2)); round++) {
    for (const [path, url] of pathsOf(round, through, direct)) {
      const seen = await runConnectClientOf(version, 'arrow', url, String(ARROW_MB), '2');
      bytes = seen.bytes as number;
      rates[path].push(...(seen.times as number[]).map((ms) => bytes / 1e6 / (ms / 1000)));
    }
  }
  return { rates, bytes };
}

async function benchVersion(service: Service, dataDir: string, endpoint: string, version: string): Promise<string[][]> {
  const template = templateOf(version);
  const rows: string[][] = [];
  if (COLD) {
    const made = await http(service.url, 'POST', '/api/config-templates/', { name: `${template}-cold`, config: { engineVersion: version } });
    if (made.status !== 201) throw new Error(`template ${template}-cold: ${made.status} ${made.text}`);
    const cold = await runConnectClientOf(version, 'bench', `${endpoint};template=${template}-cold`, '1');
    rows.push([version, 'first query, new session, cold (its application starts)', fmt(cold.first)]);
    summary.push({ bench: `connect ${version}`, metric: 'first query, cold session', value: `${fmt(cold.first)} ms`, goal: '≤ a hand-started server + 1 s', verdict: 'info' });
    const coldApp = ((await http(service.url, 'GET', `/api/apps/?labelSelector=connect.submission-service.io/template=${template}-cold`)).json.items as App[])[0];
    if (coldApp) await http(service.url, 'POST', `/api/apps/${coldApp.appName}/stop`); // its cores back
  }
  const { firsts, warm, through, seen } = await warmFirstQueries(service, endpoint, version);
  await readyWarmServer(service, template, seen); // the pool's refill, started when `warm` was taken
  rows.push([version, `first query, new session, from the warm pool: median of ${firsts.length} (each)`, `${fmt(median(firsts))} (${firsts.map((ms) => fmt(ms)).join(', ')})`]);
  judged(`connect ${version}`, 'first query, warm pool', median(firsts), 'ms', '≤ 300 ms', median(firsts) <= 300);
  const direct = await directUrlOf(service, dataDir, warm.appName, version);
  const small = await smallQueries(version, through, direct);
  const [sortedThrough, sortedDirect] = [small.through, small.direct].map((times) => Float64Array.from(times).sort());
  const p = (sorted: Float64Array, q: number) => fmt(percentileSorted(sorted, q), 2);
  rows.push([version, `select 1 through the endpoint, p50 / p99 (${small.through.length})`, `${p(sortedThrough, 50)} / ${p(sortedThrough, 99)}`]);
  rows.push([version, `select 1 straight to the server, p50 / p99 (${small.direct.length})`, `${p(sortedDirect, 50)} / ${p(sortedDirect, 99)}`]);
  const added = percentileSorted(sortedThrough, 50) - percentileSorted(sortedDirect, 50);
  rows.push([version, 'p50 added by the endpoint', fmt(added, 2)]);
  judged(`connect ${version}`, 'select 1 p50 added by the endpoint', added, 'ms', '≤ +1 ms', added <= 1);
  const arrow = await arrowRates(version, through, direct);
  const [rateThrough, rateDirect] = [median(arrow.rates.through), median(arrow.rates.direct)];
  rows.push([version, `${fmt(arrow.bytes / 1e6)} MB of Arrow batches, MB/s through / direct (median of ${arrow.rates.through.length})`, `${fmt(rateThrough, 1)} / ${fmt(rateDirect, 1)} (${fmt((100 * rateThrough) / rateDirect)}%)`]);
  judged(`connect ${version}`, 'Arrow rate through / direct', (100 * rateThrough) / rateDirect, '%', '≥ 90%', rateThrough >= 0.9 * rateDirect);
  // Its cores back before the next version's session (local mode's core queue).
  await http(service.url, 'POST', `/api/apps/${warm.appName}/stop`);
  console.log(`${version} done (load ${load()})`);
  return rows;
}

try {
  const pools = versions.flatMap((version) => ['--connect-warm-pool', `${templateOf(version)}=1`]);
  const dataDir = join(tempDir(teardown), 'data');
  const service = await startService(teardown, {
    // LOG_LEVEL info: the line that says a pool's server passed its warm-up (warmedUp).
    dataDir, env: { ...sparkEnv(), LOG_LEVEL: 'info' },
    // Cores for both pools' servers, a cold session and the refills: local mode's queue holds a driver otherwise.
    args: ['--connect-port', '0', '--cores', '8', ...pools],
  });
  for (const version of versions) {
    const made = await http(service.url, 'POST', '/api/config-templates/', { name: templateOf(version), config: { engineVersion: version } });
    if (made.status !== 201) throw new Error(`template ${templateOf(version)}: ${made.status} ${made.text}`);
  }
  const endpoint = `sc://localhost:${connectPortOf(service.output())}/`;
  const rows: string[][] = [];
  for (const version of versions) rows.push(...await benchVersion(service, dataDir, endpoint, version));
  console.log(`Spark Connect through the endpoint and straight to the server, ${QUERIES} queries per path in ${ROUNDS} alternating rounds (load ${load()})`);
  console.log(table(['Spark', 'what', 'ms (or as said)'], rows));
  saveSummary('connect', summary, { queries: QUERIES, rounds: ROUNDS, arrowMb: ARROW_MB, rows });
  await service.stop();
} finally {
  for (const fn of cleanup.reverse()) await fn();
}
