// The chart's optional process flags: values left empty give no flag (the program's own default
// holds), values set reach the api's and the gateway's arguments, and those arguments mean what
// the values say when the processes' own parsers read them. Rendered by Helm itself.
import type { V1Deployment } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { connectionLimitsFrom } from '../../cli/connection-flags.js';
import { lifecycleFlags, parseLifecycle } from '../../cli/gateway-wiring.js';
import { parseIdempotencyWindow } from '../../submit-api/idempotency.js';
import { chartDir, helm, named, renderChart } from './helm.js';

const API_FLAGS = ['--connections-per-address', '--spark-ui-requests-per-key', '--spark-ui-answer-seconds', '--spark-ui-answer-mib', '--idempotency-window'];
const GATEWAY_FLAGS = ['--kernel-launch-timeout', '--kernel-restart-timeout', '--kernel-interrupt-timeout', '--websocket-ping-interval', '--websocket-ping-timeout'];

type Objects = ReturnType<typeof renderChart>;
const argsOf = (objects: Objects, component: string) =>
  named<V1Deployment>(objects, 'Deployment', `submission-service-${component}`)!.spec!.template.spec!.containers[0].args!;

/** The value each of `flags` has in `args` (absent: not there). */
function flagValues(args: string[], flags: string[]): Record<string, string | undefined> {
  return Object.fromEntries(flags.map((flag) => {
    const at = args.indexOf(flag);
    return [flag.slice(2), at < 0 ? undefined : args[at + 1]];
  }));
}

t.test('unset, the chart passes none of the flags: the programs keep their own defaults', async (t) => {
  const defaults = renderChart();
  t.same(Object.values(flagValues(argsOf(defaults, 'api'), API_FLAGS)).filter((v) => v !== undefined), [], 'api: none');
  t.same(Object.values(flagValues(argsOf(defaults, 'gateway'), GATEWAY_FLAGS)).filter((v) => v !== undefined), [], 'gateway: none');
  const explicitEmpty = renderChart({ 'api.connectionsPerAddress': '', 'notebookService.kernelLaunchTimeoutSeconds': '' });
  t.notOk(argsOf(explicitEmpty, 'api').includes('--connections-per-address'), '"" leaves the flag out');
  t.notOk(argsOf(explicitEmpty, 'gateway').includes('--kernel-launch-timeout'), '"" leaves the flag out');
});

t.test('set with --set, each value becomes its flag, 0 included', async (t) => {
  const objects = renderChart({
    'api.connectionsPerAddress': '0', 'api.sparkUiRequestsPerKey': '8', 'api.sparkUiAnswerSeconds': '60',
    'api.sparkUiAnswerMib': '64', 'api.idempotencyWindow': '90m',
    'notebookService.kernelLaunchTimeoutSeconds': '0', 'notebookService.kernelRestartTimeoutSeconds': '120',
    'notebookService.kernelInterruptTimeoutSeconds': '5', 'notebookService.websocketPingIntervalSeconds': '15',
    'notebookService.websocketPingTimeoutSeconds': '45',
  });
  t.same(flagValues(argsOf(objects, 'api'), API_FLAGS), {
    'connections-per-address': '0', 'spark-ui-requests-per-key': '8', 'spark-ui-answer-seconds': '60', 'spark-ui-answer-mib': '64', 'idempotency-window': '90m',
  });
  t.same(flagValues(argsOf(objects, 'gateway'), GATEWAY_FLAGS), {
    'kernel-launch-timeout': '0', 'kernel-restart-timeout': '120', 'kernel-interrupt-timeout': '5', 'websocket-ping-interval': '15', 'websocket-ping-timeout': '45',
  });
  const partial = renderChart({ 'api.sparkUiAnswerMib': '16' });
  t.same(flagValues(argsOf(partial, 'api'), API_FLAGS), {
    'connections-per-address': undefined, 'spark-ui-requests-per-key': undefined, 'spark-ui-answer-seconds': undefined, 'spark-ui-answer-mib': '16', 'idempotency-window': undefined,
  }, 'only the value set');
});

t.test('from a values file, the processes\' parsers read the flags as the values mean them', async (t) => {
  // A values file's numbers reach templates as floats: a million must stay 1000000, not 1e+06.
  const dir = mkdtempSync(join(tmpdir(), 'ss-chart-flags-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'values.yaml');
  writeFileSync(file, [
    'api: { connectionsPerAddress: 1000000, sparkUiRequestsPerKey: 0, sparkUiAnswerSeconds: 60, sparkUiAnswerMib: 64, idempotencyWindow: 45s }',
    'notebookService: { kernelLaunchTimeoutSeconds: 1200, kernelInterruptTimeoutSeconds: 2.5, websocketPingIntervalSeconds: 0 }',
  ].join('\n'));
  const objects = renderChart({}, ['-f', file]);
  const api = flagValues(argsOf(objects, 'api'), API_FLAGS);
  t.equal(api['connections-per-address'], '1000000');
  t.same(connectionLimitsFrom(api), {
    limits: { connectionsPerAddress: 1_000_000 },
    sparkUiLimits: { requestsPerKey: 0, answerMs: 60_000, answerBytes: 64 * 1024 * 1024 },
  });
  t.equal(parseIdempotencyWindow(api['idempotency-window']!), 45_000);
  const lifecycle = parseLifecycle(flagValues(argsOf(objects, 'gateway'), GATEWAY_FLAGS));
  t.match(lifecycle, { launchTimeoutMs: 1_200_000, interruptTimeoutMs: 2500, pingIntervalMs: 0, restartTimeoutMs: 60_000 },
    'set values as given, the unset restart timeout at the gateway\'s default');
});

t.test('values.schema.json refuses values the processes would refuse', async (t) => {
  for (const set of [
    'api.connectionsPerAddress=-1', 'api.sparkUiAnswerMib=lots', 'api.sparkUiAnswerSeconds=1.5', 'api.idempotencyWindow=soon',
    'notebookService.kernelLaunchTimeoutSeconds=-5', 'notebookService.websocketPingTimeoutSeconds=never',
  ]) {
    const result = helm(['template', 'ss', chartDir, '--set', set]);
    t.not(result.status, 0, `${set} refused`);
    t.match(result.output, new RegExp(set.split('=')[0].split('.')[1]), `${set}: the message names the value`);
  }
});

t.test('the processes know the flags by these names', async (t) => {
  const objects = renderChart({
    'api.connectionsPerAddress': '64', 'api.sparkUiRequestsPerKey': '8', 'api.sparkUiAnswerSeconds': '60', 'api.sparkUiAnswerMib': '64', 'api.idempotencyWindow': '2h',
  });
  const args = argsOf(objects, 'api');
  t.ok(API_FLAGS.every((flag) => args.includes(flag)), 'every api flag rendered');
  // The api's parser is strict; with a kubeconfig that does not exist it stops right after parsing.
  const cli = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', cli, 'api', ...args, '--kubeconfig', '/nonexistent/kubeconfig'], { encoding: 'utf8', timeout: 60_000 });
  t.notMatch(run.stderr, /Unknown option|Unexpected argument|takes a|argument missing/i, 'api: arguments parsed');
  t.match(run.stderr, /nonexistent\/kubeconfig/, 'api: got as far as loading the kubeconfig');
  // The gateway's command line spreads lifecycleFlags (cli/gateway.ts).
  t.same(GATEWAY_FLAGS.filter((flag) => !(flag.slice(2) in lifecycleFlags)), [], 'every gateway flag is one of its lifecycle flags');
});
