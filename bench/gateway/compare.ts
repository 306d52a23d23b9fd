// Our gateway against jupyter-kernel-gateway 3.x (plain ipykernel), each behind its own
// `jupyter server` (same version, same flags), in the same run:
//   1. kernel start → first kernel_info_reply through the Jupyter server (ours with
//      SUBMISSION_SERVICE_KERNEL_SPARK=off in the template: no SparkContext; a local kernel
//      starts Python first, as bin/pyspark does);
//   2. execute round-trip of `1` through the Jupyter server, p50 / p99, and against the gateway
//      directly (what the gateway itself adds, without the Jupyter server's own relay);
//   3. messages per second with K kernels executing at once (20 by default, as the issue asks),
//      beside the ceiling of any gateway: the same workload on plain ipykernels driven straight
//      over ZMQ by one asyncio jupyter_client, no Jupyter server and no gateway
//      (kernel-ceiling.py), and the CPU budget of the peer's round (its kernels' and its Jupyter
//      server's CPU per message: what 2 cores carry with a gateway of no cost);
//   4. ours with Spark: kernel requested → `sc.parallelize([1]).count()` answered, against a
//      plain `SparkSession.builder.getOrCreate()` + the same count in a fresh python;
//   5. the same from the warm pool (`--warm-pool pooled=1`): kernel requested → count answered.
//
//   npx tsc -p . && node --import tsx bench/gateway/compare.ts
//   env: GW_STARTS (3), GW_EXECS (200), GW_KERNELS (20), GW_KERNEL_EXECS (50), GW_SC (1), GW_CLAIMS (3)
import { spawn, spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { http, sparkEnv, startService } from '../../test/helpers/service.js';
import { tempDir } from '../../test/helpers/temp.js';
import { freePort, KernelClient, startJupyter, toolsEnv } from '../../test/gateway/jupyter.js';
import { cpuMs, envNumber, fmt, load, median, percentileSorted, table, treeCpuMs } from '../lib.js';

const STARTS = envNumber('GW_STARTS', 3);
const EXECS = envNumber('GW_EXECS', 200);
const KERNELS = envNumber('GW_KERNELS', 20);
const KERNEL_EXECS = envNumber('GW_KERNEL_EXECS', 50);
const SC_RUNS = envNumber('GW_SC', 1);
const CLAIMS = envNumber('GW_CLAIMS', 3);

const teardowns: Array<() => unknown> = [];
const owner = { teardown: (fn: () => unknown) => { teardowns.push(fn); } };

interface Side { name: string; jupyter: { url: string; token: string; child: { pid?: number } }; spec: string; gatewayPid: number; gatewayUrl: string }

async function startKernel(side: Side): Promise<{ id: string; client: KernelClient; ms: number }> {
  const t0 = performance.now();
  const created = await http(side.jupyter.url, 'POST', `/api/kernels?token=${side.jupyter.token}`, { name: side.spec });
  if (created.status !== 201) throw new Error(`${side.name}: ${created.status} ${created.text}`);
  const client = await new KernelClient(`${side.jupyter.url.replace('http', 'ws')}/api/kernels/${created.json.id}/channels?token=${side.jupyter.token}`).open(owner);
  const msgId = client.send('shell', 'kernel_info_request', {});
  await client.waitFor((m) => m.parent_header?.msg_id === msgId && m.header.msg_type === 'kernel_info_reply', 300_000);
  return { id: created.json.id as string, client, ms: performance.now() - t0 };
}

const signedMs = (ms: number) => `${ms >= 0 ? '+' : '−'}${fmt(Math.abs(ms))} ms`;

/** Round trips against the gateway itself, without a Jupyter server in between: what the gateway adds. */
async function directTrips(side: Side, key: string): Promise<number[]> {
  const auth = { authorization: `token ${key}` };
  const created = await http(side.gatewayUrl, 'POST', '/api/kernels', { name: side.spec }, auth);
  if (created.status !== 201) throw new Error(`${side.name}: ${created.status} ${created.text}`);
  const client = await new KernelClient(`${side.gatewayUrl.replace('http', 'ws')}/api/kernels/${created.json.id}/channels`).open(owner, auth);
  const msgId = client.send('shell', 'kernel_info_request', {});
  await client.waitFor((m) => m.parent_header?.msg_id === msgId && m.header.msg_type === 'kernel_info_reply', 300_000);
  await roundTrips(client, 20); // warm-up
  const trips = await roundTrips(client, EXECS);
  client.ws.close();
  await http(side.gatewayUrl, 'DELETE', `/api/kernels/${created.json.id}`, undefined, auth);
  return trips;
}

async function stopKernel(side: Side, id: string) {
  await http(side.jupyter.url, 'DELETE', `/api/kernels/${id}?token=${side.jupyter.token}`);
}

async function roundTrips(client: KernelClient, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await client.execute('1', 60_000);
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

// eslint-disable-next-line max-lines-per-function -- the five phases of one comparison share the two sides' processes; each phase is its own function already
async function main() {
  const tools = toolsEnv();
  if (!tools) throw new Error('SUBMISSION_SERVICE_TOOLS_ENV is missing');
  const root = tempDir(owner);
  const dataDir = join(root, 'data');
  const key = new FileKeyStore(dataDir).create('user', 'bench').key;
  const admin = new FileKeyStore(dataDir).create('admin', 'bench').key;
  const ours = await startService(owner, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--warm-pool', 'pooled=1', '--kernels-per-key', '0', '--key-core-share', '0'] });
  // --kernels-per-key 0 and --key-core-share 0: the bench holds GW_KERNELS (20) kernels of one key
  // at once, above the default cap of 5 and above one key's share of the cores, which its kernels
  // hold while they live (it measures the gateway, not the caps; Kernel Gateway has neither).
  await http(ours.url, 'POST', '/api/config-templates/', { name: 'plain', config: { pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } } } }, { 'x-api-key': admin });
  await http(ours.url, 'POST', '/api/config-templates/', { name: 'spark', config: { pythonVersion: '3' } }, { 'x-api-key': admin });
  // The same config as `spark`, with a warm pool of one: measured last; ready before anything is measured.
  await http(ours.url, 'POST', '/api/config-templates/', { name: 'pooled', config: { pythonVersion: '3' } }, { 'x-api-key': admin });
  const poolReady = async () => {
    const pools = (await http(ours.url, 'GET', '/notebooks/api/warm-pool', undefined, { authorization: `token ${key}` })).json?.pools as Array<{ ready: number }> | undefined;
    return pools?.[0]?.ready === 1;
  };
  for (const deadline = Date.now() + 300_000; !(await poolReady());) {
    if (Date.now() > deadline) throw new Error('the warm pool did not get ready');
    await new Promise((ok) => setTimeout(ok, 250));
  }

  const kgPort = await freePort();
  const kg = spawn(join(tools, 'bin', 'jupyter'), ['kernelgateway', '--KernelGatewayApp.ip=127.0.0.1', `--KernelGatewayApp.port=${kgPort}`,
    '--KernelGatewayApp.base_url=/notebooks', '--JupyterWebsocketPersonality.list_kernels=True'],
  { env: { ...sparkEnv(), KG_AUTH_TOKEN: key, PATH: `${join(sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV!, 'bin')}:${process.env.PATH}` }, stdio: 'ignore' });
  owner.teardown(() => kg.kill('SIGKILL'));
  // A deadline only so that a stuck start ends: on a busy machine its Python start took over 30 s.
  for (const deadline = Date.now() + 300_000; ;) {
    try { if ((await fetch(`http://127.0.0.1:${kgPort}/notebooks/api/kernelspecs`, { headers: { authorization: `token ${key}` } })).ok) break; } catch { /* starting */ }
    if (Date.now() > deadline) throw new Error('kernel gateway did not start within 300 s');
    await new Promise((ok) => setTimeout(ok, 250));
  }
  const peer: Side = { name: 'kernel gateway', jupyter: await startJupyter(owner, root, `http://127.0.0.1:${kgPort}/notebooks`, key), spec: 'python3', gatewayPid: kg.pid!, gatewayUrl: `http://127.0.0.1:${kgPort}/notebooks` };
  const us: Side = { name: 'ours', jupyter: await startJupyter(owner, root, `${ours.url}/notebooks`, key), spec: 'plain', gatewayPid: ours.child.pid!, gatewayUrl: `${ours.url}/notebooks` };
  const rows: (string | number)[][] = [];

  const latency = new Map<string, (string | number)[]>();
  for (const side of [peer, us]) {
    const starts: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const k = await startKernel(side);
      starts.push(k.ms);
      await stopKernel(side, k.id);
    }
    const k = await startKernel(side);
    await roundTrips(k.client, 20); // warm-up
    const trips = await roundTrips(k.client, EXECS);
    await stopKernel(side, k.id);
    const direct = await directTrips(side, key);
    latency.set(side.name, [fmt(median(starts)), fmt(percentileSorted(trips, 50), 2), fmt(percentileSorted(trips, 99), 2),
      `${fmt(percentileSorted(direct, 50), 2)} / ${fmt(percentileSorted(direct, 99), 2)}`]);
  }

  // Messages/s: K kernels on each side, all started first; rounds in the order ceiling, peer,
  // ours, ours, peer, ceiling, so that a machine whose load drifts favours neither side.
  const many = new Map<Side, Array<{ id: string; client: KernelClient }>>();
  for (const side of [peer, us]) many.set(side, await Promise.all(Array.from({ length: KERNELS }, () => startKernel(side))));
  const totals = new Map<Side, { messages: number; seconds: number; jupyter: number; gateway: number; relay: number }>();
  const ceilingRuns: number[] = [];
  const ceilingRound = () => {
    // No Jupyter server, no gateway; the same kernels as the peer's, the same workload.
    const run = spawnSync(join(sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV!, 'bin', 'python'),
      [join(import.meta.dirname, 'kernel-ceiling.py'), String(KERNELS), String(KERNEL_EXECS)], { env: sparkEnv(), encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`kernel-ceiling.py failed: ${run.stderr}`);
    ceilingRuns.push((JSON.parse(run.stdout.trim().split('\n').pop()!) as { per_second: number }).per_second);
  };
  const round = async (side: Side) => {
    const kernels = many.get(side)!;
    const before = kernels.reduce((n, k) => n + k.client.messages.length, 0);
    // CPU per message, by part: the Jupyter server (the same program on both sides) and the
    // gateway with its kernels (the peer's kernels are its children; ours are the service's).
    const cpu0 = { jupyter: treeCpuMs(side.jupyter.child.pid!), gateway: treeCpuMs(side.gatewayPid), relay: cpuMs(side.gatewayPid) };
    const t0 = performance.now();
    await Promise.all(kernels.map(async (k) => { for (let i = 0; i < KERNEL_EXECS; i++) await k.client.execute('1', 60_000); }));
    const total = totals.get(side) ?? { messages: 0, seconds: 0, jupyter: 0, gateway: 0, relay: 0 };
    total.seconds += (performance.now() - t0) / 1000;
    total.messages += kernels.reduce((n, k) => n + k.client.messages.length, 0) - before;
    total.jupyter += treeCpuMs(side.jupyter.child.pid!) - cpu0.jupyter;
    total.gateway += treeCpuMs(side.gatewayPid) - cpu0.gateway;
    total.relay += cpuMs(side.gatewayPid) - cpu0.relay;
    totals.set(side, total);
  };
  ceilingRound();
  for (const side of [peer, us, us, peer]) await round(side);
  ceilingRound();
  for (const side of [peer, us]) await Promise.all(many.get(side)!.map((k) => stopKernel(side, k.id)));

  const rates = new Map<Side, number>();
  for (const side of [peer, us]) {
    const total = totals.get(side)!;
    const perMessage = (cpuMs: number) => fmt((cpuMs * 1000) / total.messages);
    rates.set(side, total.messages / total.seconds);
    rows.push([side.name, ...latency.get(side.name)!, fmt(total.messages / total.seconds), perMessage(total.jupyter), perMessage(total.gateway), perMessage(total.relay)]);
  }
  const ceiling = ceilingRuns.reduce((a, b) => a + b, 0) / ceilingRuns.length;
  rows.push(['ceiling: plain kernels over ZMQ (Unix sockets), no Jupyter server, no gateway', '', '', '', '', fmt(ceiling), '', '', '']);
  // The CPU budget, from the peer's own round: its kernels' CPU per message (the tree less the
  // gateway process) and the Jupyter server's, which any gateway's path also pays. Even a gateway
  // that cost nothing could not move more messages per second than the cores / that CPU.
  const peerTotal = totals.get(peer)!;
  const kernelUs = ((peerTotal.gateway - peerTotal.relay) * 1000) / peerTotal.messages;
  const jupyterUs = (peerTotal.jupyter * 1000) / peerTotal.messages;
  const cores = cpus().length;
  const budget = (cores * 1e6) / (kernelUs + jupyterUs);

  // Time to a usable sc: ours (kernel requested → count answered) vs a plain getOrCreate().
  const usable = async (spec: string) => {
    const t0 = performance.now();
    const k = await startKernel({ ...us, spec });
    const count = await k.client.execute('sc.parallelize([1]).count()', 300_000);
    const ms = performance.now() - t0;
    await stopKernel(us, k.id);
    if (count.result !== '1') throw new Error(`${spec}: sc.parallelize([1]).count() gave ${count.result}: ${count.stderr}`);
    return ms;
  };
  const python = join(sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV!, 'bin', 'python');
  const plainRun = () => {
    const p0 = performance.now();
    const plain = spawnSync(python, ['-c', 'from pyspark.sql import SparkSession; s = SparkSession.builder.master("local[2]").getOrCreate(); print(s.sparkContext.parallelize([1]).count()); s.stop()'], { env: sparkEnv(), encoding: 'utf8' });
    if (plain.status !== 0) throw new Error(`plain getOrCreate failed: ${plain.stderr}`);
    return performance.now() - p0;
  };
  const oursSc: number[] = [];
  const plainSc: number[] = [];
  for (let i = 0; i < SC_RUNS; i++) {
    oursSc.push(await usable('spark'));
    plainSc.push(plainRun());
  }
  // The warm pool: each claim waits until the pool has refilled (a ready kernel), as a person would find it.
  const claims: number[] = [];
  for (let i = 0; i < CLAIMS; i++) {
    for (const deadline = Date.now() + 300_000; !(await poolReady());) {
      if (Date.now() > deadline) throw new Error('the warm pool did not refill');
      await new Promise((ok) => setTimeout(ok, 250));
    }
    claims.push(await usable('pooled'));
  }

  process.stdout.write(`load average ${load()}\n`);
  process.stdout.write(table(['gateway', `start→kernel_info ms (median of ${STARTS})`, `exec p50 ms (${EXECS})`, 'exec p99 ms', 'direct (no Jupyter server) p50 / p99 ms', `msgs/s, ${KERNELS} kernels`, 'CPU µs/msg: jupyter server', 'CPU µs/msg: gateway + kernels', 'of which the gateway process'], rows) + '\n');
  const peerRate = rates.get(peer)!;
  process.stdout.write(`messages/s (two rounds each, ${KERNELS} kernels × ${KERNEL_EXECS} cells a round) against the kernel gateway's: ours ${(rates.get(us)! / peerRate).toFixed(2)}×, the ceiling ${(ceiling / peerRate).toFixed(2)}× (${ceilingRuns.map((r) => fmt(r)).join(', ')})\n`);
  process.stdout.write(`CPU budget: the peer's kernels ${fmt(kernelUs)} µs/msg + the Jupyter server ${fmt(jupyterUs)} µs/msg: ${cores} cores carry at most ${fmt(budget)} msgs/s with a gateway of no cost = ${(budget / peerRate).toFixed(2)}× the peer\n\n`);
  process.stdout.write(table(['usable sc: kernel requested → sc.parallelize([1]).count() answered', 'ms (median)', 'vs plain getOrCreate + count'], [
    [`plain SparkSession.builder.getOrCreate() in a fresh python (${SC_RUNS})`, fmt(median(plainSc)), ''],
    [`ours, a new kernel (Python first, Spark in the background) (${SC_RUNS})`, fmt(median(oursSc)), signedMs(median(oursSc) - median(plainSc))],
    [`ours, claimed from the warm pool (${CLAIMS})`, fmt(median(claims)), signedMs(median(claims) - median(plainSc))],
  ]) + '\n');
  process.stdout.write(`load average ${load()}\n`);
}

main().then(
  async () => { for (const fn of teardowns.reverse()) await fn(); process.exit(0); },
  async (error: Error) => { process.stderr.write(`${error.stack}\n`); for (const fn of teardowns.reverse()) await fn(); process.exit(1); },
);
