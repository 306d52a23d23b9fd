// Real Jupyter parts for the gateway's tests: a `jupyter server` (jupyter_server 2.x from the
// tools virtualenv) pointed at our gateway, and a small kernel client over a websocket that
// speaks the legacy JSON protocol, as the browser does.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { sparkEnv } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../../lib/free-port.js';

interface TestLike { teardown(fn: () => unknown): void }

export function toolsEnv(): string | undefined {
  const dir = sparkEnv().SUBMISSION_SERVICE_TOOLS_ENV;
  return dir && existsSync(join(dir, 'bin', 'jupyter-server')) ? dir : undefined;
}

export { freePort };

export interface Jupyter { url: string; token: string; child: ChildProcess; output(): string }

/** `jupyter <command>` (server, notebook) with --gateway-url and --GatewayClient.auth_token, ready to use. */
export async function startJupyter(t: TestLike, root: string, gatewayUrl: string, key: string, command = 'server'): Promise<Jupyter> {
  const tools = toolsEnv();
  if (!tools) throw new Error('SUBMISSION_SERVICE_TOOLS_ENV (jupyter_server) is missing');
  const port = await freePort();
  const token = randomUUID();
  const home = join(root, `jupyter-${port}`);
  mkdirSync(join(home, 'notebooks'), { recursive: true });
  const child = spawn(join(tools, 'bin', 'jupyter'), [
    command, '--no-browser', '--ip=127.0.0.1', `--port=${port}`, `--IdentityProvider.token=${token}`, '--allow-root',
    `--ServerApp.root_dir=${join(home, 'notebooks')}`, `--gateway-url=${gatewayUrl}`, `--GatewayClient.auth_token=${key}`,
  ], {
    env: { ...sparkEnv(), JUPYTER_CONFIG_DIR: join(home, 'config'), JUPYTER_DATA_DIR: join(home, 'data'), JUPYTER_RUNTIME_DIR: join(home, 'runtime'), JUPYTER_PLATFORM_DIRS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c) => { output += c; });
  child.stderr!.on('data', (c) => { output += c; });
  const exited = new Promise((ok) => child.once('exit', ok));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 300_000; // a safety net: it ends when the server answers /api/status
  for (;;) {
    if (child.exitCode !== null) throw new Error(`jupyter ${command} exited:\n${output}`);
    try {
      const res = await fetch(`${url}/api/status?token=${token}`);
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`jupyter ${command} did not start:\n${output}`);
    await new Promise((ok) => setTimeout(ok, 250));
  }
  return { url, token, child, output: () => output };
}

export interface Message {
  channel: string;
  header: { msg_id: string; msg_type: string; session?: string };
  parent_header: { msg_id?: string; msg_type?: string };
  content: any;
}

export interface Execution {
  reply: Message;
  stdout: string;
  stderr: string;
  result?: string;
  error?: { ename: string; evalue: string };
}

/** A websocket kernel client, the way a browser talks to /api/kernels/{id}/channels. */
export class KernelClient {
  readonly messages: Message[] = [];
  readonly sessionId: string;
  private waiters: Array<() => void> = [];
  ws!: WebSocket;

  constructor(private readonly url: string, sessionId: string = randomUUID()) {
    this.sessionId = sessionId;
  }

  async open(t: TestLike, headers: Record<string, string> = {}): Promise<this> {
    this.ws = new WebSocket(`${this.url}${this.url.includes('?') ? '&' : '?'}session_id=${this.sessionId}`, { headers });
    t.teardown(() => this.ws.terminate());
    this.ws.on('message', (data, isBinary) => {
      if (isBinary) throw new Error('a binary frame reached the client');
      this.messages.push(JSON.parse(data.toString()) as Message);
      for (const wake of this.waiters.splice(0)) wake();
    });
    await new Promise<void>((ok, fail) => { this.ws.once('open', () => ok()); this.ws.once('error', fail); });
    return this;
  }

  /** Resolves with the first message (from `from` on) that matches, or fails after timeoutMs. */
  async waitFor(match: (m: Message) => boolean, timeoutMs: number, from = 0): Promise<Message> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.slice(from).find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${timeoutMs} ms; got ${this.messages.slice(from).map((m) => m.header.msg_type).join(',')}`);
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, left);
        this.waiters.push(() => { clearTimeout(timer); ok(); });
      });
    }
  }

  send(channel: string, msgType: string, content: object): string {
    const msgId = randomUUID();
    this.ws.send(JSON.stringify({
      channel, header: { msg_id: msgId, msg_type: msgType, session: this.sessionId, username: 'test', version: '5.3', date: new Date().toISOString() },
      parent_header: {}, metadata: {}, content, buffers: [],
    }));
    return msgId;
  }

  /** Runs code; resolves when its reply and its `idle` have arrived. */
  async execute(code: string, timeoutMs = 120_000): Promise<Execution> {
    const from = this.messages.length;
    const msgId = this.send('shell', 'execute_request', { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: true });
    const mine = (m: Message) => m.parent_header?.msg_id === msgId;
    const reply = await this.waitFor((m) => mine(m) && m.header.msg_type === 'execute_reply', timeoutMs, from);
    await this.waitFor((m) => mine(m) && m.header.msg_type === 'status' && m.content.execution_state === 'idle', 60_000, from);
    const own = this.messages.slice(from).filter(mine);
    const stream = (name: string) => own.filter((m) => m.header.msg_type === 'stream' && m.content.name === name).map((m) => m.content.text).join('');
    const result = own.find((m) => m.header.msg_type === 'execute_result')?.content.data['text/plain'];
    const error = own.find((m) => m.header.msg_type === 'error')?.content;
    return { reply, stdout: stream('stdout'), stderr: stream('stderr'), result, error };
  }
}

/** A data dir under a fresh temp root, with a user key (`label`) for the notebooks and an admin key for templates. */
export function keyedDataDir(t: Parameters<typeof tempDir>[0], label: string): { root: string; dataDir: string; key: string; admin: string } {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const store = new FileKeyStore(dataDir);
  return { root, dataDir, key: store.create('user', label).key, admin: store.create('admin', 'templates').key };
}
