// The lifecycle checks a kernel must pass wherever it runs (local mode, the test bed), through a
// real `jupyter server`: interrupt cancels a long Spark job, restart keeps the kernel's id and
// websocket. The caller says how to reach the Jupyter server's REST API.
import type { Test } from 'tap';
import type { KernelClient, Message } from './jupyter.js';

type Asserts = Pick<Test, 'equal' | 'same'>;

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any; text: string }>;

/** The cell's own thread says when Spark has the job's stage running (Spark's status tracker, not a time waited). */
const LONG_JOB = [
  'import threading, time',
  'def _announce(st=sc.statusTracker()):',
  '    while not st.getActiveStageIds(): time.sleep(0.05)',
  '    print("stage running", flush=True)',
  'threading.Thread(target=_announce, daemon=True).start()',
  'sc.parallelize(range(400), 2).map(lambda x: __import__("time").sleep(0.5)).count()',
].join('\n');

/** Once no job is active (the cancelled one has ended), the last job's status; bounded far above a cancellation. */
const AFTER_JOB = [
  'st = sc.statusTracker()',
  'for _ in range(6000):',
  '    if not st.getActiveJobsIds() and not st.getActiveStageIds(): break',
  '    time.sleep(0.05)',
  'print(len(st.getActiveStageIds()), len(st.getActiveJobsIds()), max(st.getJobIdsForGroup(None)) and st.getJobInfo(max(st.getJobIdsForGroup(None))).status)',
].join('\n');

/** Interrupt a cell running a long Spark job: the cell stops, and the job ends cancelled, not run to its end. */
export async function interruptStopsSparkJob(t: Asserts, client: KernelClient, jp: Call, id: string): Promise<void> {
  const from = client.messages.length;
  const long = client.execute(LONG_JOB, 600_000);
  // The 400 tasks take about 100 s on 2 cores; interrupted once Spark runs them, it ends FAILED (cancelled).
  await client.waitFor((m) => m.header.msg_type === 'stream' && String(m.content.text).includes('stage running'), 300_000, from);
  const interrupt = await jp('POST', `/api/kernels/${id}/interrupt`, {});
  t.equal(interrupt.status, 204, interrupt.text);
  const stopped = await long;
  t.equal(stopped.reply.content.status, 'error');
  t.equal(stopped.error?.ename, 'KeyboardInterrupt');
  const tracker = await client.execute(AFTER_JOB, 600_000);
  t.equal(tracker.stdout.trim(), '0 0 FAILED', 'once nothing runs, the job says FAILED: it was cancelled, not run to its end');
}

/** Restart: same id, same socket, `restarting` then `idle`, a fresh namespace, Spark kept. */
export async function restartKeepsKernel(t: Asserts, client: KernelClient, jp: Call, id: string): Promise<void> {
  await client.execute('x = 42');
  const before = client.messages.length;
  const restart = await jp('POST', `/api/kernels/${id}/restart`, {});
  t.equal(restart.status, 200, restart.text);
  t.equal(restart.json.id, id, 'the kernel keeps its id');
  // The gateway's own statuses (its session), not the kernel's.
  const own = (m: Message) => m.header.msg_type === 'status' && m.header.session === 'gateway';
  const states = () => client.messages.slice(before).filter(own).map((m) => m.content.execution_state);
  await client.waitFor((m) => own(m) && m.content.execution_state === 'idle', 30_000, before);
  t.same(states().slice(0, 2), ['restarting', 'idle'], 'restarting, then idle, on the same websocket');
  const gone = await client.execute('x');
  t.equal(gone.error?.ename, 'NameError', 'the namespace is fresh');
  t.equal((await client.execute('sc.parallelize(range(10)).count()')).result, '10', 'sc works after the restart');
}
