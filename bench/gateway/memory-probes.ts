// Peak RSS of `submission-service local` under the gateway's memory probes of issue 18, each in
// a fresh service process with a real kernel (ipykernel + pyspark in the driver):
//   held     — a client sends GW_MEM_FRAMES requests of 9 MiB while the kernel starts (before
//              Spark is ready, every request is held);
//   replay   — a cell displays GW_MEM_OUTPUTS outputs of 1 MiB while no client is attached;
//   slow     — the same with a client attached that does not read.
// Outputs are `display_data` (not rate-limited by bytes, only by count), so each byte cap is
// probed on its own. The peak is the service process's VmHWM (/proc), its baseline the VmRSS
// once the kernel is up. `GW_MEM_ROOT=DIR` runs another checkout (built: `npx tsc -p .` there),
// e.g. main before the caps, for the before/after figures.
//
//   npx tsc -p . && node --import tsx bench/gateway/memory-probes.ts [held|replay|slow ...]
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { http, sparkEnv } from '../../test/helpers/service.js';
import { tempDir } from '../../test/helpers/temp.js';
import { killDrivers } from '../../test/helpers/drivers.js';
import { KernelClient } from '../../test/gateway/jupyter.js';
import { envNumber, fmt, load, ROOT, sleep, table } from '../lib.js';

const FRAMES = envNumber('GW_MEM_FRAMES', 150);
const OUTPUTS = envNumber('GW_MEM_OUTPUTS', 500);
const root = process.env.GW_MEM_ROOT ?? ROOT;
const teardowns: Array<() => unknown> = [];
const owner = { teardown: (fn: () => unknown) => { teardowns.push(fn); } };

const statusKb = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
const mib = (kb: number) => kb / 1024;

async function service(): Promise<{ url: string; child: ChildProcess }> {
  const dataDir = join(tempDir(owner), 'data');
  const child = spawn(process.execPath, [join(root, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', dataDir,
    '--node-pools', join(root, 'examples', 'example-cluster.json')], { env: { ...sparkEnv(), LOG_LEVEL: 'error' }, stdio: ['ignore', 'pipe', 'inherit'] });
  // A killed local service cannot end its drivers (they outlive it by design): the kernels would
  // run on after the bench, so they are ended from the records the service left.
  const exited = new Promise((ok) => child.once('exit', ok));
  teardowns.push(async () => { child.kill('SIGKILL'); await exited; killDrivers(dataDir); });
  let output = '';
  const url = await new Promise<string>((ok, fail) => {
    child.stdout!.on('data', (c) => { output += c; const m = /at (http:\/\/[^\s/]+)\/api\//.exec(output); if (m) ok(m[1]); });
    child.once('exit', () => fail(new Error(`the service exited:\n${output}`)));
  });
  return { url, child };
}

async function kernel(url: string): Promise<string> {
  // A loaded machine makes the fresh service answer 503 (under pressure) for a while: retried.
  for (let attempt = 1; ; attempt++) {
    const created = await http(url, 'POST', '/notebooks/api/kernels', { name: 'default' });
    if (created.status === 201) return created.json.id as string;
    if (created.status < 500 || attempt >= 60) throw new Error(created.text);
    await sleep(1000);
  }
}

const channels = (url: string, id: string) => `${url.replace('http', 'ws')}/notebooks/api/kernels/${id}/channels`;
const displays = `from IPython.display import display\nfor i in range(${OUTPUTS}): display({'text/plain': str(i) + 'x' * 1048576}, raw=True)`;

async function idleAgain(url: string, id: string): Promise<void> {
  // The kernel runs cells in order: a second client's `1` is answered only once the probe's cell
  // has ended. (Polling the listed state for busy-then-idle missed a cell that ended between polls.)
  const follower = await new KernelClient(channels(url, id), 'after').open(owner);
  await follower.execute('1', 600_000);
  follower.ws.terminate();
}

const probes: Record<string, (url: string, pid: number) => Promise<{ baseline: number; note: string }>> = {
  async held(url, pid) {
    const baseline = statusKb(pid, 'VmRSS');
    const id = await kernel(url);
    const ws = new WebSocket(`${channels(url, id)}?session_id=held`, { maxPayload: 64 * 1024 * 1024 });
    await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
    let ready = false;
    ws.on('message', (d) => { if (String(d).includes('"execution_state": "idle"') || String(d).includes('"execution_state":"idle"')) ready = true; });
    const filler = '#'.repeat(9 * 1024 * 1024);
    let sent = 0;
    for (; sent < FRAMES && !ready; sent++) {
      ws.send(JSON.stringify({ channel: 'shell', header: { msg_id: `m${sent}`, msg_type: 'execute_request', session: 'held', username: 'b', version: '5.3', date: '' }, parent_header: {}, metadata: {}, content: { code: `${filler}\n1`, silent: true } }));
      await new Promise<void>((ok) => { const wait = () => (ws.bufferedAmount < 32 * 1024 * 1024 ? ok() : setTimeout(wait, 5)); wait(); });
    }
    ws.close();
    return { baseline, note: `${sent} frames of 9 MiB sent before the kernel was ready` };
  },
  async replay(url, pid) {
    const id = await kernel(url);
    const client = await new KernelClient(channels(url, id), 'away').open(owner);
    await client.execute('1', 300_000);
    const baseline = statusKb(pid, 'VmRSS');
    client.send('shell', 'execute_request', { code: displays, silent: false, store_history: false, user_expressions: {}, allow_stdin: false });
    await client.waitFor((m) => m.header.msg_type === 'status' && m.content.execution_state === 'busy', 60_000, 0);
    client.ws.terminate();
    await idleAgain(url, id);
    return { baseline, note: `${OUTPUTS} outputs of 1 MiB while no client was attached` };
  },
  async slow(url, pid) {
    const id = await kernel(url);
    const client = await new KernelClient(channels(url, id), 'slow').open(owner);
    await client.execute('1', 300_000);
    const baseline = statusKb(pid, 'VmRSS');
    (client.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    client.send('shell', 'execute_request', { code: displays, silent: false, store_history: false, user_expressions: {}, allow_stdin: false });
    await idleAgain(url, id);
    const closed = client.ws.readyState !== WebSocket.OPEN;
    client.ws.terminate();
    return { baseline, note: `${OUTPUTS} outputs of 1 MiB to a client that does not read${closed ? ' (closed by the gateway)' : ''}` };
  },
};

const chosen = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(probes);
const rows: string[][] = [];
console.log(`gateway memory probes on ${root} — load ${load()}`);
try {
  for (const name of chosen) {
    const { url, child } = await service();
    const { baseline, note } = await probes[name](url, child.pid!);
    await sleep(1000);
    rows.push([name, fmt(mib(baseline)), fmt(mib(statusKb(child.pid!, 'VmHWM'))), note]);
    child.kill('SIGKILL');
  }
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
console.log(table(['probe', 'RSS before (MiB)', 'peak RSS (MiB)', 'what'], rows));
console.log(`load ${load()}`);
