// Kubernetes mode's job profiles (cluster/kubernetes/job-profile-store.ts) and the recorder both
// modes share (cluster/profile-recorder.ts), over an in-memory TEST DOUBLE of the apiserver's
// JobProfile objects (resource versions, 404, 409 as the apiserver answers them), a fake clock
// and a fixture event log read by the same reader as the real one. Nothing waits for time.
import { join } from 'node:path';
import t from 'tap';
import { type AppRecord, type Cluster } from '../../cluster/cluster.js';
import { EventFeed } from '../../cluster/events.js';
import { readRunProfile } from '../../cluster/history/run-profile-reader.js';
import { type JobProfileObject, type JobProfileObjects, KubernetesJobProfiles } from '../../cluster/kubernetes/job-profile-store.js';
import { expectedAdmission } from '../../cluster/kubernetes/expected-admission.js';
import { CATCH_UP_MS, ProfileRecorder } from '../../cluster/profile-recorder.js';
import { type AdmissionRules, bareDriverPod, buildRules, type RulesInput, runCost, type RunProfile } from '../../domain/index.js';
import { exampleCluster, repoRoot } from '../helpers/api.js';

const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps' });
const NOW = Date.parse('2026-11-28T03:00:00Z');
const fixture = () => readRunProfile(join(repoRoot, 'test', 'fixtures', 'history', 'event-logs'), 'eventlog_v2_local-1795819889599');

/** A 409 as client-node rejects with it (`code`). */
const conflict = (message: string) => Object.assign(new Error(message), { code: 409 });

/** The apiserver's JobProfiles in memory: every write a new resourceVersion; a stale one or a second create is 409. */
class FakeObjects implements JobProfileObjects {
  readonly objects = new Map<string, JobProfileObject>();
  writes = 0;
  private version = 0;
  /** Runs once before the next replace: another writer's change in between. */
  beforeReplace?: () => void;

  async get(name: string) { const o = this.objects.get(name); return o && structuredClone(o); }
  async create(body: JobProfileObject) {
    const name = body.metadata!.name!;
    if (this.objects.has(name)) throw conflict(`jobprofiles ${name} already exists`);
    return this.put(body);
  }
  async replace(name: string, body: JobProfileObject) {
    const hook = this.beforeReplace;
    this.beforeReplace = undefined;
    hook?.();
    if (body.metadata?.resourceVersion !== this.objects.get(name)?.metadata?.resourceVersion) throw conflict('the object has been modified');
    return this.put(body);
  }
  put(body: JobProfileObject) {
    this.writes += 1;
    const stored = structuredClone({ ...body, metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
    this.objects.set(stored.metadata.name!, stored);
    return structuredClone(stored);
  }
}

let sequence = 0;
function ended(jobName: string, overrides: Partial<AppRecord> = {}): AppRecord {
  sequence += 1;
  const endedAt = new Date(NOW - 60_000 + sequence).toISOString();
  return {
    appName: `${jobName}-run-${sequence}`, jobName, configTemplateName: '', state: 'COMPLETED', createdAt: new Date(NOW - 600_000).toISOString(),
    startedAt: new Date(NOW - 300_000).toISOString(), endedAt, runningExecutors: 0, namespace: 'spark-apps', labels: {}, submittedBy: null,
    config: { executor: { cores: 4, memory: '8g', instances: 1 }, sizing: { fromHistory: 'apply' } }, ...overrides,
  };
}

/** One replica: its copy of the profiles, and its recorder hearing the ended runs it is told of. */
function replica(objects: FakeObjects, leads: { now: boolean }, profile: RunProfile | null, policy: RulesInput = rules) {
  const events = new EventFeed();
  const cluster = { events, submission: async () => undefined } as unknown as Pick<Cluster, 'events' | 'submission'>;
  const profiles = new KubernetesJobProfiles(objects, policy, () => leads.now);
  const recorder = new ProfileRecorder({
    cluster, profiles, rules: policy, readProfile: async () => profile, mayRecord: () => leads.now, now: () => NOW,
    warn: (message, { err }) => { throw new Error(`${message}: ${String(err)}`); },
  });
  const end = async (record: AppRecord) => { events.publish('changed', record); await recorder.idle(); };
  return { profiles, recorder, end };
}

t.test('only the replica holding the Lease writes an ended run into its job\'s JobProfile; the others read it from the watch', async (t) => {
  const objects = new FakeObjects();
  const profile = await fixture();
  const leader = replica(objects, { now: true }, profile);
  const follower = replica(objects, { now: false }, profile);
  const run = ended('etl');
  await Promise.all([leader.end(run), follower.end(run)]);
  t.equal(objects.writes, 1, 'one write, by the leader');
  const stored = objects.objects.get('etl')!;
  t.match(stored, { apiVersion: 'submission-service.io/v1', kind: 'JobProfile', metadata: { name: 'etl' }, spec: { jobName: 'etl' } });
  t.equal(stored.spec!.runs!.length, 1);
  t.match(stored.spec!.runs![0], { appName: run.appName, state: 'COMPLETED', asked: { cores: 4, memory: '8g' }, profile: { sparkAppId: profile.sparkAppId } }, 'the run, its profile read from its event log');
  t.equal(follower.profiles.runs('etl', null), undefined, 'the follower has nothing until its watch delivers');
  follower.profiles.applyObject(stored);
  t.same(follower.profiles.runs('etl', null)!.map((r) => r.appName), [run.appName]);
  t.ok(follower.profiles.costOf(run.appName), 'the run\'s cost is readable on every replica');
  t.ok(follower.profiles.recommendation('etl', null), 'and the recommendation');
  await leader.end(run);
  t.equal(objects.writes, 1, 'a run already recorded is not written again');
});

t.test('a write that meets another writer\'s (409) reads the JobProfile again and keeps both runs', async (t) => {
  const objects = new FakeObjects();
  const a = replica(objects, { now: true }, await fixture());
  const [first, second] = [ended('etl'), ended('etl')];
  await a.end(first);
  // Between a's read and a's replace, a former leader still finishing adds its own run.
  objects.beforeReplace = () => {
    const current = objects.objects.get('etl')!;
    const theirs = { ...current.spec!.runs![0], appName: 'etl-theirs', endedAt: new Date(NOW - 30_000).toISOString() };
    objects.put({ ...current, spec: { ...current.spec!, runs: [...current.spec!.runs!, theirs] } });
  };
  await a.end(second);
  t.same(objects.objects.get('etl')!.spec!.runs!.map((r) => r.appName), [first.appName, second.appName, 'etl-theirs'],
    'the other writer\'s run and this one\'s: none lost to the conflict');
  t.equal(objects.writes, 3, 'the first write, theirs, and this one again after the conflict');
});

t.test('a replica that starts leading catches up on runs that ended in the last hour and are not recorded', async (t) => {
  const objects = new FakeObjects();
  const leads = { now: false };
  const r = replica(objects, leads, null);
  const recent = ended('nightly');
  const old = ended('nightly', { endedAt: new Date(NOW - CATCH_UP_MS - 1000).toISOString() });
  const running = ended('nightly', { state: 'RUNNING', endedAt: null });
  await r.end(recent);
  t.equal(objects.writes, 0, 'not leading: nothing written');
  leads.now = true;
  r.recorder.catchUp([recent, old, running]);
  await r.recorder.idle();
  t.same(objects.objects.get('nightly')!.spec!.runs!.map((x) => x.appName), [recent.appName], 'the recent ended run only');
  t.equal(objects.objects.get('nightly')!.spec!.runs![0].profile, null, 'a run without a readable log is kept, with no profile');
});

t.test('a hand-edited JobProfile: what is not a recorded run is left out; a name that differs from its job is ignored', async (t) => {
  const objects = new FakeObjects();
  const profile = await fixture();
  const r = replica(objects, { now: true }, profile);
  const run = ended('etl');
  await r.end(run);
  const edited = structuredClone(objects.objects.get('etl')!);
  edited.spec!.runs!.push({ appName: 42 } as never, 'junk' as never);
  r.profiles.applyObject(edited);
  t.same(r.profiles.runs('etl', null)!.map((x) => x.appName), [run.appName]);
  r.profiles.applyObject({ metadata: { name: 'other' }, spec: { jobName: 'etl', runs: [] } });
  t.equal(r.profiles.runs('other', null), undefined);
  r.profiles.removeObject({ metadata: { name: 'etl' } });
  t.equal(r.profiles.runs('etl', null), undefined, 'deleted: no history');
  t.equal(r.profiles.costOf(run.appName), undefined);
});

t.test('under apply, the API\'s admission sizes a job from the JobProfile it holds, as the webhook does', async (t) => {
  const objects = new FakeObjects();
  const profile = await fixture();
  const r = replica(objects, { now: true }, profile);
  for (let i = 0; i < 2; i++) await r.end(ended('oversized'));
  const pod = bareDriverPod({ appName: 'oversized-next', jobName: 'oversized', namespace: '', configOverrides: {
    type: 'Python', mainApplicationFile: 'local:///app.py', executor: { cores: 4, memory: '8g', instances: 1 }, sizing: { fromHistory: 'apply' },
  } });
  const admitted = expectedAdmission(pod, 'spark-apps', rules, undefined, false, (job, by) => r.profiles.runs(job, by));
  t.equal(admitted?.outcome, 'admitted');
  if (admitted?.outcome !== 'admitted') return;
  t.ok(admitted.config.executor!.cores! < 4, `fewer cores than asked (${admitted.config.executor!.cores})`);
  const without = expectedAdmission(pod, 'spark-apps', rules, undefined, false, () => undefined);
  t.equal(without?.outcome === 'admitted' && without.config.executor!.cores, 4, 'without the profile: as asked');
});

t.test('after the watched policy changes, the next suggestion and the next run\'s cost follow the new node pools', async (t) => {
  // Pool set B: one small pool (its own name) whose schedulable memory is below what set A's
  // suggestion gives, and a smaller memory overhead, so both figures tell which rules were read.
  const poolsB = buildRules({ namespace: 'spark-apps', sizing: { memoryOverheadFactor: 0.1 }, nodePools: [{
    cloudProvider: 'gce', instanceName: 'b-only-small-4', cpu: 4, memoryMib: 4096, preemptible: false,
    maximumSchedulableCoreRequest: 3.4, maximumSchedulableMemoryRequestMib: 600,
  }] });
  // The watched node-pool file as cli/watched-rules.ts holds it: current() answers the rules in force.
  const watched: { now: AdmissionRules; current(): AdmissionRules } = { now: rules, current() { return this.now; } };
  const objects = new FakeObjects();
  const profile = await fixture();
  const r = replica(objects, { now: true }, profile, watched);
  const first = ended('etl');
  await r.end(first);
  const underA = r.profiles.recommendation('etl', null)!;
  const ceilingB = poolsB.pools[0]!.maximumSchedulableMemoryRequestMib;
  t.ok(parseInt(underA.suggested.memory, 10) > ceilingB, `under A: ${underA.suggested.memory}, more than B's pool can hold`);
  const durationMs = r.profiles.runs('etl', null)![0]!.durationMs;
  t.same(r.profiles.costOf(first.appName), runCost(first.config, durationMs, profile, 0.4), 'the first run costed with A\'s overhead');

  watched.now = poolsB;
  const underB = r.profiles.recommendation('etl', null)!;
  t.equal(underB.suggested.memory, `${ceilingB}m`, 'the next suggestion fits B\'s only pool');
  const asked = first.config;
  t.equal(underB.saving.requestedGibHoursPerRun, runCost(asked, durationMs, null, 0.1).requestedGibHours, 'its saving is priced with B\'s overhead');
  const second = ended('etl');
  await r.end(second);
  const secondRun = r.profiles.runs('etl', null)!.find((run) => run.appName === second.appName)!;
  t.same(r.profiles.costOf(second.appName), runCost(second.config, secondRun.durationMs, profile, 0.1), 'the next run costed with B\'s overhead');
  t.not(r.profiles.costOf(second.appName)!.requestedGibHours, r.profiles.costOf(first.appName)!.requestedGibHours, 'a different figure from A\'s');
  t.same(r.profiles.costOf(first.appName), runCost(first.config, durationMs, profile, 0.4), 'a run recorded before the change keeps the cost it was recorded with');
});

t.test('a JobProfile per job and key: another key\'s runs land in its own, never in the job\'s other keys\' sizing', async (t) => {
  const objects = new FakeObjects();
  const profile = await fixture();
  const r = replica(objects, { now: true }, profile);
  const mine = [ended('etl', { submittedBy: 'a1b2c3' }), ended('etl', { submittedBy: 'a1b2c3' })];
  for (const run of mine) await r.end(run);
  const tiny = replica(objects, { now: true }, { ...profile, peakTasksPerExecutor: 1, peakTasks: 1 });
  for (let i = 0; i < 5; i++) await tiny.end(ended('etl', { submittedBy: 'f00d42' }));
  t.same([...objects.objects.keys()].sort(), ['etl.a1b2c3', 'etl.f00d42'], 'one JobProfile per key, named <job>.<key id>');
  t.equal(objects.objects.get('etl.f00d42')!.spec!.submittedBy, 'f00d42');
  r.profiles.applyObject(objects.objects.get('etl.f00d42')!);
  t.same(r.profiles.runs('etl', 'a1b2c3')!.map((x) => x.appName), mine.map((x) => x.appName), 'key a1b2c3\'s runs only');
  t.equal(r.profiles.runs('etl', 'f00d42')!.length, 5);
  t.equal(r.profiles.runs('etl', null), undefined, 'runs with no key are a profile of their own');
  t.same(r.profiles.recommendation('etl', 'a1b2c3')!.basedOn, mine.map((x) => x.appName), 'the recommendation from the key\'s runs');
  const pod = (submittedBy: string) => bareDriverPod({ appName: 'etl-next', jobName: 'etl', namespace: '', submittedBy, configOverrides: {
    type: 'Python', mainApplicationFile: 'local:///app.py', executor: { cores: 4, memory: '8g', instances: 1 }, sizing: { fromHistory: 'apply' },
  } });
  const admitted = (submittedBy: string) => {
    const result = expectedAdmission(pod(submittedBy), 'spark-apps', rules, undefined, false, (job, by) => r.profiles.runs(job, by));
    return result?.outcome === 'admitted' ? result.config.executor!.cores : undefined;
  };
  t.equal(admitted('f00d42'), 1, 'key f00d42 is sized from its one-task runs');
  const own = admitted('a1b2c3')!;
  t.ok(own > 1 && own < 4, `key a1b2c3 from its own runs (${own} cores: 2 tasks at once), whatever f00d42 ran`);
  // A profile written under another key's name (by hand) is not taken for that key's.
  const forged = structuredClone(objects.objects.get('etl.f00d42')!);
  forged.metadata!.name = 'etl.a1b2c3';
  r.profiles.applyObject(forged);
  t.same(r.profiles.runs('etl', 'a1b2c3')!.map((x) => x.appName), mine.map((x) => x.appName), 'a name that is not its own profile\'s is ignored');
});
