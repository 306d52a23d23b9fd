// The event-log reader and the run profile: a real local run's log (test/fixtures/history,
// written by spark-submit with the service's event-log settings) read line by line, the same
// figures as the events parsed whole; bounded lines; dynamic allocation's idle executors and
// memory failures from synthetic events; and what a run cost.
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { profileOf, runCost, RunProfileBuilder } from '../../domain/index.js';
import { feedEvents, readRunProfile } from '../../cluster/history/run-profile-reader.js';
import { repoRoot } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';

const logs = join(repoRoot, 'test', 'fixtures', 'history', 'event-logs');
const entry = 'eventlog_v2_local-1795819889599';
const fixture = join(logs, entry, 'events_1_local-1795819889599');

t.test('a real run\'s log: its figures, read streaming as parsed whole', async (t) => {
  const profile = await readRunProfile(logs, entry);
  const whole = profileOf(readFileSync(fixture, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>));
  t.same(profile, whole, 'streaming and whole give the same profile');
  t.equal(profile.sparkAppId, 'local-1795819889599');
  t.equal(profile.tasks, 14, 'every task (5 stages of a groupBy and a sort)');
  t.equal(profile.executors, 1, 'local mode: the driver is the executor');
  t.equal(profile.peakTasksPerExecutor, 2, 'local[2]: at most two tasks at once');
  t.ok(profile.durationMs > 10_000 && profile.durationMs < 60_000, `the run's duration (${profile.durationMs} ms)`);
  t.ok(profile.peakJvmHeapBytes > 50 * 2 ** 20, `peak heap (${profile.peakJvmHeapBytes})`);
  t.ok(profile.peakJvmOffHeapBytes > 0, 'peak off-heap');
  t.ok(profile.peakProcessRssBytes >= profile.peakJvmHeapBytes, 'process RSS (processTreeMetrics on)');
  t.ok(profile.taskCpuMs > 0 && profile.taskCpuMs < profile.taskRunMs, 'task CPU time below run time');
  t.ok(profile.coreHeldMs > 1.8 * profile.durationMs && profile.coreHeldMs <= 2 * profile.durationMs, `2 cores held for about the run (${profile.coreHeldMs} ms)`);
  t.ok(profile.coreHeldMs >= profile.taskCpuMs, 'CPU time within the cores held × time');
  t.ok(profile.executorIdleMs > 0 && profile.executorIdleMs < profile.durationMs, 'idle between jobs');
  t.ok(profile.gcMs > 0, 'GC time');
  t.equal(profile.memorySpilledBytes + profile.diskSpilledBytes, 0, 'nothing spilled');
  t.equal(profile.memoryFailure, false);
});

t.test('lines: split anywhere, too long ones skipped, a torn last one ignored', async (t) => {
  const text = readFileSync(fixture, 'utf8');
  const chunks = (size: number) => Readable.from(Array.from({ length: Math.ceil(text.length / size) }, (_, i) => Buffer.from(text.slice(i * size, (i + 1) * size))));
  const reference = new RunProfileBuilder();
  await feedEvents(Readable.from([text]), reference);
  const small = new RunProfileBuilder();
  await feedEvents(chunks(7), small);
  t.same(small.profile(), reference.profile(), 'chunks of 7 characters');
  const long = `{"Event":"SparkListenerTaskEnd","Task Info":{"Executor ID":"driver"},"x":"${'a'.repeat(100_000)}"}\n`;
  const capped = new RunProfileBuilder();
  await feedEvents(Readable.from([text, long, '{"Event":"SparkListenerTaskEnd","Tas']), capped, 64 * 1024);
  t.equal(capped.profile().tasks, 14, 'a line over the cap and a torn one count for nothing');
});

t.test('a compressed log is refused, not misread', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'eventlog_v2_app-1'));
  writeFileSync(join(dir, 'eventlog_v2_app-1', 'events_1_app-1.zstd'), 'binary');
  await t.rejects(readRunProfile(dir, 'eventlog_v2_app-1'), { name: 'CompressedEventLogError', message: /compressed/ });
});

t.test('dynamic allocation: idle executor time, cores held, a memory failure', async (t) => {
  const executor = (id: string, at: number) => ({ Event: 'SparkListenerExecutorAdded', Timestamp: at, 'Executor ID': id, 'Executor Info': { 'Total Cores': 2 } });
  const task = (id: number, on: string, from: number, to: number, extra: object = {}): Record<string, unknown>[] => [
    { Event: 'SparkListenerTaskStart', 'Task Info': { 'Task ID': id, 'Executor ID': on, 'Launch Time': from } },
    { Event: 'SparkListenerTaskEnd', 'Task Info': { 'Task ID': id, 'Executor ID': on, 'Launch Time': from, 'Finish Time': to }, 'Task Metrics': { 'Executor CPU Time': 500e6, 'Executor Run Time': to - from, 'Memory Bytes Spilled': 10, 'Disk Bytes Spilled': 5, 'JVM GC Time': 7 }, 'Task Executor Metrics': { JVMHeapMemory: 300 * 2 ** 20, JVMOffHeapMemory: 50 * 2 ** 20 }, ...extra },
  ];
  // Both tasks start before either ends, as Spark logs tasks that run at once.
  type Event = Record<string, unknown>;
  const interleaved = ([startA, endA]: Event[], [startB, endB]: Event[]) => [startA, startB, endB, endA];
  const profile = profileOf([
    { Event: 'SparkListenerApplicationStart', 'App ID': 'spark-1', Timestamp: 0 },
    executor('1', 1000), executor('2', 1000),
    ...interleaved(task(1, '1', 2000, 4000), task(2, '2', 2000, 3000)),
    { Event: 'SparkListenerExecutorRemoved', Timestamp: 8000, 'Executor ID': '2', 'Removed Reason': 'Executor killed by driver (idle)' },
    ...task(3, '1', 5000, 6000, { 'Task End Reason': { Reason: 'ExecutorLostFailure', 'Loss Reason': 'Container killed: exit code 137 (OOMKilled)' } }),
    { Event: 'SparkListenerApplicationEnd', Timestamp: 10_000 },
  ]);
  t.equal(profile.durationMs, 10_000);
  t.equal(profile.peakExecutors, 2);
  t.equal(profile.peakTasks, 2);
  t.equal(profile.peakTasksPerExecutor, 1);
  // Executor 1: held 1 s..10 s, busy 2-4 s and 5-6 s: idle 1 + 1 + 4 = 6 s. Executor 2: held 1..8 s, busy 2-3 s: idle 6 s.
  t.equal(profile.executorIdleMs, 6000 + 6000, 'idle executor time, each executor');
  t.equal(profile.coreHeldMs, 2 * 9000 + 2 * 7000, 'cores × held time, each executor');
  t.equal(profile.executorHeldMs, 9000 + 7000);
  t.equal(profile.taskCpuMs, 1500);
  t.equal(profile.memorySpilledBytes, 30);
  t.equal(profile.diskSpilledBytes, 15);
  t.equal(profile.gcMs, 21);
  t.equal(profile.peakJvmHeapBytes, 300 * 2 ** 20);
  t.equal(profile.memoryFailure, true, 'an executor lost from memory');
  const cost = runCost({ driver: { cores: 1, memory: '1g' }, executor: { cores: 2, memory: '2g', instances: 4 } }, profile.durationMs, profile, 0.4);
  t.equal(cost.requestedCoreHours, Math.round(((1 * 10_000 + 2 * 16_000) / 3_600_000) * 1e6) / 1e6, 'requested: the driver for the run, executors for as long as each was held');
  t.equal(cost.usedCoreHours, Math.round((1500 / 3_600_000) * 1e6) / 1e6, 'used: task CPU time');
  t.ok(cost.usedGibHours! > 0 && cost.requestedGibHours > cost.usedGibHours!, 'GiB-hours used below requested');
  t.same(runCost({ executor: { cores: 2, instances: 3 } }, 3_600_000, null, 0.4), { requestedCoreHours: 7, requestedGibHours: 0, usedCoreHours: null, usedGibHours: null }, 'no log: requested from the config, nothing used known');
});
