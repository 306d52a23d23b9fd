// Object storage per application, its pure parts: the driver's folder and Secret, the policy
// statements that grant that folder only, and the bucket policy edited without touching the
// operator's own statements.
import t from 'tap';
import {
  appAccessStatements, appsInPolicy, applyDefaults, buildRules, type BucketPolicy, renderDriverPod, withAppStatements, withoutAppStatements,
} from '../../domain/index.js';

const pools = [{ cloudProvider: 'gce' as const, instanceName: 'n1-standard-2', cpu: 2, memoryMib: 7680, preemptible: false }];
const s3 = { endpoint: 'http://minio:9000', pathStyleAccess: true, credentialsSecret: 'shared-s3' };
const id = { appName: 'pi-1', jobName: 'pi', namespace: 'spark-apps' };
const bare = { metadata: { name: 'pi-1' }, spec: { containers: [{ name: 'spark-kubernetes-driver' }] } };

const confOf = (pod: ReturnType<typeof renderDriverPod>): Record<string, string> => {
  const args = pod.spec!.containers[0]!.args!;
  return Object.fromEntries(args.flatMap((arg, i) => (args[i - 1] === '--conf' ? [arg.split(/=(.*)/s).slice(0, 2)] : [])));
};

t.test('a key per application: the driver writes into its own folder with its own Secret', async (t) => {
  const rules = buildRules({ nodePools: pools, eventLog: { dir: 's3a://logs/spark-events', s3: { ...s3, incomingDir: 's3a://logs/spark-incoming/' } } });
  const config = applyDefaults({ type: 'Python', mainApplicationFile: 'local:///x.py' }, rules);
  t.equal(config.engineConf!['spark.eventLog.dir'], 's3a://logs/spark-events', 'the effective config names where the log ends up');
  const pod = renderDriverPod(bare, config, id, rules);
  t.equal(confOf(pod)['spark.eventLog.dir'], 's3a://logs/spark-incoming/pi-1', "the driver writes into its application's folder");
  t.same(pod.spec!.containers[0]!.env!.filter((e) => e.name.startsWith('AWS_')).map((e) => e.valueFrom?.secretKeyRef?.name), ['pi-1-event-log', 'pi-1-event-log'],
    "its key from its own Secret, never the shared one");
  t.same(renderDriverPod(pod, config, id, rules).spec!.containers[0]!.env, pod.spec!.containers[0]!.env, 'rendering again adds nothing');

  const own = applyDefaults({ type: 'Python', engineConf: { 'spark.eventLog.dir': 's3a://team/logs' } }, rules);
  t.equal(confOf(renderDriverPod(bare, own, id, rules))['spark.eventLog.dir'], 's3a://team/logs', 'a directory the run chose itself stays');
  const off = applyDefaults({ type: 'Python', engineConf: { 'spark.eventLog.enabled': 'false' } }, rules);
  t.notOk(renderDriverPod(bare, off, id, rules).spec!.containers[0]!.env!.some((e) => e.name.startsWith('AWS_')), 'no event log, no key');

  const shared = buildRules({ nodePools: pools, eventLog: { dir: 's3a://logs/spark-events', s3 } });
  const sharedPod = renderDriverPod(bare, applyDefaults({ type: 'Python' }, shared), id, shared);
  t.equal(confOf(sharedPod)['spark.eventLog.dir'], 's3a://logs/spark-events', 'without incomingDir: the shared directory, as before');
  t.equal(sharedPod.spec!.containers[0]!.env!.find((e) => e.name === 'AWS_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef?.name, 'shared-s3');
});

t.test("the statements grant the application's folder and nothing beside it", async (t) => {
  const [objects, list] = appAccessStatements('logs', 'spark-incoming/pi-1', 'pi-1', 'ss-pi-1');
  t.same(objects!.Resource, ['arn:aws:s3:::logs/spark-incoming/pi-1', 'arn:aws:s3:::logs/spark-incoming/pi-1/*'], 'the folder and what is in it (not pi-10)');
  t.same(objects!.Principal, { AWS: ['ss-pi-1'] });
  t.notOk(objects!.Action.some((a) => a.includes('*') || a === 's3:ListBucket'), 'object actions only, named one by one');
  t.same(list!.Action, ['s3:ListBucket']);
  t.same(list!.Resource, ['arn:aws:s3:::logs']);
  t.same(list!.Condition, { StringLike: { 's3:prefix': ['spark-incoming/pi-1', 'spark-incoming/pi-1/*'] } }, 'listing only under its folder');
});

t.test("the bucket policy: an application's statements added, replaced and removed; the operator's kept", async (t) => {
  const operator = { Sid: 'Team', Effect: 'Allow' as const, Principal: { AWS: ['team'] }, Action: ['s3:GetObject'], Resource: ['arn:aws:s3:::logs/team/*'] };
  const start: BucketPolicy = { Version: '2012-10-17', Statement: [operator] };
  const one = withAppStatements(start, 'pi-1', appAccessStatements('logs', 'in/pi-1', 'pi-1', 'ss-pi-1'));
  const two = withAppStatements(one, 'pi-10', appAccessStatements('logs', 'in/pi-10', 'pi-10', 'ss-pi-10'));
  t.same(appsInPolicy(two).sort(), ['pi-1', 'pi-10']);
  t.equal(withAppStatements(two, 'pi-1', appAccessStatements('logs', 'in/pi-1', 'pi-1', 'ss-pi-1')).Statement.length, 5, 'granted again: replaced, not doubled');
  const without = withoutAppStatements(two, 'pi-1')!;
  t.same(appsInPolicy(without), ['pi-10'], "removing pi-1 leaves pi-10's");
  t.same(without.Statement[0], operator, "the operator's statement is untouched");
  t.same(appsInPolicy(withAppStatements(undefined, 'a-b-1', [])), [], 'no statements, no application');
  t.same(appsInPolicy(withAppStatements(undefined, 'a-b-1', appAccessStatements('logs', 'in/a-b-1', 'a-b-1', 'x'))), ['a-b-1'], "an appName's dashes survive its Sid");
  t.equal(withoutAppStatements(withAppStatements(undefined, 'pi-1', appAccessStatements('logs', 'in/pi-1', 'pi-1', 'x')), 'pi-1'), undefined, 'nothing left: no policy');
});
