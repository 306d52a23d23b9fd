// What the tests of recurring jobs on the real node share (test/kubernetes/real-node-recurring*.test.ts):
// the test programs served to the node's pods from this process, the API's reads and writes of
// applications and schedules on the bed (test/helpers/spark-node.ts), and the figures they print.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';
import { eventually } from './kubernetes.js';
import type { SparkNodeBed } from './spark-node.js';
import { repoRoot } from './api.js';
import { nodeIp } from '../../testbed/real-node.js';
import { LABEL_APP, SCHEDULE_LABEL, SCHEDULE_TICK_LABEL } from '../../domain/index.js';

export const TERMINAL = ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'];
export const MINUTE = 60_000;
/** Generous limits on a loaded machine: each is a safety net, never the check. */
export const RUN_MS = 15 * MINUTE;

export interface Attempt { attempt: number; driverPod: string; exitCode: number | null; reason: string | null; counted?: boolean; startedAt: string | null; endedAt: string | null; memory?: { driver?: string; executor?: string } }
export interface Cost { requestedCoreHours: number; requestedGibHours: number; usedCoreHours: number | null; usedGibHours: number | null }
export interface PodSize { cores?: number; coreRequest?: string; memory?: string; instances?: number }
export interface App {
  appName: string; state: string; stateDetail?: string; attempt?: number; attempts?: Attempt[]; createdAt?: string; startedAt?: string | null; endedAt?: string | null;
  labels: Record<string, string>; submittedBy?: string | null; config: { driver?: PodSize; executor?: PodSize }; transitions: { state: string; at: string; detail?: string }[];
  cost?: Cost;
}
/** GET /api/schedules/{name}: the spec with the status beside it. */
export interface ScheduleView { name: string; suspend?: boolean; lastScheduleTime: string | null; lastRunName: string | null; lastOutcome: string | null; nextRunAt: string | null }

/** The test programs (test/fixtures/recurring), served to the node's pods from this process (the node reaches the machine's address). */
export async function servePrograms(t: { teardown(fn: () => unknown): void }): Promise<(name: string) => string> {
  const dir = join(repoRoot, 'test', 'fixtures', 'recurring');
  const server = createServer((req, res) => {
    const name = /^\/([a-z-]+\.py)$/.exec(req.url ?? '')?.[1];
    let body: Buffer | undefined;
    try { body = name ? readFileSync(join(dir, name)) : undefined; } catch { body = undefined; }
    res.writeHead(body ? 200 : 404, { 'content-type': 'text/x-python' }).end(body ?? 'no such program');
  });
  await new Promise<void>((ok) => server.listen(0, nodeIp(), ok));
  t.teardown(() => new Promise((ok) => server.close(ok)));
  const { port } = server.address() as AddressInfo;
  return (name) => `http://${nodeIp()}:${port}/${name}`;
}

/** A run's tick from its label (tickLabelValue: 20261128T070000Z). */
export const tickTime = (label: string | undefined) => Date.parse((label ?? '').replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
export const seconds = (from?: string | null, to?: string | null) => from && to ? ((Date.parse(to) - Date.parse(from)) / 1000).toFixed(0) : '?';
export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** On a timeout: the application's state, attempts and transitions and its pods' phases and containers, not a truncated JSON. */
async function whereItStands(bed: SparkNodeBed, app: App | null, name: string): Promise<string> {
  const pods = await bed.clients.core.listNamespacedPod({ namespace: bed.namespace, labelSelector: `${LABEL_APP}=${name}` }).then((list) => list.items, () => []);
  const podLines = pods.map((p) => `${p.metadata?.name}: ${p.status?.phase}${p.metadata?.deletionTimestamp ? ' (deleting)' : ''} ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state))}`);
  return [
    `state ${app?.state} (${app?.stateDetail ?? ''})`,
    `attempts ${JSON.stringify(app?.attempts ?? [])}`,
    `transitions ${JSON.stringify(app?.transitions ?? [])}`,
    `pods: ${podLines.join('; ') || 'none'}`,
    `load ${loadAverage()}`,
  ].join('\n');
}

/** What the tests share: the node with the service, the programs' URLs and the API's reads. */
export interface Node {
  bed: SparkNodeBed;
  program: (name: string) => string;
  app: (name: string) => Promise<App>;
  /** Submits (asserting 201 on `t`); the application's name. */
  submit: (t: Test, jobName: string, configOverrides: object) => Promise<string>;
  ended: (name: string) => Promise<App>;
  log: (name: string) => Promise<string>;
  /** A schedule's runs (through the API), oldest tick first. */
  runs: (schedule: string) => Promise<App[]>;
  schedule: (name: string) => Promise<ScheduleView>;
}

export function nodeCalls(bed: SparkNodeBed, program: (name: string) => string): Node {
  const app = async (name: string) => (await bed.call('GET', `/api/apps/${name}`)).json as App;
  return {
    bed, program, app,
    submit: async (t, jobName, configOverrides) => {
      const res = await bed.call('POST', '/api/apps/', { jobName, configOverrides });
      t.equal(res.status, 201, `${jobName} submitted: ${res.body.slice(0, 300)}`);
      return res.json.appName as string;
    },
    ended: (name) => eventually(() => app(name), (a) => TERMINAL.includes(a.state), {
      what: `${name} to end`, timeoutMs: RUN_MS, intervalMs: 1_000,
      // A fresh read: the last poll may be a minute old, or have failed.
      describe: async () => whereItStands(bed, await app(name).catch(() => null), name),
    }),
    log: async (name) => (await bed.call('GET', `/api/apps/${name}/log`)).body,
    runs: async (schedule) => ((await bed.call('GET', `/api/apps/?limit=100&labelSelector=${encodeURIComponent(`${SCHEDULE_LABEL}=${schedule}`)}`)).json.items as App[])
      .sort((a, b) => a.labels[SCHEDULE_TICK_LABEL]!.localeCompare(b.labels[SCHEDULE_TICK_LABEL]!)),
    schedule: async (name) => (await bed.call('GET', `/api/schedules/${name}`)).json as ScheduleView,
  };
}
