// Where the first query of a session from the warm pool goes (issue 24's "≤ 300 ms"), one Spark
// version, variants in alternating rounds, each round on a fresh pool server of its own (warmed up
// by the service, then stopped after the round so that the pool starts the next):
//   - `through`: the first session's first query through the endpoint (as a user's: the endpoint's
//     own steps, the pool's refill starting beside it, and the server's new session), then
//     FIRST_SESSIONS - 1 more new sessions straight to the server;
//   - `direct`: FIRST_SESSIONS new sessions straight to the server (its loopback port and token,
//     as bench/connect.ts's direct path): the first one is the server's own part of a pooled first query;
//   - `warmN` (e.g. `warm3`): as `direct`, after the warm-up's calls were run again in N more
//     session ids by this harness (connect/warm-up.ts): what warming up in more sessions buys;
//   - `clientN`: as `direct`, after N sessions of the real client (its first query each, not
//     counted): what a client's session warms that the warm-up does not;
//   - any variant suffixed `@jvm`: on servers of a second template whose driver JVM gets
//     FIRST_JAVA_OPTIONS (spark.driver.extraJavaOptions), e.g. `-XX:TieredStopAtLevel=1`.
// Each session is a client process of its own (its import outside the clock: client.py bench),
// measured once the server's JVM is idle (its JIT done); beside each first query's time, the CPU
// the server's driver used meanwhile, which the machine's load moves far less. FIRST_HEAVY (1):
// then a heavy query twice, the second's server CPU standing for throughput.
//   node --import tsx bench/connect-first.ts   (FIRST_VERSION 4.2.0, FIRST_ROUNDS 3, FIRST_SESSIONS 3,
//   FIRST_VARIANTS "through direct warm3", FIRST_JAVA_OPTIONS unset, FIRST_HEAVY 1)
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { envNumber, fmt, load, median, sleep, table, treeCpuMs } from './lib.js';
import { warmUpServer } from '../connect/warm-up.js';
import { serverAuthorization } from '../connect/relay.js';
import { connectClientPython, connectPortOf, runConnectClientOf, serverTokenOf, serverTokenParam } from '../test/connect/connect-client.js';
import { http, realSpark, sparkEnv, startService } from '../test/helpers/service.js';
import { until } from '../test/helpers/poll.js';
import { tempDir } from '../test/helpers/temp.js';
import { storedApp } from '../test/helpers/drivers.js';

const VERSION = process.env.FIRST_VERSION ?? '4.2.0';
const ROUNDS = Math.max(1, envNumber('FIRST_ROUNDS', 3));
const SESSIONS = Math.max(1, envNumber('FIRST_SESSIONS', 3));
const VARIANTS = (process.env.FIRST_VARIANTS ?? 'through direct warm3').split(/\s+/).filter(Boolean);
const JAVA_OPTIONS = process.env.FIRST_JAVA_OPTIONS ?? '';
/** A query whose server CPU stands for the server's throughput (an @jvm flag may trade it away), run twice after the sessions; 0 leaves it out. */
const HEAVY = process.env.FIRST_HEAVY !== '0';
const HEAVY_QUERY = 'select sum(id * 7 % 13) from range(100000000)';
const WARM_LABEL = 'connect.submission-service.io/warm';
const TEMPLATE = `first-${VERSION.replaceAll('.', '-')}`;
const JVM_TEMPLATE = `${TEMPLATE}-jvm`;
const cleanup: Array<() => unknown> = [];
const teardown = { teardown: (fn: () => unknown) => { cleanup.push(fn); } };

if (!realSpark() || !connectClientPython(VERSION)) {
  console.log('skipped: needs the Spark virtualenv and a Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)');
  process.exit(0);
}
if (VARIANTS.some((v) => v.endsWith('@jvm')) && !JAVA_OPTIONS) throw new Error('an @jvm variant needs FIRST_JAVA_OPTIONS');

type Service = Awaited<ReturnType<typeof startService>>;
interface App { appName: string; state: string; submittedBy?: string | null }

const warmedUp = (service: Service, appName: string): boolean =>
  service.output().split('\n').some((line) => line.includes(`"appName":"${appName}"`) && line.includes('Spark Connect warm pool: a server is ready'));

/** A ready (warmed-up) server of `template`'s pool not in `seen`. */
async function readyServer(service: Service, template: string, seen: Set<string>): Promise<App> {
  let ready: App | undefined;
  await until(async () => {
    const items = (await http(service.url, 'GET', `/api/apps/?labelSelector=${WARM_LABEL}=${template}`)).json.items as App[];
    ready = items.find((x) => x.state === 'RUNNING' && !x.submittedBy && !seen.has(x.appName) && warmedUp(service, x.appName));
    return ready !== undefined;
  }, { what: `a ready warm server of ${template}`, timeoutMs: 1_200_000, intervalMs: 250 });
  seen.add(ready!.appName);
  return ready!;
}

/** The endpoint's own steps of handing `appName` out, as its log line says them (connect/warm-handout.ts). */
function handoutSteps(service: Service, appName: string): string {
  const line = service.output().split('\n').find((l) => l.includes(`"appName":"${appName}"`) && l.includes('a server from the warm pool'));
  return line ? JSON.stringify((JSON.parse(line) as { ms?: unknown }).ms) : 'not logged';
}

async function directOf(service: Service, dataDir: string, appName: string) {
  const submission = (await http(service.url, 'GET', `/api/apps/${appName}/submission`)).json;
  const port = Number(submission.configOverrides.engineConf['spark.connect.grpc.binding.port']);
  const token = serverTokenOf(dataDir, appName);
  return { port, token, url: `sc://localhost:${port}/${serverTokenParam(VERSION, token)}` };
}

/** A session's first query: its time from the session's opening, and the CPU the server's driver used meanwhile (ms; the machine's load moves the first far more). */
interface First { ms: number; cpu: number }

async function firstQuery(url: string, driverPid: number): Promise<First> {
  const before = treeCpuMs(driverPid);
  const ms = (await runConnectClientOf(VERSION, 'bench', url, '0')).first as number;
  return { ms, cpu: treeCpuMs(driverPid) - before };
}

/**
 * Waits (at most a minute) until the server's driver is idle, using under a tenth of a core over
 * a second: a warm-up's code compiling in the JIT's threads would otherwise be counted against the
 * session measured next. Every variant waits alike, as a server waits in its pool for a client.
 */
async function quiet(pid: number): Promise<void> {
  for (let i = 0; i < 60; i++) {
    const before = treeCpuMs(pid);
    await sleep(1000);
    if (treeCpuMs(pid) - before < 100) return;
  }
}

/** One round of `variant` on a fresh server: the first query of each of SESSIONS new sessions, then the heavy query's server CPU. */
async function round(service: Service, dataDir: string, endpoint: string, variant: string, seen: Set<string>): Promise<First[]> {
  const [kind] = variant.split('@');
  const template = variant.endsWith('@jvm') ? JVM_TEMPLATE : TEMPLATE;
  const app = await readyServer(service, template, seen);
  const direct = await directOf(service, dataDir, app.appName);
  const pid = storedApp(dataDir, app.appName)!.run!.pid!;
  const firsts: First[] = [];
  await quiet(pid);
  if (kind === 'through') {
    firsts.push(await firstQuery(`${endpoint};session_id=${randomUUID()};template=${template}`, pid));
    console.log(`  the endpoint's steps (ms): ${handoutSteps(service, app.appName)}`);
  }
  const extra = /^warm(\d+)$/.exec(kind!);
  const clients = /^client(\d+)$/.exec(kind!);
  for (let i = 0; i < Number(clients?.[1] ?? 0); i++) await runConnectClientOf(VERSION, 'bench', direct.url, '0');
  if (clients) await quiet(pid);
  if (extra) {
    await warmUpServer({ host: '127.0.0.1', port: direct.port }, VERSION, AbortSignal.timeout(600_000), serverAuthorization(direct.token), undefined, Number(extra[1]));
    await quiet(pid);
  }
  while (firsts.length < SESSIONS) firsts.push(await firstQuery(direct.url, pid));
  if (HEAVY) {
    await runConnectClientOf(VERSION, 'sql', direct.url, HEAVY_QUERY);
    const before = treeCpuMs(pid);
    await runConnectClientOf(VERSION, 'sql', direct.url, HEAVY_QUERY);
    firsts.push({ ms: Number.NaN, cpu: treeCpuMs(pid) - before });
  }
  await http(service.url, 'POST', `/api/apps/${app.appName}/stop`);
  return firsts;
}

async function makeTemplate(service: Service, name: string, engineConf: Record<string, string>): Promise<void> {
  const made = await http(service.url, 'POST', '/api/config-templates/', { name, config: { engineVersion: VERSION, engineConf } });
  if (made.status !== 201) throw new Error(`template ${name}: ${made.status} ${made.text}`);
}

try {
  const dataDir = join(tempDir(teardown), 'data');
  const jvm = VARIANTS.some((v) => v.endsWith('@jvm'));
  const pools = [TEMPLATE, ...(jvm ? [JVM_TEMPLATE] : [])].flatMap((name) => ['--connect-warm-pool', `${name}=1`]);
  const service = await startService(teardown, { dataDir, env: { ...sparkEnv(), LOG_LEVEL: 'info' }, args: ['--connect-port', '0', '--cores', '8', ...pools] });
  await makeTemplate(service, TEMPLATE, {});
  if (jvm) await makeTemplate(service, JVM_TEMPLATE, { 'spark.driver.extraJavaOptions': JAVA_OPTIONS });
  const endpoint = `sc://localhost:${connectPortOf(service.output())}/`;
  const seen = new Set<string>();
  const results = new Map<string, First[][]>(VARIANTS.map((v) => [v, []]));
  for (let r = 0; r < ROUNDS; r++) {
    // Alternating order: neither variant always runs first after a refill.
    for (const variant of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const firsts = await round(service, dataDir, endpoint, variant, seen);
      results.get(variant)!.push(firsts);
      console.log(`round ${r + 1} ${variant}: ${firsts.map((f) => `${fmt(f.ms)} ms (server CPU ${fmt(f.cpu)})`).join(', ')} (load ${load()})`);
    }
  }
  const rows = [...results].flatMap(([variant, rounds]) => Array.from({ length: SESSIONS + (HEAVY ? 1 : 0) }, (_, k) => {
    const each = rounds.map((firsts) => firsts[k]!);
    const [ms, cpu] = [each.map((f) => f.ms), each.map((f) => f.cpu)];
    return [variant, k < SESSIONS ? `session ${k + 1}` : 'heavy query, 2nd run', `${fmt(median(ms))} (${ms.map((x) => fmt(x)).join(', ')})`, `${fmt(median(cpu))} (${cpu.map((x) => fmt(x)).join(', ')})`];
  }));
  console.log(`Spark ${VERSION}: first query of new sessions on a warmed pool server, ${ROUNDS} rounds (load ${load()}${JAVA_OPTIONS ? `; @jvm: ${JAVA_OPTIONS}` : ''})`);
  console.log(table(['variant', 'new session', 'first query ms: median (each round)', 'server driver CPU ms: median (each)'], rows));
  await service.stop();
} finally {
  for (const fn of cleanup.reverse()) await fn();
}
