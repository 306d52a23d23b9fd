// The real Spark Connect client (test/connect/client.py in the pyspark[connect] virtualenv that
// scripts/setup.sh builds with SETUP_TEST_TOOLS=1), for the endpoint's tests and bench.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { runCli, sparkEnv } from '../helpers/service.js';
import { storedApp } from '../helpers/drivers.js';

const script = join(import.meta.dirname, 'client.py');

/**
 * The client virtualenv's python for a Spark `version`'s sessions, or undefined when setup has
 * not built it: pyspark[connect] 3.5.7 for 3.x, pyspark-client 4.2.0 for 4.x (both SETUP_TEST_TOOLS=1).
 */
export function connectClientPython(version = '3.5.7'): string | undefined {
  const env = sparkEnv();
  const venv = Number(version.split('.')[0]) >= 4 ? env.SUBMISSION_SERVICE_CONNECT_CLIENT_4_ENV : env.SUBMISSION_SERVICE_CONNECT_CLIENT_ENV;
  const python = venv && join(venv, 'bin', 'python');
  return python && existsSync(python) ? python : undefined;
}

/** Runs `client.py MODE URL ...args` (3.5.7's client) to its end and returns the JSON line it printed. */
export function runConnectClient(mode: string, url: string, ...rest: Array<string | Record<string, string>>): Promise<Record<string, any>> {
  return runConnectClientOf('3.5.7', mode, url, ...rest);
}

/** runConnectClient with the client of Spark `version`. */
export function runConnectClientOf(version: string, mode: string, url: string, ...rest: Array<string | Record<string, string>>): Promise<Record<string, any>> {
  const args = rest.filter((arg): arg is string => typeof arg === 'string');
  const extraEnv = Object.assign({}, ...rest.filter((arg) => typeof arg !== 'string')) as Record<string, string>;
  const python = connectClientPython(version);
  if (!python) return Promise.reject(new Error('the Spark Connect client virtualenv is missing (SETUP_TEST_TOOLS=1 scripts/setup.sh)'));
  return new Promise((resolve, reject) => {
    execFile(python, [script, mode, url, ...args], { env: { ...process.env, SPARK_CONNECT_AUTHENTICATE_TOKEN: '', ...extraEnv }, timeout: 900_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(line) as Record<string, any>);
      } catch {
        // A long tail: a bounded wait (client.py) ends with every thread's stack.
        reject(new Error(`client.py ${mode} printed no result (${error?.message ?? 'exit 0'}):\n${stdout}\n${stderr.slice(-16000)}`));
      }
    });
  });
}

/** The endpoint's port as `submission-service local` printed it. */
export function connectPortOf(output: string): number | undefined {
  const match = /Spark Connect at sc:\/\/localhost:(\d+)\//.exec(output);
  return match ? Number(match[1]) : undefined;
}

/** An admin key made by the CLI in `dataDir` (as an operator would), checked to be made: its secret and its id. */
export async function createAdminKey(t: Test, dataDir: string, env: NodeJS.ProcessEnv, label: string): Promise<{ key: string; id: string }> {
  const created = await runCli(['keys', 'create', '--role', 'admin', '--label', label, '--data-dir', dataDir], env);
  t.equal(created.code, 0, created.stderr);
  return { key: created.stdout.trim(), id: /Created admin key ([0-9a-f]+)\./.exec(created.stderr)?.[1] ?? '' };
}

/**
 * The token local mode gave the Connect server driver of `appName` (data dir `dataDir`), read from
 * its process's environment as any process of the service's own user could (an unsandboxed
 * driver runs as that user): for calls straight to the server, the way the endpoint makes them.
 */
export function serverTokenOf(dataDir: string, appName: string): string {
  const pid = storedApp(dataDir, appName)?.run?.pid;
  if (!pid) throw new Error(`no running driver of ${appName}`);
  const variable = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((entry) => entry.startsWith('SPARK_CONNECT_AUTHENTICATE_TOKEN='));
  if (!variable) throw new Error(`the driver of ${appName} has no Connect server token`);
  return variable.slice(variable.indexOf('=') + 1);
}

/**
 * The URL parameter that sends a Connect server's token in plaintext with the client of Spark
 * `version`: 4.x's `;token=` (to `localhost` only); 3.5 sends a token over TLS only, so as the
 * `authorization` metadata the server's gate reads.
 */
export const serverTokenParam = (version: string, token: string): string =>
  (Number(version.split('.')[0]) >= 4 ? `;token=${token}` : `;authorization=Bearer%20${token}`);
