// The chart on the test bed's real node, for the tests that install it (test/kubernetes/chart-*.test.ts):
// the images images/build.sh makes, helm against the bed's kubeconfig, and plain HTTP calls
// to the API's Service (its ClusterIP, reachable from the host through kube-proxy's rules).
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { helmBinary } from '../manifests/helm.js';
import { repoRoot } from './api.js';
import { realNodeUnavailable } from './real-node.js';

/** Why the chart cannot be installed on a real node here, or false. */
export function chartNodeUnavailable(): string | false {
  const missing = ['mmdebstrap', 'buildah'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return realNodeUnavailable() ?? (missing.length ? `needs ${missing.join(', ')} (apt-get install mmdebstrap buildah)` : false);
}

/** images/build.sh's archives (built, or found in its cache): `name -> path`. */
export function buildImages(): Map<string, string> {
  const out = execFileSync('bash', [join(repoRoot, 'images', 'build.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 100 * 60_000 });
  return new Map(out.trim().split('\n').map((line) => line.split(' ') as [string, string]));
}

/** The service's version, which tags its image. */
export const serviceVersion = (): string =>
  JSON.parse(execFileSync('node', ['-p', 'JSON.stringify(require("./package.json").version)'], { cwd: repoRoot, encoding: 'utf8' })) as string;

/** The images this repository builds, as values name them for a registry. */
export const imageValues = (version: string) => ({
  image: { repository: 'localhost/submission-service/submission-service', tag: version },
  images: { '3.5.7': 'localhost/submission-service/spark:3.5.7' },
});

/** helm with the bed's kubeconfig. Asynchronous: what the test serves meanwhile keeps running. */
export const helmOn = (kubeconfig: string) => async (args: string[]): Promise<string> =>
  (await promisify(execFile)(helmBinary(), [...args, '--kubeconfig', kubeconfig], { encoding: 'utf8' })).stdout;

export const readyPod = (pod: V1Pod): boolean => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export interface Answer { status: number | string; json?: any; text?: string }

/** One call, answered or failed: the status (or the error's code) and the body. */
export function call(agent: Agent, base: URL, method: string, path: string, key: string, body?: unknown): Promise<Answer> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const req = request({
      agent, host: base.hostname, port: base.port, path, method, timeout: 60_000,
      headers: { authorization: `Bearer ${key}`, ...(data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = text; }
        resolve({ status: res.statusCode!, json, text });
      });
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
    req.end(data);
  });
}

/** One POST with a JSON body. */
export const post = (agent: Agent, base: URL, path: string, key: string, body: unknown): Promise<Answer> => call(agent, base, 'POST', path, key, body);
