// What one run used, read from its Spark event log one event at a time: peak memory per
// executor, task CPU time against the cores held, idle executor time, spill, GC, duration.
// Pure and bounded: the builder keeps a few numbers per executor, never the events, so a log
// of any size is read in the same memory (cluster/history/run-profile-reader.ts feeds it).
// Local mode has no executors of its own: the driver runs the tasks (`local[N]`), and its
// figures are the executor's.

/** One run's figures; bytes and milliseconds. */
export interface RunProfile {
  sparkAppId: string | null;
  durationMs: number;
  /** Executors seen (the driver counts when it ran the tasks, as in local mode). */
  executors: number;
  /** The most executors alive at once. */
  peakExecutors: number;
  /** Per executor, the highest of each figure any executor reached (0: not recorded). */
  peakJvmHeapBytes: number;
  peakJvmOffHeapBytes: number;
  /** RSS of the executor's process tree (JVM, Python workers, others): 0 unless spark.executor.processTreeMetrics.enabled. */
  peakProcessRssBytes: number;
  /** The most tasks one executor ran at once, and all executors together. */
  peakTasksPerExecutor: number;
  peakTasks: number;
  tasks: number;
  failedTasks: number;
  /** Executor CPU time of every task (Spark's "Executor CPU Time", ns, summed) in ms. */
  taskCpuMs: number;
  taskRunMs: number;
  gcMs: number;
  /** Σ executor cores × the time each executor was held. */
  coreHeldMs: number;
  /** Σ time executors were held with no task running on them (dynamic allocation's waste). */
  executorIdleMs: number;
  /** Σ executor peak memory × held time, for used GiB-hours. */
  usedMemoryByteMs: number;
  /** Σ time non-driver executors were held (0 in local mode): what requested cost scales with. */
  executorHeldMs: number;
  memorySpilledBytes: number;
  diskSpilledBytes: number;
  /** A task or an executor ended from lack of memory (OutOfMemoryError, exit 137, over its limit). */
  memoryFailure: boolean;
}

interface ExecutorState {
  cores: number;
  addedMs: number;
  removedMs: number | undefined;
  running: number;
  /** When the executor last had no task running (undefined while one runs). */
  idleSinceMs: number | undefined;
  idleMs: number;
  peakMemory: number;
}

type Event = Record<string, unknown>;

const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const obj = (value: unknown): Event => (typeof value === 'object' && value !== null ? (value as Event) : {});
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

const MEMORY_FAILURE = /OutOfMemoryError|exit(?:ed with)? code:? ?137|OOMKilled|exceeding memory limits|Container killed .* memory/i;

/** Feed events with `add` in log order, then read `profile()`. */
export class RunProfileBuilder {
  private sparkAppId: string | null = null;
  private startMs: number | undefined;
  private endMs: number | undefined;
  private lastMs = 0;
  private readonly executors = new Map<string, ExecutorState>();
  private alive = 0;
  private coresAlive = 0;
  private peakExecutors = 0;
  private running = 0;
  private readonly figures = {
    peakJvmHeapBytes: 0, peakJvmOffHeapBytes: 0, peakProcessRssBytes: 0, peakTasksPerExecutor: 0, peakTasks: 0,
    tasks: 0, failedTasks: 0, taskCpuMs: 0, taskRunMs: 0, gcMs: 0, memorySpilledBytes: 0, diskSpilledBytes: 0,
  };
  private memoryFailure = false;

  add(event: Event): void {
    const at = num(event.Timestamp);
    if (at > this.lastMs) this.lastMs = at;
    switch (event.Event) {
      case 'SparkListenerApplicationStart':
        this.sparkAppId = str(event['App ID']) || null;
        this.startMs = at;
        break;
      case 'SparkListenerApplicationEnd': this.endMs = at; break;
      case 'SparkListenerExecutorAdded': this.executorAdded(str(event['Executor ID']), at, num(obj(event['Executor Info'])['Total Cores'])); break;
      case 'SparkListenerExecutorRemoved': this.executorRemoved(str(event['Executor ID']), at, str(event['Removed Reason'])); break;
      case 'SparkListenerTaskStart': this.taskStarted(obj(event['Task Info'])); break;
      case 'SparkListenerTaskEnd': this.taskEnded(event); break;
      case 'SparkListenerStageExecutorMetrics': this.memory(str(event['Executor ID']), obj(event['Executor Metrics'])); break;
      case 'SparkListenerExecutorMetricsUpdate':
        for (const update of Array.isArray(event['Executor Metrics Updated']) ? event['Executor Metrics Updated'] : []) {
          this.memory(str(event['Executor ID']), obj(obj(update)['Executor Metrics']));
        }
        break;
      default: break;
    }
  }

  private executorAdded(id: string, at: number, cores: number): void {
    if (this.executors.has(id)) return;
    this.executors.set(id, { cores: Math.max(1, cores), addedMs: at, removedMs: undefined, running: 0, idleSinceMs: at, idleMs: 0, peakMemory: 0 });
    this.alive += 1;
    this.coresAlive += Math.max(1, cores);
    this.peakExecutors = Math.max(this.peakExecutors, this.alive);
  }

  private executorRemoved(id: string, at: number, reason: string): void {
    const executor = this.executors.get(id);
    if (!executor || executor.removedMs !== undefined) return;
    executor.removedMs = at;
    if (executor.idleSinceMs !== undefined) executor.idleMs += Math.max(0, at - executor.idleSinceMs);
    executor.idleSinceMs = undefined;
    this.alive -= 1;
    this.coresAlive -= executor.cores;
    if (MEMORY_FAILURE.test(reason)) this.memoryFailure = true;
  }

  private taskStarted(info: Event): void {
    const executor = this.executors.get(str(info['Executor ID']));
    this.running += 1;
    // Spark posts a task's end after the next task on its slot started: counts are capped by the cores held.
    this.figures.peakTasks = Math.max(this.figures.peakTasks, Math.min(this.running, this.coresAlive));
    if (!executor) return;
    if (executor.running === 0 && executor.idleSinceMs !== undefined) executor.idleMs += Math.max(0, num(info['Launch Time']) - executor.idleSinceMs);
    executor.idleSinceMs = undefined;
    executor.running += 1;
    this.figures.peakTasksPerExecutor = Math.max(this.figures.peakTasksPerExecutor, Math.min(executor.running, executor.cores));
  }



  private taskEnded(event: Event): void {
    const info = obj(event['Task Info']);
    const metrics = obj(event['Task Metrics']);
    const f = this.figures;
    f.tasks += 1;
    this.running = Math.max(0, this.running - 1);
    if (info.Failed === true || info.Killed === true) f.failedTasks += 1;
    f.taskCpuMs += (num(metrics['Executor CPU Time']) + num(metrics['Executor Deserialize CPU Time'])) / 1e6;
    f.taskRunMs += num(metrics['Executor Run Time']);
    f.gcMs += num(metrics['JVM GC Time']);
    f.memorySpilledBytes += num(metrics['Memory Bytes Spilled']);
    f.diskSpilledBytes += num(metrics['Disk Bytes Spilled']);
    const reason = obj(event['Task End Reason']);
    if (MEMORY_FAILURE.test(`${str(reason['Class Name'])} ${str(reason.Description)} ${str(reason['Loss Reason'])} ${str(reason['Exit Code'])}`)) this.memoryFailure = true;
    const id = str(info['Executor ID']);
    this.memory(id, obj(event['Task Executor Metrics']));
    const executor = this.executors.get(id);
    if (!executor || executor.running === 0) return;
    executor.running -= 1;
    if (executor.running === 0) executor.idleSinceMs = num(info['Finish Time']);
  }

  private memory(id: string, metrics: Event): void {
    const f = this.figures;
    const heap = num(metrics.JVMHeapMemory);
    const offHeap = num(metrics.JVMOffHeapMemory);
    // The pod holds the whole process tree: the JVM, PySpark's Python workers, anything else it started.
    const rss = num(metrics.ProcessTreeJVMRSSMemory) + num(metrics.ProcessTreePythonRSSMemory) + num(metrics.ProcessTreeOtherRSSMemory);
    f.peakJvmHeapBytes = Math.max(f.peakJvmHeapBytes, heap);
    f.peakJvmOffHeapBytes = Math.max(f.peakJvmOffHeapBytes, offHeap);
    f.peakProcessRssBytes = Math.max(f.peakProcessRssBytes, rss);
    const executor = this.executors.get(id);
    if (executor) executor.peakMemory = Math.max(executor.peakMemory, rss > 0 ? rss : heap + offHeap);
  }

  profile(): RunProfile {
    const start = this.startMs ?? this.lastMs;
    const end = this.endMs ?? this.lastMs;
    // Local mode: only the driver ran tasks; it is the executor. On a cluster the driver runs none.
    const workers = [...this.executors].filter(([id]) => id !== 'driver');
    const counted = workers.length > 0 ? workers : [...this.executors];
    let coreHeldMs = 0, executorIdleMs = 0, usedMemoryByteMs = 0, executorHeldMs = 0;
    for (const [id, e] of counted) {
      const until = e.removedMs ?? end;
      const held = Math.max(0, until - e.addedMs);
      coreHeldMs += e.cores * held;
      executorIdleMs += e.idleMs + (e.idleSinceMs !== undefined && e.removedMs === undefined ? Math.max(0, end - e.idleSinceMs) : 0);
      usedMemoryByteMs += e.peakMemory * held;
      if (id !== 'driver') executorHeldMs += held;
    }
    return {
      sparkAppId: this.sparkAppId,
      durationMs: Math.max(0, end - start),
      executors: counted.length,
      peakExecutors: workers.length > 0 ? this.peakExecutors - (this.executors.has('driver') ? 1 : 0) : Math.min(1, this.peakExecutors),
      ...this.figures,
      taskCpuMs: Math.round(this.figures.taskCpuMs),
      coreHeldMs,
      executorIdleMs,
      usedMemoryByteMs,
      executorHeldMs,
      memoryFailure: this.memoryFailure,
    };
  }
}

/** A profile from parsed events (tests, small logs); the reader streams instead. */
export function profileOf(events: Iterable<Event>): RunProfile {
  const builder = new RunProfileBuilder();
  for (const event of events) builder.add(event);
  return builder.profile();
}
