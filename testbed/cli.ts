// `testbed up|down` — dev tooling, not part of the product (never in dist/ nor in the package):
// a real control plane on this machine with the webhook, the API in Kubernetes mode and the
// notebook gateway against it. Run from a checkout: `npm run testbed -- up [...]`, or
// `node --import tsx testbed/cli.ts up [...]`. `up` starts `serve` detached and returns once
// it answers; `down` stops it. `up --real-node` makes the node ready for Spark (its pool, label
// and every offered version's runtime image: real-node-spark.ts); `--network-policies` with it
// enforces NetworkPolicies there (node-policy.ts). `import-image FILE` imports an
// OCI archive into the real node's containerd, where pods find it with imagePullPolicy IfNotPresent.
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { testbedArgs } from './entry.js';
import { importImage } from './node-images.js';
import { cleanUpRealNode } from './real-node.js';
import { serve, serveFlags, type ServeState } from './serve.js';

const USAGE = 'usage: testbed up|down [--node-pools FILE] [--nodes] [--run-pods] [--real-node [--network-policies]] [--cluster-only] [--dir DIR] [--port N] [--gateway-port N] [--namespace NS] [--auth on|off] [--s3]\n'
  + '       testbed import-image FILE.tar [--dir DIR]\n';

function readState(dir: string): ServeState | undefined {
  try { return JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as ServeState; } catch { return undefined; }
}

const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

const printState = (state: ServeState) => process.stdout.write(state.baseUrl
  ? `NOTEBOOKS_URL=${state.notebooksUrl}\nBASE_URL=${state.baseUrl}\nKUBECONFIG=${state.kubeconfig}\n` : `KUBECONFIG=${state.kubeconfig}\n`);

async function up(dir: string, rest: string[], what: string): Promise<number> {
  const running = readState(dir);
  if (running && alive(running.pid)) {
    process.stdout.write(`already up (pid ${running.pid})\n`);
    printState(running);
    return 0;
  }
  mkdirSync(dir, { recursive: true });
  rmSync(join(dir, 'state.json'), { force: true });
  const logFile = join(dir, 'cluster.log');
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, testbedArgs(['serve', ...rest]), { detached: true, stdio: ['ignore', log, log] });
  child.unref();
  process.stderr.write(`starting etcd, kube-apiserver${what} (log: ${logFile})\n`);
  // With --real-node, `serve` builds the Spark images first: tens of minutes cold, seconds cached.
  const limitMs = rest.includes('--real-node') ? 90 * 60_000 : 600_000;
  for (let waited = 0; waited < limitMs; waited += 200) {
    const state = readState(dir);
    if (state && state.pid === child.pid) { printState(state); return 0; }
    if (child.exitCode !== null || !alive(child.pid!)) break;
    await sleep(200);
  }
  process.stderr.write(`testbed up failed; the end of ${logFile}:\n${readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n')}\n`);
  return 1;
}

async function down(dir: string): Promise<number> {
  const state = readState(dir);
  if (state && alive(state.pid)) {
    process.kill(state.pid, 'SIGTERM');
    for (let i = 0; i < 150 && alive(state.pid); i++) await sleep(200);
    if (alive(state.pid)) process.kill(state.pid, 'SIGKILL');
    process.stderr.write('stopped\n');
  } else process.stderr.write('not running\n');
  // A real node undone by its own stop leaves nothing to do here; after a crash this removes
  // its mounts, pod network, iptables chains and files and restores the sysctls.
  await cleanUpRealNode(join(dir, 'node'));
  return 0;
}

async function importInto(dir: string, file: string | undefined): Promise<number> {
  const node = readState(dir)?.node;
  if (!file) { process.stderr.write(USAGE); return 2; }
  if (!node) { process.stderr.write('no real node is up here (testbed up --real-node)\n'); return 1; }
  await importImage(node.binDir, node.socket, resolve(file));
  process.stdout.write(`imported ${file} into ${node.name}\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [verb, ...rest] = argv;
  const { values, positionals } = parseArgs({ args: rest, options: serveFlags, allowPositionals: verb === 'import-image' });
  const dir = resolve(values.dir);
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  switch (verb) {
    case 'serve': await serve(dir, values); return -1;
    case 'up': return up(dir, rest, `${values.nodes || values['real-node'] ? ', kube-scheduler' : ''}${values['real-node'] ? ', the controllers, containerd and the kubelet' : ''}${values['network-policies'] ? ', kube-router\'s policy controller' : ''}`
      + (values['cluster-only'] ? '' : ', the webhook, the API and the notebook gateway'));
    case 'down': return down(dir);
    case 'import-image': return importInto(dir, positionals[0]);
    default: process.stderr.write(USAGE); return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => { if (code !== -1) process.exitCode = code; },
  (error: Error) => {
    process.stderr.write(`testbed: ${error.message}\n`);
    // exit, not exitCode: a half-started `serve` holds sockets open; the exit hooks stop its children.
    process.exit(1);
  },
);
