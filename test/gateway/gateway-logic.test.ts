// The gateway's pure parts: the byte-capped queue, jupyter_server's iopub rate limit, the
// re-sync's reconciliation, and how client frames and the gateway's own messages are read and made.
import t from 'tap';
import type { ApiApplication } from '../../gateway/api-client.js';
import { ByteQueue } from '../../gateway/byte-queue.js';
import { IopubRateLimiter } from '../../gateway/iopub-rate-limit.js';
import { reconcileKernels } from '../../gateway/kernel-reconcile.js';
import { parseClientFrame, refusedReply, statusMessage } from '../../gateway/messages.js';

t.test('ByteQueue: hold refuses what does not fit, keep drops the oldest', async (t) => {
  const q = new ByteQueue<{ text: string }>(10);
  t.ok(q.hold({ text: 'abcd' }));
  t.ok(q.hold({ text: 'efgh' }));
  t.notOk(q.hold({ text: 'ijk' }), 'would be 11 bytes');
  t.equal(q.bytes, 8);
  t.equal(q.shift()?.text, 'abcd');
  t.equal(q.bytes, 4);
  const k = new ByteQueue<{ text: string }>(10);
  for (const text of ['aaaa', 'bbbb', 'cccc']) k.keep({ text });
  t.same([...k].map((i) => i.text), ['bbbb', 'cccc'], 'the oldest dropped');
  t.equal(k.keep({ text: 'x'.repeat(11) }), 0, 'bigger than the cap alone: not kept');
  t.same([...k].map((i) => i.text), ['bbbb', 'cccc'], 'and nothing dropped for it');
  const long = new ByteQueue<{ text: string }>(100);
  for (let i = 0; i < 5000; i++) { long.keep({ text: `${i % 10}` }); }
  t.equal(long.length, 100);
  t.equal(long.bytes, 100);
  t.equal([...long][0].text, '0', 'the last 100 of 5000, in order');
});

t.test("iopub rate limit: jupyter_server's semantics", async (t) => {
  const limits = { iopubMsgRate: 2, iopubDataRate: 100, rateWindowSeconds: 1 };
  const r = new IopubRateLimiter(limits);
  t.same(r.admit('stream', null, 1, 0), { send: true });
  t.same(r.admit('stream', null, 1, 0), { send: true });
  t.same(r.admit('stream', null, 1, 0), { send: false, notices: ['messages'] }, 'the third in the window is over 2/s: dropped, said once');
  t.same(r.admit('stream', null, 1, 10), { send: false, notices: [] }, 'still over: dropped silently');
  t.same(r.admit('status', 'busy', 1, 10), { send: true }, 'status is never dropped');
  t.same(r.admit('execute_input', null, 1, 10), { send: true }, 'nor execute_input');
  t.same(r.admit('comm_open', null, 1, 10), { send: true }, 'nor comm_open');
  t.same(r.admit('stream', null, 1, 1000), { send: true }, 'the window passed: resumes below 80% of the limit');
  const d = new IopubRateLimiter(limits);
  t.same(d.admit('stream', null, 90, 0), { send: true });
  t.same(d.admit('stream', null, 20, 0), { send: false, notices: ['data'] }, '110 bytes in 1 s is over 100 bytes/s');
  t.same(d.admit('display_data', null, 5000, 0), { send: false, notices: [] }, 'over either limit, all output stops');
  t.same(new IopubRateLimiter(limits).admit('display_data', null, 5000, 0), { send: true }, 'only stream bytes count for data');
  t.same(d.admit('status', 'idle', 0, 1), { send: true });
  t.same(d.admit('stream', null, 90, 1), { send: true }, 'idle starts afresh');
  const off = new IopubRateLimiter({ iopubMsgRate: 0, iopubDataRate: 0, rateWindowSeconds: 3 });
  for (let i = 0; i < 10_000; i++) if (!off.admit('stream', null, 1e6, 0).send) t.fail('0 turns a limit off');
});

const app = (id: string, state: string, appName = `app-${id}`): ApiApplication =>
  ({ appName, jobName: 'kernel-default', state, labels: { 'kernel.submission-service.io/id': id } });
const idOf = (a: ApiApplication) => a.labels?.['kernel.submission-service.io/id'];

t.test('re-sync reconciles both ways', async (t) => {
  const tracked = [
    { id: 'running', appName: 'app-running', ending: false },
    { id: 'deleted', appName: 'app-deleted', ending: false },
    { id: 'failed', appName: 'app-failed', ending: false },
    { id: 'submitting', appName: '', ending: false },
    { id: 'ending', appName: 'app-ending', ending: true },
  ];
  const plan = reconcileKernels(tracked, [
    app('running', 'RUNNING'), { ...app('failed', 'FAILED'), stateDetail: 'OOMKilled' }, app('new', 'PENDING'), app('old', 'COMPLETED'),
    { appName: 'unlabelled', jobName: 'x', state: 'RUNNING', labels: {} },
  ], idOf);
  t.same(plan.found.map((a) => a.appName), ['app-new'], 'a running application not tracked is found; an ended one is not');
  t.same(plan.gone, [
    { id: 'deleted', reason: 'application app-deleted no longer exists' },
    { id: 'failed', reason: 'application app-failed is FAILED (OOMKilled)' },
  ], 'gone and ended applications leave; one in submission or being ended is left alone');
  t.same(reconcileKernels([], [], idOf), { found: [], gone: [] });
  const copied = { ...app('running', 'FAILED'), appName: 'someone-elses' };
  t.same(reconcileKernels(tracked.slice(0, 1), [copied, app('running', 'RUNNING')], idOf), { found: [], gone: [] },
    "another application with a kernel's id label copied onto it (ended) does not end the kernel");
  t.same(reconcileKernels(tracked.slice(0, 1), [{ ...app('running', 'RUNNING'), appName: 'someone-elses' }], idOf).gone,
    [{ id: 'running', reason: 'application app-running no longer exists' }], 'nor does a copy keep a gone one listed');
  t.same(reconcileKernels(tracked.slice(0, 1), [app('running', 'RUNNING')], idOf), { found: [], gone: [] }, 'a list that matches changes nothing');
});

t.test('client frames: no channel is shell, others are checked', async (t) => {
  const header = { msg_id: 'm1', msg_type: 'execute_request' };
  const bare = parseClientFrame(JSON.stringify({ header, parent_header: {}, content: {} }));
  t.equal(bare?.message.channel, 'shell');
  t.equal((JSON.parse(bare!.text) as { channel: string }).channel, 'shell', 'written into the text the launcher routes by');
  const given = JSON.stringify({ channel: 'control', header, content: {} });
  t.equal(parseClientFrame(given)?.text, given, 'a frame with its channel passes as received');
  t.equal(parseClientFrame(JSON.stringify({ channel: 'iopub', header })), undefined, 'iopub is not for clients');
  t.equal(parseClientFrame(JSON.stringify({ channel: 7, header })), undefined);
  t.equal(parseClientFrame('[1]'), undefined);
  t.equal(parseClientFrame('{"channel":"shell"}'), undefined, 'no header');
  t.equal(parseClientFrame('nope'), undefined);
});

t.test("the gateway's own messages", async (t) => {
  const status = statusMessage('restarting');
  t.equal(status.parent_header.msg_type, 'kernel_info_request');
  t.type(status.parent_header.msg_id, 'string');
  t.equal(status.header.session, 'gateway');
  const request = { header: { msg_id: 'r1', msg_type: 'complete_request' }, parent_header: {}, metadata: {}, content: {}, channel: 'shell' };
  const reply = refusedReply(request, 'full');
  t.equal(reply?.header.msg_type, 'complete_reply');
  t.equal(reply?.parent_header.msg_id, 'r1');
  t.same(reply?.content, { status: 'error', ename: 'GatewayLimit', evalue: 'full', traceback: [] });
  t.equal(reply?.channel, 'shell');
  t.equal(refusedReply({ ...request, header: { msg_id: 'r2', msg_type: 'input_reply' }, channel: 'stdin' }, 'full'), undefined, 'a reply to the kernel has no reply');
});
