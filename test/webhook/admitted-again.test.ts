// The API writes its driver pods admitted; where the webhook still sees one (an API without
// its own identity, a registration without the condition on it), rendering the admitted pod
// again must give the same pod, not a second set of env, volumes and mounts (which
// validation would refuse: two volumes of one name).
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../../schemas/index.js';
import { type AdmissionContext, admitPod, buildRules, withLauncherSecret } from '../../domain/index.js';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { apiAdmittedCondition, mutatingWebhookConfiguration } from '../../webhook/server/registration.js';
import { exampleCluster } from '../helpers/api.js';

const rules = buildRules({
  nodePools: exampleCluster().nodePools,
  namespace: 'spark-apps',
  policy: { secrets: ['gcp-key'] },
  eventLog: { dir: 's3a://logs/events', s3: { endpoint: 'http://s3.example:9000', pathStyleAccess: true, credentialsSecret: 'event-log-s3' } },
  archiveLogs: true,
  driverService: 'spark-drivers',
});
const templates: Record<string, ApplicationConfig> = {
  etl: { driver: { env: { FROM_TEMPLATE: '1' } }, executor: { cores: 2 } },
};
const context: AdmissionContext = { rules, templates: (name) => templates[name], applications: () => undefined, newAppName: (job) => `${job}-x` };

function admitted(pod: V1Pod): V1Pod {
  const result = admitPod(structuredClone(pod), context);
  if (result.outcome !== 'admitted') throw new Error(`not admitted: ${JSON.stringify(result)}`);
  return JSON.parse(JSON.stringify(result.pod)) as V1Pod;
}

const gcpKey = { name: 'gcp-key', path: '/var/secrets/gcp', secretType: 'CloudServiceAccount' as const };
const overrides: ApplicationConfig = { driver: { env: { DAY: '2026-11-26' }, secrets: [gcpKey] }, executor: { secrets: [gcpKey] } };

const cases: [string, V1Pod][] = [
  ['the bare pod the API writes', bareDriverPod({ appName: 'etl-1', jobName: 'etl', namespace: 'spark-apps', configTemplateName: 'etl', configOverrides: overrides, submittedBy: 'key-a' })],
  ['a kernel driver with its launcher Secret', withLauncherSecret(bareDriverPod({ appName: 'nb-1', jobName: 'nb', namespace: 'spark-apps' }), 'nb-1-launcher')],
];
// A team's own pod: a sidecar, env of its own (one overriding ours), a volume of its own.
const team = bareDriverPod({ appName: 'team-1', jobName: 'team', namespace: 'spark-apps', configOverrides: overrides });
team.spec!.containers[0].env = [{ name: 'SPARK_LOCAL_DIRS', value: '/scratch' }, { name: 'TEAM', value: 'a' }];
team.spec!.containers[0].volumeMounts = [{ name: 'scratch', mountPath: '/scratch' }];
team.spec!.containers.push({ name: 'sidecar', image: 'busybox' });
team.spec!.volumes = [{ name: 'scratch', emptyDir: {} }];
cases.push(['a team\'s own pod', team]);

for (const [what, pod] of cases) {
  t.test(`${what}: admitting the admitted pod again changes nothing`, async (t) => {
    const once = admitted(pod);
    t.same(admitted(once), once);
    const container = once.spec!.containers[0];
    const names = (list: { name: string }[] = []) => list.map((x) => x.name);
    t.equal(new Set(names(once.spec!.volumes)).size, once.spec!.volumes!.length, 'volume names unique');
    t.equal(new Set(container.volumeMounts!.map((m) => m.mountPath)).size, container.volumeMounts!.length, 'mount paths unique');
    t.equal(new Set(names(container.env)).size, container.env!.length, 'env names unique');
  });
}

t.test("a team's env wins over ours, as it did (the later of two equal names)", async (t) => {
  const env = admitted(team).spec!.containers[0].env!;
  t.same(env.filter((e) => e.name === 'SPARK_LOCAL_DIRS'), [{ name: 'SPARK_LOCAL_DIRS', value: '/scratch' }]);
  t.ok(env.some((e) => e.name === 'GOOGLE_APPLICATION_CREDENTIALS'), 'ours stay where the pod sets nothing');
});

t.test('a volume of the pod named like one of ours gives way to ours (validation refused two before)', async (t) => {
  const impostor = bareDriverPod({ appName: 'imp-1', jobName: 'imp', namespace: 'spark-apps', configOverrides: overrides });
  impostor.spec!.volumes = [{ name: 'secret-gcp-key', secret: { secretName: 'someone-elses' } }];
  impostor.spec!.containers[0].volumeMounts = [{ name: 'secret-gcp-key', mountPath: '/var/secrets/gcp' }];
  const pod = admitted(impostor);
  t.same(pod.spec!.volumes!.filter((v) => v.name === 'secret-gcp-key'), [{ name: 'secret-gcp-key', secret: { secretName: 'gcp-key' } }]);
  t.same(pod.spec!.containers[0].volumeMounts!.filter((m) => m.mountPath === '/var/secrets/gcp'), [{ name: 'secret-gcp-key', mountPath: '/var/secrets/gcp', readOnly: true }]);
});

t.test("the registration skips only the API's user's pods with the mark, and only on the drivers' entry", async (t) => {
  const user = 'system:serviceaccount:submission-service:submission-service-api';
  const config = mutatingWebhookConfiguration({ name: 'x', caBundle: '', url: 'https://127.0.0.1:1/mutate-pods', apiUser: user }) as { webhooks: { name: string; matchConditions?: unknown }[] };
  t.same(config.webhooks.map((w) => w.matchConditions), [[apiAdmittedCondition(user)], undefined], 'executors are always sent');
  t.equal(apiAdmittedCondition(user).expression,
    '!(request.userInfo.username == "system:serviceaccount:submission-service:submission-service-api" && has(object.metadata.annotations) && "submission-service/admitted-by" in object.metadata.annotations)');
  const without = mutatingWebhookConfiguration({ name: 'x', caBundle: '', url: 'https://127.0.0.1:1/mutate-pods' }) as { webhooks: Record<string, unknown>[] };
  t.same(without.webhooks.map((w) => 'matchConditions' in w), [false, false], 'no API user: every labelled pod is sent');
});
