// With authentication off (local mode's default), a page of any site could start kernels: the
// gateway's HTTP routes read text/plain and form bodies as JSON (Kernel Gateway's clients send
// those), and such a POST needs no preflight. Now they check Origin as the websockets do
// (gateway/upgrade-guard.ts): a forged Origin is refused with 403 before any kernel starts (the
// kernel list and the application list stay empty); requests without Origin (Jupyter's own
// clients), from the service's own origin or from an --allowed-origins one pass.
import { join } from 'node:path';
import t from 'tap';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

t.test('a cross-site POST to /notebooks starts no kernel', { timeout: 180_000 }, async (t) => {
  const root = tempDir(t);
  const service = await startService(t, {
    dataDir: join(root, 'data'), env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(root) },
    args: ['--allowed-origins', 'https://jupyter.example'],
  });
  const kernels = `${service.url}/notebooks/api/kernels`;
  // What a hostile page's <form> or fetch(..., { mode: 'no-cors' }) sends: no preflight.
  for (const [type, body] of [['text/plain', '{"name":"default"}'], ['application/x-www-form-urlencoded', '{"name":"default"}'], ['application/json', '{}']]) {
    const res = await fetch(kernels, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': type! }, body });
    t.equal(res.status, 403, `${type} from https://evil.example: 403`);
    t.match(await res.json(), { reason: 'Forbidden', message: /https:\/\/evil\.example are not accepted/ });
  }
  const nullOrigin = await fetch(kernels, { method: 'POST', headers: { origin: 'null', 'content-type': 'text/plain' }, body: '{}' });
  t.equal(nullOrigin.status, 403, 'a sandboxed page (Origin: null): 403');
  await nullOrigin.arrayBuffer();

  const listed = await fetch(kernels);
  t.same(await listed.json(), [], 'no kernel was started');
  const apps = await (await fetch(`${service.url}/api/apps/`)).json() as { items: unknown[] };
  t.same(apps.items, [], 'and no application');

  const host = new URL(service.url).host;
  for (const origin of [undefined, `http://${host}`, 'https://jupyter.example']) {
    const res = await fetch(kernels, { headers: origin ? { origin } : {} });
    t.equal(res.status, 200, `${origin ?? 'no Origin (Jupyter\'s clients)'}: served`);
    await res.arrayBuffer();
  }
});
