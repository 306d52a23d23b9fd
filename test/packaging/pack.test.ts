// The package as a user gets it: the repository is built and packed (`npm pack`, so the
// "files" list decides what ships), the tarball is installed with production dependencies
// only in an empty directory, and `submission-service local` is started from there, with
// nothing of the checkout around it. The contract is then walked against it; a file missing
// from the package (a static asset, a schema, the example cluster) fails here.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { killDrivers } from '../helpers/drivers.js';
import { unmountWorkDirs } from '../../cluster/local/work-dir-space.js';
import { sample } from '../helpers/metrics.js';
import { until } from '../helpers/poll.js';
import { http, realSpark, sparkEnv } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const run = (command: string, args: string[], cwd: string) =>
  execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });

/** The checkout's files as git knows them (tracked and new), else every file but the build output. */
function sourceFiles(): string[] {
  try {
    return run('git', ['ls-files', '--cached', '--others', '--exclude-standard'], repoRoot).split('\n').filter(Boolean);
  } catch {
    const out: string[] = [];
    const walk = (rel: string) => {
      for (const entry of readdirSync(join(repoRoot, rel), { withFileTypes: true })) {
        const path = rel ? `${rel}/${entry.name}` : entry.name;
        if (['node_modules', 'dist', '.git'].includes(entry.name)) continue;
        if (entry.isDirectory()) walk(path); else out.push(path);
      }
    };
    walk('');
    return out;
  }
}

t.test('npm pack, install with production dependencies only, run local mode from the installed package', { skip: realSpark() ? false : 'no Spark virtualenv (scripts/setup.sh makes one)' }, async (t) => {
  const root = tempDir(t, 'subsvc-pack-');
  // A copy of the checkout, built there: the test never writes the checkout's own dist/.
  const stage = join(root, 'stage');
  for (const file of sourceFiles()) {
    if (!existsSync(join(repoRoot, file))) continue; // deleted, not yet committed
    mkdirSync(join(stage, file, '..'), { recursive: true });
    cpSync(join(repoRoot, file), join(stage, file));
  }
  symlinkSync(join(repoRoot, 'node_modules'), join(stage, 'node_modules'));
  run(process.execPath, [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], stage);
  const tarball = join(stage, run('npm', ['pack', '--silent'], stage).trim().split('\n').pop()!);
  t.ok(existsSync(tarball), `packed ${tarball}`);

  const shipped = run('tar', ['tzf', tarball], root).split('\n').filter(Boolean).map((p) => p.replace(/^package\//, ''));
  for (const needed of ['bin/submission-service.js', 'dist/cli/main.js', 'dist/schemas/submission.json', 'dashboard/static/index.html', 'gateway/kernel/launcher.py', 'gateway/logos/logo-64x64.png', 'examples/example-cluster.json', 'examples/pi.py', 'manifests/chart/Chart.yaml']) {
    t.ok(shipped.includes(needed), `ships ${needed}`);
  }
  for (const prefix of ['test/', 'bench/', 'testbed/', 'dist/test/', 'dist/bench/', 'dist/testbed/', 'scripts/', 'src/']) {
    t.notOk(shipped.some((p) => p.startsWith(prefix)), `does not ship ${prefix}`);
  }
  t.notOk(shipped.some((p) => p.endsWith('.go') || p.endsWith('.ts')), 'no Go test bed, no TypeScript sources');
  // The test bed is dev tooling: no FakeKubelet (a test double) and no test bed command in the product.
  t.same(shipped.filter((p) => /fake-kubelet|testbed/i.test(p)), [], 'no FakeKubelet or test bed file ships');
  const importsTestbed = shipped.filter((p) => p.endsWith('.js') && /\bfrom ['"][^'"]*(testbed|fake-kubelet)[^'"]*['"]|import\(['"][^'"]*testbed/.test(readFileSync(join(stage, p), 'utf8')));
  t.same(importsTestbed, [], 'and no shipped module imports one');

  // An empty directory, production dependencies only (from npm's cache when it has them).
  const home = join(root, 'installed');
  mkdirSync(home);
  run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock', tarball], home);
  const installed = join(home, 'node_modules', 'submission-service');
  for (const dev of ['typescript', 'tap', 'tsx', 'eslint', 'playwright-core', 'autocannon']) {
    t.notOk(existsSync(join(home, 'node_modules', dev)), `dev dependency ${dev} not installed`);
  }

  const dataDir = join(root, 'data');
  const child = spawn(join(home, 'node_modules', '.bin', 'submission-service'), [
    'local', '--port', '0', '--data-dir', dataDir, '--node-pools', join(installed, 'examples', 'example-cluster.json'), '--cores', '2',
  ], { cwd: home, env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c) => { output += c; });
  child.stderr.on('data', (c) => { output += c; });
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    killDrivers(dataDir);
    unmountWorkDirs(join(dataDir, 'work')); // as root, work dirs are mounts
  });
  await until(() => /at http:\/\/\S+\/api\//.test(output) || child.exitCode !== null, { timeoutMs: 60_000, what: 'the installed service to listen' });
  const base = /at (http:\/\/[^\s/]+)\/api\//.exec(output)?.[1];
  if (!base) throw new Error(`the installed service did not start:\n${output}`);

  const pi = { type: 'Python', mainApplicationFile: `local://${join(installed, 'examples', 'pi.py')}`, arguments: ['2'], executor: { cores: 1 } };
  const dry = await http(base, 'POST', '/api/apps/?dryRun=true', { jobName: 'packed', configOverrides: pi });
  t.equal(dry.status, 200, `dry run: ${dry.text.slice(0, 200)}`);
  t.equal(dry.json.config.driver.coreRequest, '710m', 'sized with the shipped example cluster');
  const created = await http(base, 'POST', '/api/apps/', { jobName: 'packed', configOverrides: pi });
  t.equal(created.status, 201, created.text.slice(0, 300));
  const doomed = await http(base, 'POST', '/api/apps/', { jobName: 'packed', configOverrides: pi });
  t.equal(doomed.status, 201);
  const stopped = await http(base, 'POST', `/api/apps/${doomed.json.appName}/stop`);
  t.equal(stopped.status, 200);
  t.equal(stopped.json.state, 'KILLED');
  const list = await http(base, 'GET', '/api/apps/?jobName=packed');
  t.same(list.json.items.map((a: { appName: string }) => a.appName).sort(), [created.json.appName, doomed.json.appName].sort(), 'list');
  let state = '';
  await until(async () => {
    state = (await http(base, 'GET', `/api/apps/${created.json.appName}`)).json.state as string;
    return ['COMPLETED', 'FAILED', 'UNKNOWN'].includes(state);
  }, { timeoutMs: 180_000, intervalMs: 500, what: 'the packed service\'s Spark app to end' });
  const log = await http(base, 'GET', `/api/apps/${created.json.appName}/log`);
  t.equal(state, 'COMPLETED', `real Spark ran from the installed package (log tail: ${log.text.slice(-300)})`);
  t.match(log.text, /Pi is roughly 3\.\d+/);
  t.equal((await http(base, 'DELETE', `/api/apps/${created.json.appName}`)).status, 204, 'delete');
  t.equal((await http(base, 'GET', `/api/apps/${created.json.appName}`)).status, 404);

  const template = { name: 'packed', config: { executor: { cores: 1 } } };
  t.equal((await http(base, 'POST', '/api/config-templates/', template)).status, 201, 'template create');
  t.equal((await http(base, 'GET', '/api/config-templates/packed')).status, 200, 'template read');
  t.equal((await http(base, 'PUT', '/api/config-templates/packed', template)).status, 200, 'template replace');
  t.equal((await http(base, 'GET', '/api/config-templates/')).json.items.length, 1, 'template list');
  t.equal((await http(base, 'DELETE', '/api/config-templates/packed')).status, 204, 'template delete');

  const openapi = await http(base, 'GET', '/api/openapi.json');
  t.equal(openapi.status, 200);
  t.ok(openapi.json.paths['/api/apps/'], 'OpenAPI document');
  const docs = await http(base, 'GET', '/api/');
  t.equal(docs.status, 200, 'Swagger UI');
  const metrics = await http(base, 'GET', '/metrics');
  t.equal(metrics.status, 200);
  t.equal(sample(metrics.text, 'submission_service_submissions_total', { outcome: 'created' }), 2, '/metrics counts the submissions');
  const dashboard = await http(base, 'GET', '/dashboard/');
  t.equal(dashboard.status, 200);
  t.match(dashboard.text, /<html/i, 'dashboard page');
  const assets = [...dashboard.text.matchAll(/(?:src|href)="(\/dashboard\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  t.ok(assets.length >= 2, `the page names its script and style: ${assets.join(', ')}`);
  for (const asset of assets) t.equal((await http(base, 'GET', asset)).status, 200, `dashboard asset ${asset}`);
  const specs = await http(base, 'GET', '/notebooks/api/kernelspecs');
  t.equal(specs.status, 200, 'the notebook gateway answers from the package');
  t.equal((await http(base, 'GET', '/notebooks/kernelspecs/default/logo-64x64.png')).status, 200, 'its logos ship');
});
