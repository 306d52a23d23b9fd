// The gateway's answers to bad requests and bad frames, and a driver that dies, against
// `submission-service local --auth on` with real kernels (ipykernel + pyspark in the driver).
import t from 'tap';
import WebSocket from 'ws';
import { storedApps } from '../helpers/drivers.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { KernelClient, keyedDataDir } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test('errors, frames and a dead driver', { skip, timeout: 600_000 }, async (t) => {
  const { dataDir, key, admin } = keyedDataDir(t, 'gateway');
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on'] });
  const gw = (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `token ${key}` }) =>
    http(service.url, method, `/notebooks${path}`, body, headers);
  const api = (method: string, path: string, body?: unknown) => http(service.url, method, path, body, { 'x-api-key': admin });

  t.test('authentication', async (t) => {
    for (const [what, headers] of [['no token', {}], ['an empty token', { authorization: 'token ' }], ['a wrong token', { authorization: 'token ssk_wrong' }]] as const) {
      const res = await gw('GET', '/api/kernels', undefined, headers);
      t.equal(res.status, 401, what);
      t.equal(res.json.reason, 'Unauthorized', `${what}: JSON with reason`);
      t.type(res.json.message, 'string', `${what}: and message`);
    }
    t.equal((await http(service.url, 'GET', `/notebooks/api/kernels?token=${key}`)).status, 200, '?token= is accepted');
    const ws = new WebSocket(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/00000000-0000-0000-0000-000000000000/channels`);
    const status = await new Promise((ok) => ws.once('unexpected-response', (_req, res) => ok(res.statusCode)));
    t.equal(status, 401, 'the websocket upgrade needs the key too');
  });

  t.test('unknown kernels and specs', async (t) => {
    const unknown = await gw('GET', '/api/kernels/00000000-0000-0000-0000-000000000000');
    t.equal(unknown.status, 404);
    t.same(Object.keys(unknown.json).sort(), ['message', 'reason']);
    t.equal((await gw('POST', '/api/kernels/00000000-0000-0000-0000-000000000000/interrupt', {})).status, 404);
    t.equal((await gw('DELETE', '/api/kernels/00000000-0000-0000-0000-000000000000')).status, 404);
    t.equal((await api('POST', '/api/config-templates/', { name: 'short-lived', config: { pythonVersion: '3' } })).status, 201);
    t.equal((await gw('GET', '/api/kernelspecs/short-lived')).status, 200);
    t.equal((await api('DELETE', '/api/config-templates/short-lived')).status, 204);
    const spec = await gw('GET', '/api/kernelspecs/short-lived');
    t.equal(spec.status, 404, 'the spec of a deleted template is gone');
    t.equal(spec.json.reason, 'Not Found');
    t.equal((await gw('POST', '/api/kernels', { name: 'short-lived' })).status, 404, 'and cannot be started');
    t.notOk((await gw('GET', '/api/kernelspecs')).json.kernelspecs['short-lived'], 'nor is it listed');
  });

  t.test('pythonVersion 2: listed as unsupported, refused with 400', async (t) => {
    t.equal((await api('POST', '/api/config-templates/', { name: 'legacy', config: { pythonVersion: '2', engineVersion: '3.5.7' } })).status, 201);
    const listed = (await gw('GET', '/api/kernelspecs')).json.kernelspecs.legacy;
    t.match(listed.spec.display_name, /unsupported/);
    const start = await gw('POST', '/api/kernels', { name: 'legacy' });
    t.equal(start.status, 400);
    t.match(start.json.message, /Python 3 only/);
  });

  t.test('garbage, binary and huge frames do not hurt; a killed driver is dead within 5 s', async (t) => {
    const created = await gw('POST', '/api/kernels', { name: 'default' });
    t.equal(created.status, 201, created.text);
    const id = created.json.id as string;
    const url = `${service.url.replace('http', 'ws')}/notebooks/api/kernels/${id}/channels?token=${key}`;
    const first = await new KernelClient(url).open(t);
    t.equal((await first.execute('1 + 1', 180_000)).result, '2');
    first.ws.send('this is not JSON');
    first.ws.send(Buffer.from([0xff, 0xfe, 0x00, 0x81, 0xc3]), { binary: true });
    first.ws.send(Buffer.from([0xc3, 0x28, 0x7b]), { binary: false }); // a text frame that is not UTF-8
    first.ws.send(JSON.stringify({ channel: 'iopub', header: { msg_id: 'x', msg_type: 'stream' } }));
    t.equal((await first.execute('2 + 2')).result, '4', 'the kernel works after garbage');
    const closed = new Promise<number>((ok) => first.ws.once('close', (code) => ok(code)));
    first.ws.send('x'.repeat(11 * 1024 * 1024));
    t.equal(await closed, 1009, 'a frame over 10 MiB closes that socket (1009), nothing else');
    const second = await new KernelClient(url, first.sessionId).open(t);
    t.equal((await second.execute('3 + 3')).result, '6', 'the kernel works after a huge frame');
    t.equal((await gw('GET', `/api/kernels/${id}`)).status, 200, 'and the gateway answers');

    // The buffers policy: a kernel message with binary buffers reaches the client as text, its JSON whole, buffers [].
    const comm = await second.execute("from comm import create_comm\nc = create_comm(target_name='t', data={'kept': 'yes'}, buffers=[b'\\x00\\x01'])\n'sent'");
    t.equal(comm.result, "'sent'", comm.stderr);
    const opened = second.messages.find((m) => m.header.msg_type === 'comm_open');
    t.ok(opened, 'the comm_open with buffers arrived (as a text frame: the client fails on binary ones)');
    t.same((opened as unknown as { buffers: unknown[] }).buffers, [], 'its buffers dropped');
    t.same(opened!.content.data, { kept: 'yes' }, 'its content kept');

    const run = storedApps(dataDir).find((app) => app.record.labels?.['kernel.submission-service.io/id'] === id)?.run;
    t.ok(run, 'the driver process is known');
    const from = second.messages.length;
    const killed = Date.now();
    process.kill(-run!.pid, 'SIGKILL');
    await second.waitFor((m) => m.header.msg_type === 'status' && m.content.execution_state === 'dead', 120_000, from);
    t.comment(`dead on iopub ${Date.now() - killed} ms after the driver was killed`);
    t.equal((await gw('GET', `/api/kernels/${id}`)).status, 404, 'the kernel is gone from the gateway');
    t.notOk((await gw('GET', '/api/kernels')).json.find((k: { id: string }) => k.id === id), 'and from the list');
  });
});
