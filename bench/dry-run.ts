// Dry-run submissions per second: POST /api/apps/?dryRun=true with a realistic body against
// the real API (buildApi over a LocalCluster), side by side with a bare fastify route that
// only parses the same JSON body (the ceiling). Each server is a child process; autocannon
// runs here. Rounds alternate A, B, A, B so that machine noise hits both alike.
//
//   node --import tsx bench/dry-run.ts
//   env: DRY_RUN_ROUNDS (2 per side), DRY_RUN_SECONDS (10), DRY_RUN_WARMUP_SECONDS (3), DRY_RUN_CONNECTIONS (10)
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { SUBMISSION } from './fixtures.js';
import {
  BENCH_DIR, cpuMs, envNumber, fmt, load, median, percentileSorted, saveSummary, startChildServer, stopChild, table,
} from './lib.js';

const ROUNDS = envNumber('DRY_RUN_ROUNDS', 2);
const SECONDS = envNumber('DRY_RUN_SECONDS', 10);
const WARMUP = envNumber('DRY_RUN_WARMUP_SECONDS', 3);
const CONNECTIONS = envNumber('DRY_RUN_CONNECTIONS', 10);
const GOAL_RATIO = 0.5;
const PATH = '/api/apps/?dryRun=true';
const BODY = JSON.stringify(SUBMISSION);

interface Round { server: string; round: number; rps: number; p50: number; p99: number; requests: number; errors: number; serverCpu: number }

interface Target { name: string; label: string; child: ChildProcess; port: number }

/** One autocannon run; latencies are collected at full (sub-millisecond) precision. */
function cannon(port: number, seconds: number, record: boolean): Promise<{ result: autocannon.Result; latencies: Float64Array }> {
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  return new Promise((ok, fail) => {
    const instance = autocannon({
      url: `http://127.0.0.1:${port}${PATH}`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
      connections: CONNECTIONS,
      duration: seconds,
    }, (error, result) => (error ? fail(error) : ok({ result, latencies: latencies.subarray(0, count).sort() })));
    if (record) {
      instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
        if (status < 200 || status >= 300) return;
        if (count === latencies.length) {
          const grown = new Float64Array(latencies.length * 2);
          grown.set(latencies);
          latencies = grown;
        }
        latencies[count++] = ms;
      });
    }
  });
}

async function check(target: Target): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${target.port}${PATH}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${target.name}: POST ${PATH} answered ${response.status}: ${text.slice(0, 500)}`);
  if (target.name === 'api' && !text.includes('"coreRequest":"3400m"')) throw new Error(`api: unexpected dry-run answer: ${text.slice(0, 500)}`);
}

async function measure(target: Target, round: number): Promise<Round> {
  const cpuBefore = cpuMs(target.child.pid!);
  const { result, latencies } = await cannon(target.port, SECONDS, true);
  const cpuAfter = cpuMs(target.child.pid!);
  const ok = result['2xx'];
  return {
    server: target.name,
    round,
    rps: ok / SECONDS,
    p50: percentileSorted(latencies, 50),
    p99: percentileSorted(latencies, 99),
    requests: ok,
    errors: result.errors + result.timeouts + result.non2xx,
    serverCpu: (cpuAfter - cpuBefore) / (SECONDS * 1000), // cores the server used
  };
}

async function main(): Promise<void> {
  const server = join(BENCH_DIR, 'dry-run-server.ts');
  const targets: Target[] = [];
  try {
    for (const [name, label] of [['api', 'API dry run (buildApi + LocalCluster)'], ['bare', 'bare fastify (ceiling)']] as const) {
      const { child, port } = await startChildServer(server, [name]);
      targets.push({ name, label, child, port });
    }
    for (const target of targets) {
      await check(target);
      process.stderr.write(`dry-run: warming up ${target.name} for ${WARMUP} s\n`);
      await cannon(target.port, WARMUP, false);
    }
    const rounds: Round[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const target of targets) {
        process.stderr.write(`dry-run: round ${round}/${ROUNDS} ${target.name} (${SECONDS} s, ${CONNECTIONS} connections, load ${load()})\n`);
        rounds.push(await measure(target, round));
      }
    }
    report(targets, rounds);
  } finally {
    await Promise.all(targets.map((t) => stopChild(t.child)));
  }
}

function report(targets: Target[], rounds: Round[]): void {
  const per = (name: string) => rounds.filter((r) => r.server === name);
  const summary = Object.fromEntries(targets.map((t) => {
    const rs = per(t.name);
    return [t.name, {
      rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)),
      errors: rs.reduce((a, r) => a + r.errors, 0), serverCpu: median(rs.map((r) => r.serverCpu)),
    }];
  }));
  const ratio = summary.api.rps / summary.bare.rps;
  const lines = [
    `## Dry-run submissions (POST ${PATH}, ${CONNECTIONS} connections, ${SECONDS} s per round, ${ROUNDS} rounds each, alternating)`,
    '',
    table(['round', 'server', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'errors', 'server CPU (cores)'],
      rounds.map((r) => [r.round, r.server, fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.requests), r.errors, fmt(r.serverCpu, 2)])),
    '',
    table(['server', 'median req/s', 'p50 ms', 'p99 ms', 'errors'],
      targets.map((t) => [t.label, fmt(summary[t.name].rps), fmt(summary[t.name].p50, 2), fmt(summary[t.name].p99, 2), summary[t.name].errors])),
    '',
    `API / ceiling: **${fmt(ratio * 100, 1)}%** (goal ≥ ${GOAL_RATIO * 100}%)`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const errors = summary.api.errors + summary.bare.errors;
  saveSummary('dry-run', [
    { bench: 'dry-run', metric: 'API dry run req/s (p50 / p99 ms)', value: `${fmt(summary.api.rps)} (${fmt(summary.api.p50, 2)} / ${fmt(summary.api.p99, 2)})`, goal: '', verdict: 'info' },
    { bench: 'dry-run', metric: 'bare fastify ceiling req/s (p50 / p99 ms)', value: `${fmt(summary.bare.rps)} (${fmt(summary.bare.p50, 2)} / ${fmt(summary.bare.p99, 2)})`, goal: '', verdict: 'info' },
    { bench: 'dry-run', metric: 'API / ceiling', value: `${fmt(ratio * 100, 1)}%${errors ? ` (${errors} errors!)` : ''}`, goal: '≥ 50%', verdict: ratio >= GOAL_RATIO && errors === 0 ? 'ok' : 'below goal' },
  ], { rounds, summary, connections: CONNECTIONS, seconds: SECONDS });
}

await main();
