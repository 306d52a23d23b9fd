// `submission-service cluster up|down`: a real control plane on this machine (etcd,
// kube-apiserver, kube-scheduler from Kubernetes' own Go modules: test/cluster), our
// webhook registered with its CA, and the API in Kubernetes mode against it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { kubeClients } from '../cluster/kubernetes/client.js';
import { createFakeNodes, ensureCrds, ensureNamespace } from '../cluster/kubernetes/bootstrap.js';
import { KubernetesCluster } from '../cluster/kubernetes/kubernetes-cluster.js';
import { loadSessionSecret } from '../dashboard/session-secret.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { createLogger, loggerOptions } from '../lib/logger.js';
import { buildService } from './service.js';
import { packageRoot } from '../lib/package-root.js';
import { startWebhookService } from './webhook-service.js';
import { defaultDataDir, findSpark } from './config.js';
import { FakeKubelet } from '../cluster/testbed/fake-kubelet.js';
import { availableParallelism } from 'node:os';
import { rulesFrom } from './rules.js';
import { freePort } from '../lib/free-port.js';


const options = {
  'node-pools': { type: 'string' },
  nodes: { type: 'boolean', default: false },
  'run-pods': { type: 'boolean', default: false },
  dir: { type: 'string', default: join(defaultDataDir(), 'cluster') },
  port: { type: 'string', default: '0' },
  namespace: { type: 'string', default: 'spark-apps' },
  auth: { type: 'string', default: 'off' },
} as const;


/** The test bed binary: given, or built (once, cached) by test/cluster/build.sh. */
export function testbedBinary(): string {
  const given = process.env.SUBMISSION_SERVICE_TESTBED;
  if (given && existsSync(given)) return given;
  const out = execFileSync('bash', [join(packageRoot, 'test/cluster/build.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return out.trim().split('\n').pop()!;
}

/** Starts the test bed and resolves with its kubeconfig once the apiserver is ready. */
export function startTestbed(dir: string, scheduler: boolean) {
  mkdirSync(dir, { recursive: true });
  const log = openSync(join(dir, 'testbed.log'), 'a');
  const child = spawn(testbedBinary(), ['--dir', dir, ...(scheduler ? ['--scheduler'] : [])], { stdio: ['ignore', 'pipe', log] });
  const ready = new Promise<{ kubeconfig: string; server: string }>((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`the test bed exited (${code}) before it was ready; see ${join(dir, 'testbed.log')}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [word, kubeconfig, server] = line.split(' ');
      if (word === 'READY') ok({ kubeconfig, server });
    });
  });
  return { child, ready };
}

/** Everything in this process; stops it all on SIGTERM. */
interface UpOptions { 'node-pools'?: string; nodes: boolean; 'run-pods': boolean; dir: string; port: string; namespace: string; auth: string }

async function serve(values: UpOptions) {
  const dir = resolve(values.dir);
  rmSync(join(dir, 'state.json'), { force: true });
  const testbed = startTestbed(join(dir, 'testbed'), values.nodes);
  const stopTestbed = () => { if (testbed.child.exitCode === null) testbed.child.kill('SIGTERM'); };
  process.once('exit', stopTestbed);
  const { kubeconfig } = await testbed.ready;
  const clients = kubeClients(kubeconfig);
  const rules = rulesFrom(values['node-pools'], values.namespace);
  await ensureNamespace(clients, values.namespace);
  await ensureCrds(clients);
  if (values.nodes) await createFakeNodes(clients, rules);
  const webhookPort = await freePort();
  const webhook = await startWebhookService({
    clients, rules, certDir: join(dir, 'certs'), port: webhookPort, host: '127.0.0.1',
    dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'],
    registration: { name: 'submission-service', url: `https://127.0.0.1:${webhookPort}/mutate-pods` },
    logger: createLogger('webhook'),
  });
  // A test double for a kubelet: runs driver pods as local Spark processes (README, "cluster up").
  const kubelet = values['run-pods']
    ? new FakeKubelet({ clients, namespace: values.namespace, dataDir: join(dir, 'kubelet'), cores: availableParallelism(), ...findSpark() })
    : undefined;
  await kubelet?.start();
  const cluster = new KubernetesCluster({ clients, namespace: values.namespace });
  await cluster.start();
  const api = await buildService({
    cluster, auth: { enabled: values.auth === 'on', store: new FileKeyStore(join(dir, 'keys')) },
    sessionSecret: loadSessionSecret(join(dir, 'keys')), logger: loggerOptions('api'),
  });
  const baseUrl = await api.listen({ port: Number(values.port), host: '127.0.0.1' });
  const close = async () => {
    await api.close().catch(() => undefined);
    await cluster.close();
    await kubelet?.stop();
    await webhook.close().catch(() => undefined);
    stopTestbed();
    rmSync(join(dir, 'state.json'), { force: true });
    process.exit(0);
  };
  process.once('SIGTERM', () => void close());
  process.once('SIGINT', () => void close());
  writeFileSync(join(dir, 'state.json'), JSON.stringify({ pid: process.pid, baseUrl, kubeconfig, webhook: webhook.url }));
  process.stdout.write(`BASE_URL=${baseUrl}\nKUBECONFIG=${kubeconfig}\n`);
}

function readState(dir: string): { pid: number; baseUrl: string; kubeconfig: string } | undefined {
  try { return JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')); } catch { return undefined; }
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

export async function clusterCommand(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  const { values } = parseArgs({ args: rest, options });
  const dir = resolve(values.dir);
  if (verb === 'serve') { await serve(values); return -1; }
  if (verb === 'up') {
    const running = readState(dir);
    if (running && alive(running.pid)) {
      process.stdout.write(`already up (pid ${running.pid})\nBASE_URL=${running.baseUrl}\nKUBECONFIG=${running.kubeconfig}\n`);
      return 0;
    }
    mkdirSync(dir, { recursive: true });
    rmSync(join(dir, 'state.json'), { force: true });
    const log = openSync(join(dir, 'cluster.log'), 'a');
    const child = spawn(process.execPath, [join(packageRoot, 'bin/submission-service.js'), 'cluster', 'serve', ...rest], { detached: true, stdio: ['ignore', log, log] });
    child.unref();
    process.stderr.write(`starting etcd, kube-apiserver${values.nodes ? ', kube-scheduler' : ''}, the webhook and the API (log: ${join(dir, 'cluster.log')})\n`);
    for (let waited = 0; waited < 600_000; waited += 200) {
      const state = readState(dir);
      if (state && state.pid === child.pid) {
        process.stdout.write(`BASE_URL=${state.baseUrl}\nKUBECONFIG=${state.kubeconfig}\n`);
        return 0;
      }
      if (child.exitCode !== null || !alive(child.pid!)) break;
      await new Promise((ok) => setTimeout(ok, 200));
    }
    process.stderr.write(`cluster up failed; the end of ${join(dir, 'cluster.log')}:\n${readFileSync(join(dir, 'cluster.log'), 'utf8').split('\n').slice(-30).join('\n')}\n`);
    return 1;
  }
  if (verb === 'down') {
    const state = readState(dir);
    if (!state || !alive(state.pid)) { process.stderr.write('not running\n'); return 0; }
    process.kill(state.pid, 'SIGTERM');
    for (let i = 0; i < 150 && alive(state.pid); i++) await new Promise((ok) => setTimeout(ok, 200));
    if (alive(state.pid)) process.kill(state.pid, 'SIGKILL');
    process.stderr.write('stopped\n');
    return 0;
  }
  process.stderr.write('usage: submission-service cluster up|down [--node-pools FILE] [--nodes] [--run-pods] [--dir DIR] [--port N]\n');
  return 2;
}
