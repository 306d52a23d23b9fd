// `submission-service local` (the built CLI) as a child process for the history's benches, and
// a submission of a Python file of the bench's own.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { NODE_POOLS, ROOT } from '../lib.js';

export async function startLocal(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', dataDir, '--node-pools', NODE_POOLS, '--cores', '2'], {
    env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.once('exit', (code) => fail(new Error(`the service exited (${code})`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /at (http:\/\/[^\s/]+)\/api\//.exec(out);
      if (m) ok(m[1]);
    });
  });
  child.removeAllListeners('exit');
  return { child, url };
}

export async function submit(url: string, file: string, args: string[] = []): Promise<string> {
  // A loaded machine may have the service answer 503 (overloaded, retry): as a client would, retry.
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${url}/api/apps/`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jobName: 'hist', configOverrides: { type: 'Python', mainApplicationFile: `local://${file}`, arguments: args, executor: { cores: 1, instances: 1 } } }),
    });
    if (res.status === 503 && attempt < 30) {
      await res.body?.cancel();
      await new Promise((ok) => setTimeout(ok, 1000));
      continue;
    }
    if (res.status !== 201) throw new Error(`submission answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { appName: string }).appName;
  }
}
