// Local mode with `--auth on`: no run reaches another through Spark's own web servers (issue 25).
// The real `submission-service local` with real pyspark, the driver sandbox and two user keys.
// Each finding once reproduced on main: a running driver's Spark UI answered on the machine's
// network address (SPARK_LOCAL_IP unset: Jetty bound every interface), then on loopback to any
// other user's driver (no gate on it); the History Server
// answered every process on loopback, whoever's run it asked for (a run's environment page, its
// whole event log as a zip: both asked here straight, with the run loaded); a submission could move the
// driver's RPC off loopback (spark.driver.bindAddress).
import { chmodSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { repoRoot } from '../helpers/api.js';
import { storedApp } from '../helpers/drivers.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const spark = realSpark();
const skip = !spark ? 'needs the Spark virtualenv' : false;

async function service(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync('/var/tmp/subsvc-ui-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, bob: store.create('user', 'bob').key };
  const api = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--cores', '2'] });
  const as = (key: string) => (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  return { api, dir, dataDir, keys, alice: as(keys.alice), bob: as(keys.bob) };
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    socket.once('connect', () => { socket.destroy(); done(true); });
    socket.once('error', () => done(false));
  });
}

/** This machine's first IPv4 address that is not loopback. */
const externalAddress = () => Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/** The TCP ports a process listens on (its socket fds matched with /proc/net/tcp's LISTEN rows). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch { /* closed meanwhile */ }
  }
  const ports: number[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A' && inodes.has(cols[9] ?? '')) ports.push(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

const noAddress = externalAddress() ? false : 'this machine has no non-loopback IPv4 address';

t.test('a running driver\'s Spark UI answers on loopback only, to the proxy alone', { skip: skip || noAddress }, async (t) => {
  const address = externalAddress()!;
  const { dir, dataDir, alice, bob } = await service(t);
  const main = join(dir, 'waits.py');
  writeFileSync(main, 'import time\nfrom pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate()\ntime.sleep(900)\n', { mode: 0o644 });
  chmodSync(dir, 0o711); // the driver's user reads its main file (the data dir below stays 0700)
  const created = await alice('POST', '/api/apps/', { jobName: 'waits', configOverrides: { type: 'Python', mainApplicationFile: `local://${main}` } });
  t.equal(created.status, 201, created.text);
  const appName = created.json.appName as string;
  t.teardown(() => alice('POST', `/api/apps/${appName}/stop`));
  await waitForState(() => alice('GET', `/api/apps/${appName}`).then((r) => r.json), 'RUNNING', { timeoutMs: 240_000 });
  const ui = `/dashboard/apps/${appName}/spark-ui/jobs/`;
  // Spark answers 200 "Spark is starting up" before its UI is ready.
  await until(async () => /Spark Jobs/.test((await alice('GET', ui)).text), { timeoutMs: 240_000, intervalMs: 500, what: 'the driver\'s UI through the proxy' });
  t.match((await alice('GET', ui)).text, /Spark Jobs/, 'its owner opens the UI through the proxy');
  t.equal((await bob('GET', ui)).status, 403, 'another user is refused by the proxy');
  const port = storedApp(dataDir, appName)?.run?.uiPort;
  t.ok(port, 'the record names the UI port');
  t.ok(await accepts('127.0.0.1', port!), 'the UI port is open on loopback (for the proxy)');
  // What another user's driver on this machine would try: the port on loopback, without the proxy.
  for (const path of ['/jobs/', '/environment/', '/api/v1/applications', '/jobs/job/kill/?id=0']) {
    const direct = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual' }).catch(() => undefined);
    t.equal(direct?.status, 403, `a process on loopback without the run's secret is refused at ${path} (${direct?.status})`);
  }
  t.match((await alice('GET', ui)).text, /Spark Jobs/, 'while the proxy still opens it');
  t.notOk(await accepts(address, port!), `the UI port is closed on ${address}, the machine's network address`);
});

t.test('the History Server answers the service alone; the owner\'s history view works', { skip }, async (t) => {
  const { api, dataDir, keys, alice, bob } = await service(t);
  const pi = `local://${join(repoRoot, 'examples', 'pi.py')}`;
  const created = await alice('POST', '/api/apps/', { jobName: 'pi', configOverrides: { type: 'Python', mainApplicationFile: pi, arguments: ['2'] } });
  t.equal(created.status, 201, created.text);
  const appName = created.json.appName as string;
  await waitForState(() => alice('GET', `/api/apps/${appName}`).then((r) => r.json), 'COMPLETED', { timeoutMs: 240_000 });
  await until(async () => (await alice('GET', `/api/apps/${appName}`)).json.sparkUi?.state === 'history', { timeoutMs: 60_000, what: 'the history state' });
  // The first open starts the History Server (a JVM; the filter is compiled at first need).
  const jobs = `/dashboard/apps/${appName}/spark-ui/jobs/`;
  await until(async () => (await alice('GET', jobs)).status === 200, { timeoutMs: 300_000, intervalMs: 1000, what: 'the run\'s history through the proxy' });
  t.match((await alice('GET', jobs)).text, /Completed Jobs/, 'its owner reads the run\'s jobs through the proxy');
  t.equal((await bob('GET', jobs)).status, 403, 'another user is refused by the proxy');

  const pid = Number(readFileSync(join(dataDir, 'run', 'history-server.pid'), 'utf8').split(' ')[0]);
  const ports = listeningPorts(pid);
  t.ok(ports.length > 0, `the History Server (pid ${pid}) listens (${ports.join(', ')})`);
  for (const port of ports) {
    const direct = await fetch(`http://127.0.0.1:${port}/api/v1/applications`).catch(() => undefined);
    t.ok(direct && [401, 403].includes(direct.status), `a process on loopback without the secret is refused on port ${port} (${direct?.status})`);
    const env = await fetch(`http://127.0.0.1:${port}/history/`).catch(() => undefined);
    t.ok(env && [401, 403].includes(env.status), `its pages too (${env?.status})`);
  }
  // What the finding read: a run's environment page and its whole event log as a zip, asked of the
  // History Server straight, with that run's UI loaded in it (the owner's view above loaded it).
  const entry = readdirSync(join(dataDir, 'spark-events')).find((e) => e.startsWith('eventlog_v2_'));
  const sparkAppId = entry!.slice('eventlog_v2_'.length);
  const runPaths = [`/history/${sparkAppId}/environment/`, `/api/v1/applications/${sparkAppId}/logs`];
  const viaProxy = await alice('GET', `/dashboard/apps/${appName}/spark-ui/environment/`);
  t.ok(viaProxy.status === 200 && viaProxy.text.includes(sparkAppId), `the owner reads the run's environment (${sparkAppId}) through the proxy`);
  const zip = await fetch(`${api.url}/dashboard/apps/${appName}/spark-ui${runPaths[1]}`, { headers: { 'x-api-key': keys.alice } });
  t.equal(zip.status, 200, 'and its event log zip: the paths are the History Server\'s');
  t.equal(Buffer.from(await zip.arrayBuffer()).subarray(0, 2).toString('latin1'), 'PK', 'a zip');
  for (const port of ports) {
    for (const path of runPaths) {
      const direct = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual' }).catch(() => undefined);
      const body = direct ? Buffer.from(await direct.arrayBuffer()) : Buffer.alloc(0);
      t.ok(direct && [401, 403].includes(direct.status), `a process on loopback without the secret is refused at ${path} on port ${port} (${direct?.status})`);
      t.notOk(body.includes(appName) || body.subarray(0, 2).toString('latin1') === 'PK', `and given nothing of the run (${body.length} bytes)`);
    }
  }
  t.notMatch(readFileSync(`/proc/${pid}/cmdline`, 'utf8'), /[0-9a-f]{64}/, 'the secret is not on its command line');
  t.equal(api.child.exitCode, null, 'the service is still up');
});

t.test('a submission may not move a local driver off loopback (400 naming the field), dry run or not', { skip }, async (t) => {
  const { alice } = await service(t);
  const pi = `local://${join(repoRoot, 'examples', 'pi.py')}`;
  const cases: Array<[string, Record<string, unknown>]> = [
    ['configOverrides.engineConf.spark.driver.bindAddress', { engineConf: { 'spark.driver.bindAddress': '0.0.0.0' } }],
    ['configOverrides.engineConf.spark.ui.port', { engineConf: { 'spark.ui.port': '4040' } }],
    ['configOverrides.driver.env.SPARK_LOCAL_IP', { driver: { env: { SPARK_LOCAL_IP: '0.0.0.0' } } }],
    ['configOverrides.engineConf.spark.kubernetes.driverEnv.SPARK_PUBLIC_DNS', { engineConf: { 'spark.kubernetes.driverEnv.SPARK_PUBLIC_DNS': 'x' } }],
  ];
  for (const [field, overrides] of cases) {
    for (const query of ['', '?dryRun=true']) {
      const res = await alice('POST', `/api/apps/${query}`, { jobName: 'rebind', configOverrides: { type: 'Python', mainApplicationFile: pi, ...overrides } });
      t.equal(res.status, 400, `${field}${query}: refused`);
      t.match(res.json?.message, new RegExp(`field "${field.replaceAll('.', '\\.')}".*loopback`), `${field}${query}: the message names the field and why`);
    }
  }
});
