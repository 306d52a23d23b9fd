// Runs alone (scripts/test.sh): the real node is one per machine, and the chart starts the
// service's image five times over on two cores.
//
// Faults of the installed chart (two api, two webhook replicas), on the test bed's real node:
// (a) one API pod deleted (default grace: the drain of lib/drain.ts on SIGTERM) while 200
//     submissions of two user keys are in flight through the API's Service;
// (b) the webhook Deployment restarted (what `kubectl rollout restart` does) while submissions
//     and a team's own pods labelled for admission are being created.
// "Half-made", checked from the apiserver once the controller and the garbage collector have
// settled: an Application without its driver pod, a driver pod whose owner Application (by uid)
// does not exist, a pod created without our admission (no admitted-by annotation, no cpu
// request), or an Application the controller marked UNKNOWN (its pod went missing). These
// submissions send no Idempotency-Key (README "Safe retries" covers that path, and
// test/kubernetes/idempotency.test.ts): a client that lost its connection looks for its own
// label before it submits again; no attempt may end with two Applications.
// The node is cordoned while the faults run and the chart's pods tolerate the cordon: the 200+
// driver pods wait Pending instead of starting 200 JVMs on two cores, the service's own
// replacement pods still schedule.
import t from 'tap';
import { AppsV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { APPLICATIONS, GROUP, VERSION } from '../../cluster/kubernetes/client.js';
import type { ApplicationResource } from '../../cluster/kubernetes/records.js';
import { ANNOTATION_ADMITTED, LABEL_JOB } from '../../domain/index.js';
import { NODE_NAME } from '../../testbed/real-node.js';
import { APPS, chartNodeUnavailable, installChart, NS, readyPod, send } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';

const skip = chartNodeUnavailable();
t.setTimeout(120 * 60_000);

const SUBMISSIONS = 200;
const IN_FLIGHT = 16;
/** Answers before the API pod is deleted: the rest are in flight while it drains and goes. */
const DELETE_AFTER = 40;
const POST_ATTEMPTS = 3;

type Status = number | string;
interface Outcome { attempt: string; statuses: Status[]; appName?: string; foundAfterLostConnection?: boolean; answeredAt: number }

const isConnectionError = (status: Status) => typeof status === 'string';
const tally = (statuses: Status[]) => Object.entries(statuses.reduce<Record<string, number>>((acc, s) => ({ ...acc, [String(s)]: (acc[String(s)] ?? 0) + 1 }), {}))
  .map(([status, count]) => `${status}: ${count}`).join(', ') || 'none';

t.test('faults of the installed chart', { skip }, async (t) => {
  // 0 turns the per-key limits off: two keys send 200 submissions within seconds.
  const chart = await installChart(t, {
    values: {
      limits: { submissionsPerMinute: 0, applicationsPerKey: 0 },
      tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
    },
    agentSockets: IN_FLIGHT,
  });
  const { bed, base, agent, keys, accepted } = chart;
  const { core, kc } = bed;
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const userA = await keys.create('user', 'faults A');
  const userB = await keys.create('user', 'faults B');
  for (const key of [userA, userB]) await accepted(key.key);
  await core.patchNode({ name: NODE_NAME, body: [{ op: 'add', path: '/spec/unschedulable', value: true }] });

  /** What the apiserver holds of one run's submissions, and what of it is half-made. */
  const survey = async (run: string) => {
    const records = ((await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: APPS, plural: APPLICATIONS, labelSelector: `faults-run=${run}` })) as { items: ApplicationResource[] }).items;
    const pods = (await core.listNamespacedPod({ namespace: APPS, labelSelector: `faults-run=${run}` })).items;
    const uids = new Map(records.map((r) => [r.metadata.name!, r.metadata.uid]));
    const podNames = new Set(pods.map((p) => p.metadata!.name!));
    return {
      records, pods,
      withoutPod: records.filter((r) => !podNames.has(r.metadata.name!)).map((r) => r.metadata.name!),
      withoutRecord: pods.filter((p) => {
        const owner = p.metadata!.ownerReferences?.find((o) => o.kind === 'Application');
        return !owner || uids.get(owner.name) !== owner.uid;
      }).map((p) => p.metadata!.name!),
      unsized: pods.filter((p) => !sized(p)).map((p) => p.metadata!.name!),
      unknown: records.filter((r) => r.status?.state === 'UNKNOWN').map((r) => r.metadata.name!),
    };
  };
  const settled = (run: string) => eventually(() => survey(run), (s) => s.withoutPod.length + s.withoutRecord.length + s.unsized.length + s.unknown.length === 0,
    { what: `no half-made submission of ${run} (the controller and the garbage collector settled)`, timeoutMs: 120_000, intervalMs: 1000 });

  /** Every application of a run as the API lists it to the admin, page after page. */
  const listed = async (run: string) => {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await send(agent, base, 'GET', `/api/apps/?view=summary&limit=500&labelSelector=${encodeURIComponent(`faults-run=${run}`)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, chart.admin.key);
      if (page.status !== 200) throw new Error(`list: ${page.status} ${JSON.stringify(page.json)}`);
      names.push(...(page.json.items as { appName: string }[]).map((item) => item.appName));
      cursor = page.json.next ?? undefined;
    } while (cursor);
    return names;
  };

  /**
   * One submission as a careful client makes it: a 503 is answered (nothing was made) and is
   * sent again; after a lost connection it first looks for its own label, since the request
   * may have been carried out.
   */
  const submit = async (run: string, attempt: string, key: string): Promise<Outcome> => {
    const statuses: Status[] = [];
    const labels = { 'faults-run': run, 'faults-attempt': attempt };
    for (let i = 0; i < POST_ATTEMPTS; i++) {
      if (i > 0 && isConnectionError(statuses.at(-1)!)) {
        const look = await eventually(() => send(agent, base, 'GET', `/api/apps/?view=summary&labelSelector=${encodeURIComponent(`faults-attempt=${attempt},faults-run=${run}`)}`, key),
          (r) => r.status === 200, { what: `the list of ${attempt}`, timeoutMs: 60_000, intervalMs: 200 });
        const found = look.json.items[0] as { appName: string } | undefined;
        if (found) return { attempt, statuses, appName: found.appName, foundAfterLostConnection: true, answeredAt: Date.now() };
      }
      const res = await send(agent, base, 'POST', '/api/apps/', key, { jobName: 'faults', labels });
      statuses.push(res.status);
      if (res.status === 201) return { attempt, statuses, appName: res.json.appName, answeredAt: Date.now() };
      if (res.status !== 503 && !isConnectionError(res.status)) break;
    }
    return { attempt, statuses, answeredAt: Date.now() };
  };

  await t.test('an API pod deleted while 200 submissions are in flight through the Service', async (t) => {
    const run = 'api-delete';
    const apiPods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'app.kubernetes.io/component=api' })).items.map((p) => p.metadata!.name!);
    const victim = apiPods[0];
    const outcomes: Outcome[] = [];
    let next = 0;
    let deletedAt = Infinity;
    let goneAt = Infinity;
    let deletion: Promise<void> | undefined;
    const worker = async () => {
      while (next < SUBMISSIONS) {
        const i = next++;
        outcomes.push(await submit(run, `a${i}`, i % 2 === 0 ? userA.key : userB.key));
        if (outcomes.length === DELETE_AFTER) {
          deletedAt = Date.now();
          // As `kubectl delete pod`: the pod's own grace period, SIGTERM first.
          deletion = core.deleteNamespacedPod({ name: victim, namespace: NS }).then(() =>
            eventually(() => core.listNamespacedPod({ namespace: NS }), (l) => !l.items.some((p) => p.metadata!.name === victim), { what: `${victim} to be gone`, timeoutMs: 120_000, intervalMs: 200 }))
            .then(() => { goneAt = Date.now(); });
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    await deletion;
    const duringTermination = outcomes.filter((o) => o.answeredAt >= deletedAt && o.answeredAt <= goneAt).length;
    t.ok(deletion && outcomes.filter((o) => o.answeredAt > deletedAt).length > 0, `the pod was deleted while submissions were in flight (${duringTermination} answered while it terminated)`);

    const state = await settled(run);
    t.same({ withoutPod: state.withoutPod, withoutRecord: state.withoutRecord, unsized: state.unsized, unknown: state.unknown }, { withoutPod: [], withoutRecord: [], unsized: [], unknown: [] }, 'none half-made (from the apiserver)');
    const accepted = outcomes.filter((o) => o.appName !== undefined);
    const records = new Set(state.records.map((r) => r.metadata.name!));
    const pods = new Set(state.pods.map((p) => p.metadata!.name!));
    t.same(accepted.filter((o) => !records.has(o.appName!) || !pods.has(o.appName!)).map((o) => o.appName), [], 'every accepted submission has its Application and its driver pod');
    const names = await eventually(() => listed(run), (l) => accepted.every((o) => l.includes(o.appName!)), { what: 'every accepted submission in the list', timeoutMs: 60_000, intervalMs: 500 });
    t.equal(names.length, accepted.length, 'every accepted submission is listed by GET /api/apps/, and nothing else');
    const perAttempt = new Map<string, number>();
    for (const record of state.records) {
      const attempt = record.metadata.labels?.['faults-attempt'] ?? '';
      perAttempt.set(attempt, (perAttempt.get(attempt) ?? 0) + 1);
    }
    t.same([...perAttempt].filter(([, count]) => count > 1), [], 'no attempt made two Applications (look before retrying)');
    const failed = outcomes.filter((o) => o.appName === undefined);
    t.same(failed.filter((o) => perAttempt.has(o.attempt)).map((o) => o.attempt), [], 'a submission that failed left nothing behind');
    const statuses = outcomes.flatMap((o) => o.statuses);
    t.same(statuses.filter((s) => s !== 201 && s !== 503 && !isConnectionError(s)), [], 'every answer other than 201 is a 503 or a lost connection');
    t.equal(outcomes.length, SUBMISSIONS);
    t.comment(`api pod deleted after ${DELETE_AFTER} answers (${victim}): ${accepted.length}/${SUBMISSIONS} accepted, ${failed.length} failed after ${POST_ATTEMPTS} tries; `
      + `answers of all tries: ${tally(statuses)}; retried ${outcomes.filter((o) => o.statuses.length > 1).length}; found made after a lost connection ${outcomes.filter((o) => o.foundAfterLostConnection).length}; `
      + `${duringTermination} answered while the pod terminated (${((goneAt - deletedAt) / 1000).toFixed(1)} s); half-made 0 of ${state.records.length} Applications`);
  });

  await t.test('the webhook restarted while pods are being created', async (t) => {
    const run = 'webhook-restart';
    const before = new Set((await core.listNamespacedPod({ namespace: NS, labelSelector: 'app.kubernetes.io/component=webhook' })).items.map((p) => p.metadata!.name!));
    let restarting = true;
    const outcomes: Outcome[] = [];
    // A team's own pods, labelled for admission: created, or refused with the apiserver's error.
    const teamTries: Status[] = [];
    const teamPods: string[] = [];
    let teamFailed = 0;
    let n = 0;
    const submitter = (key: string) => async () => {
      while (restarting) outcomes.push(await submit(run, `b${n++}`, key));
    };
    const team = async () => {
      while (restarting) {
        const name = `team-${n++}`;
        let created = false;
        for (let i = 0; i < POST_ATTEMPTS && !created; i++) {
          try {
            await core.createNamespacedPod({ namespace: APPS, body: teamPod(name, run) });
            teamTries.push(201);
            created = true;
          } catch (error) {
            teamTries.push((error as { code?: number }).code ?? String(error));
          }
        }
        if (created) teamPods.push(name); else teamFailed++;
      }
    };
    const loads = [submitter(userA.key)(), submitter(userB.key)(), team(), team()];
    const restartedAt = new Date().toISOString();
    // What `kubectl rollout restart` writes.
    await apps.patchNamespacedDeployment({ name: 'submission-service-webhook', namespace: NS,
      body: [{ op: 'add', path: '/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt', value: restartedAt }] });
    const restartStart = Date.now();
    await eventually(async () => ({
      deployment: await apps.readNamespacedDeployment({ name: 'submission-service-webhook', namespace: NS }),
      pods: (await core.listNamespacedPod({ namespace: NS, labelSelector: 'app.kubernetes.io/component=webhook' })).items,
    }), ({ deployment: d, pods }) => (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) && d.status?.updatedReplicas === 2 && d.status?.availableReplicas === 2
      && pods.length === 2 && pods.every((p) => !before.has(p.metadata!.name!) && readyPod(p)),
    { what: 'the webhook rolled: two new pods Ready, the old ones gone', timeoutMs: 300_000, intervalMs: 500 });
    const restartSeconds = (Date.now() - restartStart) / 1000;
    restarting = false;
    await Promise.all(loads);

    const made = (await core.listNamespacedPod({ namespace: APPS, labelSelector: `faults-team=${run}` })).items;
    t.same(made.filter((p) => !sized(p)).map((p) => p.metadata!.name), [], 'every team pod created meanwhile was admitted and sized (failurePolicy Fail: none unsized)');
    t.equal(made.length, teamPods.length, 'the apiserver holds every team pod whose creation succeeded, and no other');
    const state = await settled(run);
    t.same({ withoutPod: state.withoutPod, withoutRecord: state.withoutRecord, unsized: state.unsized, unknown: state.unknown }, { withoutPod: [], withoutRecord: [], unsized: [], unknown: [] }, 'no submission half-made');
    const accepted = outcomes.filter((o) => o.appName !== undefined);
    const names = await eventually(() => listed(run), (l) => accepted.every((o) => l.includes(o.appName!)), { what: 'every accepted submission in the list', timeoutMs: 60_000, intervalMs: 500 });
    t.equal(names.length, accepted.length, 'every accepted submission is listed, and nothing else');
    const statuses = outcomes.flatMap((o) => o.statuses);
    t.ok(outcomes.length > 0 && teamTries.length > 0, 'pods were being created during the restart');
    t.comment(`webhook restart (${restartSeconds.toFixed(1)} s until both new pods Ready and the old gone): submissions ${accepted.length}/${outcomes.length} accepted, answers ${tally(statuses)}; `
      + `team pods ${teamPods.length}/${teamPods.length + teamFailed} created, creation answers ${tally(teamTries)}; unsized 0`);
  });
});

const sized = (pod: V1Pod) => Boolean(pod.metadata?.annotations?.[ANNOTATION_ADMITTED] && pod.spec?.containers[0].resources?.requests?.cpu);

/** A team's own pod, labelled for admission, as `kubectl apply` would create it; it meets `restricted`. */
function teamPod(name: string, run: string): V1Pod {
  return {
    metadata: { name, labels: { [LABEL_JOB]: 'team-job', 'faults-team': run } },
    spec: {
      restartPolicy: 'Never',
      securityContext: { runAsNonRoot: true, runAsUser: 185, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{
        name: 'main', image: 'localhost/submission-service/spark:3.5.7', command: ['true'],
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      }],
    },
  };
}
