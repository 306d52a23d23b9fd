// The test bed's command line: `testbed up --run-pods` (control plane, webhook, API in
// Kubernetes mode and the FakeKubelet test double in one detached process, the notebook
// gateway beside it), the shared acceptance contract against it with --lifecycle
// (examples/pi.py runs as an admitted driver pod; its log comes through the real apiserver),
// then `testbed down`, after which none of its processes is left.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exampleClusterFile, repoRoot } from '../helpers/api.js';
import { eventually } from '../helpers/kubernetes.js';
import { tempDir } from '../helpers/temp.js';
import { testbedArgs } from '../../testbed/entry.js';
// The acceptance contract lives beside the repository, not in it: a clean clone runs the rest
// of this test and says the contract was skipped (SUBMISSION_SERVICE_CONTRACT names another copy).
const contract = process.env.SUBMISSION_SERVICE_CONTRACT ?? join(repoRoot, '..', 'shared', 'acceptance', 'contract.mjs');

function run(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 180_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); fail(new Error(`${args.join(' ')} took over ${timeoutMs} ms: ${stderr}`)); }, timeoutMs);
    child.once('close', (code) => { clearTimeout(timer); ok({ code, stdout, stderr }); }); // after the output is read
  });
}

/** Pids whose command line mentions `text` (the test bed's is `testbed --dir <dir>/testbed`). */
function pidsMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').some((arg) => arg.includes(text))) pids.push(Number(entry));
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

t.test('testbed up --run-pods, the acceptance contract with --lifecycle, testbed down', async (t) => {
  const dir = join(tempDir(t, 'subsvc-up-'), 'cluster');
  // Whatever happens below, nothing of this cluster outlives the test.
  t.teardown(async () => {
    if (existsSync(join(dir, 'state.json'))) await run(testbedArgs(['down', '--dir', dir]), {}, 60_000).catch(() => undefined);
    for (const pid of pidsMentioning(dir)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  });

  const up = await run(testbedArgs(['up', '--node-pools', exampleClusterFile, '--nodes', '--run-pods', '--dir', dir]));
  t.equal(up.code, 0, `testbed up: ${up.stderr.slice(-2000)}`);
  const lines = up.stdout.trim().split('\n');
  const baseUrl = /^BASE_URL=(.+)$/.exec(lines.at(-2) ?? '')?.[1];
  const kubeconfig = /^KUBECONFIG=(.+)$/.exec(lines.at(-1) ?? '')?.[1];
  const notebooksUrl = /^NOTEBOOKS_URL=(.+)$/.exec(lines.at(-3) ?? '')?.[1];
  t.ok(baseUrl, `BASE_URL printed: ${baseUrl}`);
  t.match(notebooksUrl, /^http:\/\/127\.0\.0\.1:\d+\/notebooks$/, `the notebook gateway's URL printed: ${notebooksUrl}`);
  const specs = await fetch(`${notebooksUrl}/api/kernelspecs`);
  t.equal(specs.status, 200, 'the notebook gateway answers');
  t.ok(((await specs.json()) as { kernelspecs: Record<string, unknown> }).kernelspecs.default, 'with its default kernel spec');
  t.ok(kubeconfig && existsSync(kubeconfig), 'KUBECONFIG printed and present');
  const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { pid: number };
  t.ok(alive(state.pid), 'the serving process runs');
  // The control plane, and the webhook run as the chart runs it (its kubeconfig is in there).
  const commands = pidsMentioning(join(dir, 'testbed')).map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'));
  t.equal(commands.filter((args) => !args.includes('webhook')).length, 1, 'one test bed process');
  t.equal(commands.filter((args) => args.includes('webhook')).length, 1, 'the webhook in a process of its own');

  await t.test('the acceptance contract', { skip: existsSync(contract) ? false : `${contract} is not there (a clean clone)` }, async (t) => {
    const acceptance = await run([contract, '--lifecycle'], { BASE_URL: baseUrl, CLUSTER: exampleClusterFile, CHECKOUT: repoRoot, LIFECYCLE_S: '240' }, 300_000);
    t.equal(acceptance.code, 0, `the contract passes:\n${acceptance.stdout.slice(-3000)}`);
    t.match(acceptance.stdout, /\b0 failed\b/);
    t.comment(acceptance.stdout.trim().split('\n').at(-1) ?? '');
  });

  const down = await run(testbedArgs(['down', '--dir', dir]), {}, 60_000);
  t.equal(down.code, 0);
  t.notOk(alive(state.pid), 'the serving process is gone');
  await eventually(async () => pidsMentioning(dir), (pids) => pids.length === 0, { timeoutMs: 60_000, intervalMs: 200, what: 'the test bed to exit' });
  t.pass('no process of the cluster is left');
  t.notOk(existsSync(join(dir, 'state.json')), 'state.json removed');
  const after = await fetch(`${baseUrl}/healthz`).then(() => 'answered', () => 'refused');
  t.equal(after, 'refused', 'the API no longer answers');
  const gatewayAfter = await fetch(`${notebooksUrl}/api/kernelspecs`).then(() => 'answered', () => 'refused');
  t.equal(gatewayAfter, 'refused', 'nor the notebook gateway');
});
