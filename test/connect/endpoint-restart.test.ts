// The service stopped (SIGTERM) or killed (SIGKILL) while a real pyspark[connect] 3.5.7 client
// holds an open Spark Connect session, then started again on the same data dir and ports: no
// Connect server JVM of the first run is left running, the records say why each ended, the
// client's next call on its session is FAILED_PRECONDITION "has ended", Spark's error class
// INVALID_HANDLE.SESSION_CHANGED in its details (nothing is started for it),
// and a new session works. Heavy: four Spark drivers (the held sessions, a warm pool's server, a
// new session) and three runs of the service.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { freePort } from '../../lib/free-port.js';
import { liveGroupMembers, storedApps } from '../helpers/drivers.js';
import { until } from '../helpers/poll.js';
import { http, realSpark, type Service, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { connectClientPython, runConnectClient } from './connect-client.js';

const skip = !realSpark() || !connectClientPython() ? 'needs the Spark virtualenv and the Connect client (SETUP_TEST_TOOLS=1 scripts/setup.sh)' : false;
const SESSION_LABEL = 'connect.submission-service.io/session';

/** A client.py `hold` process: its SparkSession stays open; each `next()` makes one more call on it. */
class HeldClient {
  private readonly lines: AsyncIterator<string>;

  constructor(t: Test, private readonly child: ChildProcess) {
    this.lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    t.teardown(() => { child.kill('SIGKILL'); });
  }

  static open(t: Test, url: string): HeldClient {
    const child = spawn(connectClientPython()!, [join(import.meta.dirname, 'client.py'), 'hold', url], {
      env: { ...process.env, SPARK_CONNECT_AUTHENTICATE_TOKEN: '' }, stdio: ['pipe', 'pipe', 'inherit'],
    });
    return new HeldClient(t, child);
  }

  async read(): Promise<Record<string, any>> {
    for (;;) {
      const line = await this.lines.next();
      if (line.done) throw new Error('the held client ended');
      if (line.value.startsWith('{')) return JSON.parse(line.value) as Record<string, any>;
    }
  }

  next(): Promise<Record<string, any>> {
    this.child.stdin!.write('next\n');
    return this.read();
  }
}

/** Live processes running Spark's Connect server for one of `appNames` (their command line names the application). */
function connectServersOf(appNames: string[]): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmdline.includes('SparkConnectServer') && appNames.some((app) => cmdline.includes(app))) pids.push(Number(name));
    } catch { /* ended meanwhile */ }
  }
  return pids;
}

/** What the first run left: its Connect applications' records and their driver processes still alive. */
function connectLeft(dataDir: string, appNames: string[]) {
  const stored = storedApps(dataDir).filter((app) => appNames.includes(app.record.appName));
  const groups = stored.flatMap((app) => (app.run ? liveGroupMembers(app.run.pid) : []));
  return { records: stored.map((app) => app.record), processes: [...groups, ...connectServersOf(appNames)] };
}

/** One data dir and Connect port that every run of the service in this file shares. */
interface Runs { dataDir: string; env: NodeJS.ProcessEnv; args: string[]; connectPort: number; owner: Test }

/**
 * A session held open on `first` (and, `warm`, its warm pool's server running), then `first`
 * ended by `signal` and a new run started on the same data dir and ports: what the first run left
 * and what the held client's next call gets. The new run, which lives as long as `runs.owner`.
 */
async function restartCase(t: Test, runs: Runs, first: Service, signal: 'SIGTERM' | 'SIGKILL', warm: boolean): Promise<Service> {
  const { dataDir, env, args, connectPort } = runs;
  const sessionId = randomUUID();
  const client = HeldClient.open(t, `sc://localhost:${connectPort}/;session_id=${sessionId}`);
  const opened = await client.read();
  t.equal(opened.ready, 3, 'the session answers (its temp view counts 3 rows)');
  const apps = async (url: string) => (await http(url, 'GET', '/api/apps/')).json.items as Array<{ appName: string; state: string; labels: Record<string, string> }>;
  if (warm) {
    await until(async () => (await apps(first.url)).some((app) => app.labels[SESSION_LABEL] === 'warm' && app.state === 'RUNNING'), { what: 'the warm pool\'s server to run', timeoutMs: 600_000, intervalMs: 500 });
  }
  const firstRun = (await apps(first.url)).filter((app) => app.labels[SESSION_LABEL] !== undefined && app.state === 'RUNNING').map((app) => app.appName);
  t.ok(firstRun.length >= 1, `the first run's Connect servers run: ${firstRun.join(', ')}`);
  t.ok(connectLeft(dataDir, firstRun).processes.length > 0, 'their JVMs are seen');

  t.equal(await first.stop(signal), signal === 'SIGTERM' ? 0 : 'SIGKILL', `the service ended by ${signal}`);
  const second = await startService(runs.owner, { dataDir, env, args });
  const left = connectLeft(dataDir, firstRun);
  t.same(left.processes, [], 'no Connect server process of the first run is left running');
  for (const record of left.records) {
    t.equal(record.state, 'KILLED', `${record.appName} ended KILLED`);
    t.match(record.stateDetail, signal === 'SIGTERM' ? /service stopped/ : /service restarted/, `${record.appName} says why: ${record.stateDetail}`);
  }

  const next = await client.next();
  t.equal(next.status, 'FAILED_PRECONDITION', `the client's next call on its session: ${next.message}`);
  t.match(next.message, /has ended/, 'it says the session ended');
  t.match(next.message, /INVALID_HANDLE\.SESSION_CHANGED/, 'with Spark\'s error class for a server that restarted');
  t.match(next.message, signal === 'SIGTERM' ? /service stopped/ : /service restarted/, 'and why');
  t.equal((await apps(second.url)).filter((app) => app.labels[SESSION_LABEL] === sessionId).length, 1, 'no new application was started for the old session');
  return second;
}

// The two cases one after another on one data dir: the run that the SIGKILL case starts is the
// SIGTERM case's first run (a service start less; each case still holds a session of its own).
t.test('a service ended while a session is open, then started on the same data dir', { skip, timeout: 1_800_000 }, async (t) => {
  const connectPort = await freePort();
  const args = ['--auth', 'off', '--sandbox', 'off', '--cores', '4', '--connect-port', String(connectPort)];
  const runs: Runs = { dataDir: join(tempDir(t), 'data'), env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, args, connectPort, owner: t };
  const first = await startService(t, { dataDir: runs.dataDir, env: runs.env, args: [...args, '--connect-warm-pool', 'default=1'] });
  let afterKill: Service | undefined;
  await t.test('SIGKILL: the last run\'s session and warm pool servers are stopped', async (t) => {
    afterKill = await restartCase(t, runs, first, 'SIGKILL', true);
  });
  if (!afterKill) return; // the SIGKILL case failed (and said so): no run to end by SIGTERM
  const killed = afterKill;
  await t.test('SIGTERM: sessions stopped and remembered as ended; a new session works', async (t) => {
    const second = await restartCase(t, runs, killed, 'SIGTERM', false);
    const port = /Spark Connect at sc:\/\/localhost:(\d+)\//.exec(second.output())?.[1];
    const fresh = await runConnectClient('count', `sc://localhost:${port}/;session_id=${randomUUID()}`);
    t.equal(fresh.count, 10, 'a brand-new session after the restart runs a query');
  });
});
