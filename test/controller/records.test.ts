// The controller's pure mapping (cluster/kubernetes/records.ts), without a cluster: driver pod
// states to application states, `desiredStatus` (transitions, times, terminal states kept,
// idempotent) and an unreadable config annotation reported in stateDetail, never thrown.
import type { V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { type ApplicationResource, desiredStatus, podState, toRecord } from '../../cluster/kubernetes/records.js';
import { ANNOTATION_CONFIG } from '../../domain/index.js';

const CREATED = '2026-11-25T10:00:00.000Z';
const STARTED = '2026-11-25T10:00:05.000Z';
const FINISHED = '2026-11-25T10:01:00.000Z';
const NOW = '2026-11-25T10:02:00.000Z';

function resource(status?: ApplicationResource['status']): ApplicationResource {
  return {
    apiVersion: 'submission-service.io/v1', kind: 'Application',
    metadata: { name: 'pi-1', namespace: 'spark-apps', creationTimestamp: CREATED },
    spec: { jobName: 'pi', configTemplateName: '', config: {} },
    ...(status ? { status } : {}),
  };
}

function pod(phase: string, container?: object, annotations?: Record<string, string>, extra: object = {}): V1Pod {
  return {
    metadata: { name: 'pi-1', annotations },
    status: { phase, ...(container ? { containerStatuses: [{ name: 'spark-kubernetes-driver', image: 'x', imageID: '', ready: false, restartCount: 0, state: container }] } : {}), ...extra },
  } as V1Pod;
}

const running = pod('Running', { running: { startedAt: STARTED } });
const succeeded = pod('Succeeded', { terminated: { exitCode: 0, reason: 'Completed', startedAt: STARTED, finishedAt: FINISHED } });
const failed = pod('Failed', { terminated: { exitCode: 3, reason: 'Error', startedAt: STARTED, finishedAt: FINISHED } });

t.test('pod states', async (t) => {
  t.same(podState({ pod: running, deleted: false }), { state: 'RUNNING', startedAt: STARTED, endedAt: null });
  t.same(podState({ pod: succeeded, deleted: false }), { state: 'COMPLETED', startedAt: STARTED, endedAt: FINISHED, stateDetail: 'exit code 0 (Completed)' });
  t.same(podState({ pod: failed, deleted: false }).state, 'FAILED');
  const pulling = pod('Pending', { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "x"' } });
  t.same(podState({ pod: pulling, deleted: false }), { state: 'PENDING', startedAt: null, endedAt: null, stateDetail: 'ImagePullBackOff: Back-off pulling image "x"' });
  const unschedulable = pod('Pending', undefined, undefined, { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }] });
  t.equal(podState({ pod: unschedulable, deleted: false }).stateDetail, 'Unschedulable: 0/3 nodes are available');
  const unknown = podState({ pod: pod('Unknown'), deleted: false });
  t.equal(unknown.state, undefined, 'phase Unknown: no news, not terminal');
  t.match(unknown.stateDetail, /not reporting/);
  t.equal(podState({ pod: pod('Pending'), deleted: true }).state, 'UNKNOWN', 'deleted before it started');
});

t.test('desiredStatus: transitions with the pod\'s own times, seen only after the end', async (t) => {
  const status = desiredStatus(resource(), { pod: succeeded, deleted: false }, 0, { now: NOW });
  t.equal(status.state, 'COMPLETED');
  t.same(status.transitions?.map((x) => [x.state, x.at]), [['PENDING', CREATED], ['RUNNING', STARTED], ['COMPLETED', FINISHED]]);
  t.equal(status.endedAt, FINISHED);
});

t.test('desiredStatus is idempotent: applied to its own result it gives the same status', async (t) => {
  for (const view of [{ pod: running, deleted: false }, { pod: failed, deleted: false }, { pod: pod('Unknown'), deleted: false }, { pod: running, deleted: true }]) {
    const once = desiredStatus(resource(), view, 2, { now: NOW });
    const twice = desiredStatus(resource(once), view, 2, { now: '2026-11-25T11:00:00.000Z' });
    t.same(twice, once, `${view.pod.status?.phase}${view.deleted ? ', deleted' : ''}`);
  }
});

t.test('a terminal status is kept whatever the pod shows later', async (t) => {
  const killed = desiredStatus(resource({ state: 'KILLED', stateDetail: 'stopped by a user', transitions: [{ state: 'PENDING', at: CREATED }, { state: 'KILLED', at: NOW }] }), { pod: running, deleted: false }, 3);
  t.equal(killed.state, 'KILLED');
  t.equal(killed.runningExecutors, 0);
});

t.test('running executors count only while RUNNING; a running driver deleted is UNKNOWN', async (t) => {
  t.equal(desiredStatus(resource(), { pod: running, deleted: false }, 4).runningExecutors, 4);
  const gone = desiredStatus(resource(), { pod: running, deleted: true }, 4, { now: NOW });
  t.equal(gone.state, 'UNKNOWN');
  t.equal(gone.stateDetail, 'the driver pod was deleted while running');
});

t.test('no driver pod: waiting, then UNKNOWN once the grace period is over', async (t) => {
  t.equal(desiredStatus(resource(), undefined, 0).stateDetail, 'waiting for the driver pod');
  const missing = desiredStatus(resource(), undefined, 0, { missing: true, now: NOW });
  t.equal(missing.state, 'UNKNOWN');
  t.equal(missing.stateDetail, 'no driver pod was created for this application');
});

t.test('an unreadable config annotation is said in stateDetail; nothing throws', async (t) => {
  for (const bad of ['{"executor":', '[1,2]', '"text"', 'null']) {
    const broken = pod('Running', { running: { startedAt: STARTED } }, { [ANNOTATION_CONFIG]: bad });
    const status = desiredStatus(resource(), { pod: broken, deleted: false }, 0, { now: NOW });
    t.equal(status.state, 'RUNNING', `${bad}: the state is still the pod's`);
    t.match(status.stateDetail, /the driver pod's config cannot be read: the \S+ annotation is not (JSON|a JSON object)/);
    t.same(desiredStatus(resource(status), { pod: broken, deleted: false }, 0, { now: NOW }), status, 'idempotent');
    const record = toRecord(resource(status), status, { pod: broken, deleted: false });
    t.same(record.config, {}, 'the record shows no config rather than failing');
    t.equal(record.stateDetail, status.stateDetail);
  }
  const pending = pod('Pending', { waiting: { reason: 'ErrImagePull', message: 'no such image' } }, { [ANNOTATION_CONFIG]: '{' });
  t.match(desiredStatus(resource(), { pod: pending, deleted: false }, 0).stateDetail, /^ErrImagePull: no such image; the driver pod's config cannot be read/, 'beside the reason of the state');
});

t.test('the config annotation is read once per pod object, and again when that object\'s annotation changes', async (t) => {
  const edited = pod('Running', { running: { startedAt: STARTED } }, { [ANNOTATION_CONFIG]: '{"type":"Python"}' });
  const detail = () => desiredStatus(resource(), { pod: edited, deleted: false }, 0, { now: NOW }).stateDetail;
  t.equal(detail(), undefined, 'readable: nothing said');
  t.equal(detail(), undefined, 'asked again: the same answer');
  edited.metadata!.annotations![ANNOTATION_CONFIG] = '{"type":';
  t.match(detail(), /the driver pod's config cannot be read/, 'the same object edited in place: read again, not the answer kept for the old text');
  edited.metadata!.annotations![ANNOTATION_CONFIG] = '{"type":"Scala"}';
  t.equal(detail(), undefined, 'and back to readable');
});
