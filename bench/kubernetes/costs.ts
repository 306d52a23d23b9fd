// What a phase of a benchmark cost, per item: the apiserver's requests by verb and resource
// (its own counter `apiserver_request_total`), the watch events it sent
// (`apiserver_watch_events_total`), its calls to mutating webhooks, and the CPU time of each
// process of the test bed (the control plane's Go process, the service's Node process, the
// gateway) and of the bench itself, from /proc. Snapshots before and after; the difference
// divided by the items done.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RawClient, send } from './raw-client.js';

export interface Snapshot { counters: Map<string, number>; cpuMs: Map<string, number> }

/** Linux reports process times in clock ticks; 100 per second on every usual kernel. */
const TICKS_PER_SECOND = 100;

function procStat(pid: number): { ppid: number; comm: string; cpuMs: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    const fields = text.slice(close + 2).split(' '); // fields[0] is the state (field 3)
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    return { ppid: Number(fields[1]), comm: text.slice(text.indexOf('(') + 1, close), cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

/** The test bed's Node children: the webhook (its own process, as the chart runs it) or the notebook gateway. */
function nodeRole(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('webhook') ? 'webhook' : 'notebook gateway';
  } catch {
    return 'notebook gateway';
  }
}

/** The control plane's Go process, as costs name it. */
export const CONTROL_PLANE = 'apiserver + etcd (one Go process)';
const SERVICE = 'service (API, controller)';

/** `servePid` (the service: API, controller) and each of its descendants, named by role, with their CPU ms so far. */
export function testbedProcesses(servePid: number): { pid: number; role: string; cpuMs: number }[] {
  const all = new Map<number, { ppid: number; comm: string; cpuMs: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat) all.set(Number(entry), stat);
  }
  const descends = (pid: number, depth: number): boolean => {
    for (let p = pid, i = 0; i < depth; i++) {
      const parent = all.get(p)?.ppid;
      if (parent === servePid) return true;
      if (parent === undefined || parent <= 1) return false;
      p = parent;
    }
    return false;
  };
  const found: { pid: number; role: string; cpuMs: number }[] = [];
  const serve = all.get(servePid);
  if (serve) found.push({ pid: servePid, role: SERVICE, cpuMs: serve.cpuMs });
  for (const [pid, stat] of all) {
    if (pid === servePid || !descends(pid, 4)) continue;
    found.push({ pid, role: stat.comm === 'testbed' ? CONTROL_PLANE : stat.comm === 'node' ? nodeRole(pid) : stat.comm, cpuMs: stat.cpuMs });
  }
  return found;
}

/** The CPU time of each process of the test bed, by role, and of this bench. */
function processCpu(servePid: number): Map<string, number> {
  const cpu = new Map<string, number>();
  const add = (name: string, ms: number) => cpu.set(name, (cpu.get(name) ?? 0) + ms);
  for (const { role, cpuMs } of testbedProcesses(servePid)) add(role, cpuMs);
  const own = process.cpuUsage();
  add('bench client (this process)', (own.user + own.system) / 1000);
  return cpu;
}

/** Counter lines of interest from the apiserver's /metrics, keyed short (`POST pods`, `watch events Application`). */
async function apiserverCounters(raw: RawClient): Promise<Map<string, number>> {
  const res = await send(raw, '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics of the apiserver: ${res.status}`);
  const counters = new Map<string, number>();
  const add = (key: string, value: number) => counters.set(key, (counters.get(key) ?? 0) + value);
  const label = (line: string, name: string) => new RegExp(`[{,]${name}="([^"]*)"`).exec(line)?.[1] ?? '';
  for (const line of res.body.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('apiserver_request_total{')) {
      const verb = label(line, 'verb');
      if (verb === 'WATCH' || verb === 'CONNECT') continue;
      const sub = label(line, 'subresource');
      add(`${verb} ${label(line, 'resource')}${sub ? `/${sub}` : ''} (${label(line, 'code')})`, value);
    } else if (line.startsWith('apiserver_watch_events_total{')) {
      add(`watch events sent: ${label(line, 'resource') || label(line, 'kind')}`, value);
    } else if (line.startsWith('apiserver_admission_webhook_admission_duration_seconds_count{') && line.includes('type="admit"')) {
      add('mutating webhook calls', value);
    }
  }
  return counters;
}

export async function snapshot(raw: RawClient, servePid: number): Promise<Snapshot> {
  const counters = await apiserverCounters(raw);
  return { counters, cpuMs: processCpu(servePid) };
}

export interface PhaseCosts {
  /** Per item: requests by verb/resource/code, watch events, webhook calls. */
  requests: Record<string, number>;
  /** Per item, ms of CPU by process. */
  cpuMs: Record<string, number>;
}

/** (after - before) / items, leaving out what did not move. The /metrics reads themselves are left out too. */
export function perItem(before: Snapshot, after: Snapshot, items: number): PhaseCosts {
  const diff = (a: Map<string, number>, b: Map<string, number>) => {
    const out: Record<string, number> = {};
    for (const [key, value] of b) {
      const delta = value - (a.get(key) ?? 0);
      if (delta > 0 && !key.startsWith('GET metrics')) out[key] = delta / items;
    }
    return out;
  };
  return { requests: diff(before.counters, after.counters), cpuMs: diff(before.cpuMs, after.cpuMs) };
}

/** The pid `testbed up` wrote for its serving process. */
export function servePid(clusterDir: string): number {
  return (JSON.parse(readFileSync(join(clusterDir, 'state.json'), 'utf8')) as { pid: number }).pid;
}
