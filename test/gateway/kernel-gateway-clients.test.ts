// The kernel gateway protocol as Kernel Gateway's clients use it (issue 18), against
// `submission-service local` with real kernels: tornado's HTTP client starting a
// kernel without a JSON Content-Type, `requests` on /api and on a non-UUID id, and cells run to
// completion by jupyter_server's own GatewayKernelManager/GatewayKernelClient, whose websocket
// frames carry no `channel` (they were dropped, and the client hung).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { keyedDataDir, toolsEnv } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : !toolsEnv() ? 'needs the test tools virtualenv' : false;

t.test("Kernel Gateway's clients", { skip, timeout: 600_000 }, async (t) => {
  // Auth off: jupyter_server's GatewayKernelClient opens its websocket with no credentials at all
  // (no header, no ?token=), so it reaches only a gateway without auth. The key is sent anyway.
  const { dataDir, key } = keyedDataDir(t, 'notebook');
  const service = await startService(t, { dataDir, env: sparkEnv() });
  const script = join(import.meta.dirname, 'kernel-gateway-clients.py');
  const { stdout } = await promisify(execFile)(join(toolsEnv()!, 'bin', 'python'), [script, `${service.url}/notebooks`, key], {
    env: sparkEnv(), timeout: 540_000, maxBuffer: 16 * 1024 * 1024,
  });
  const report = JSON.parse(stdout.trim().split('\n').pop()!);
  for (const label of ['no_type', 'text_plain']) {
    t.equal(report[label].status, 201, `${label}: a JSON body is read as JSON whatever the Content-Type (${JSON.stringify(report[label].body)})`);
    t.equal(report[label].body.name, 'default');
    t.equal(report[label].deleted, 204);
  }
  t.equal(report.version.status, 200);
  t.match(report.version.body, { version: /^\d+\.\d+\.\d+/ }, 'GET /notebooks/api answers its version');
  t.same(report.non_uuid, { GET: 404, DELETE: 404, POST: 404 }, 'a non-UUID kernel id is 404');
  const [printed, counted] = report.notebook as Array<Array<{ output_type: string; text?: string; data?: Record<string, string>; status?: string; parent?: boolean }>>;
  t.equal(printed.find((o) => o.output_type === 'stream')?.text, '45\n', 'a cell ran: its frames had no channel');
  t.same(printed.at(-1), { output_type: 'reply', status: 'ok', parent: true }, 'its reply came to its request');
  t.equal(counted.find((o) => o.output_type === 'execute_result')?.data?.['text/plain'], '100', 'and a Spark cell, to completion');
  t.equal((await http(service.url, 'GET', '/notebooks/api/kernels', undefined, { authorization: `token ${key}` })).json.length, 0, 'the client shut its kernel down');
});
