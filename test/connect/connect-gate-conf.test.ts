// The gate on a Spark 3.x Connect server as Spark properties (domain/connect-gate.ts), one
// function for both modes: local mode puts it on the driver's command line at its start
// (cluster/local/spark-command.ts), Kubernetes mode's sessions and warm servers carry it in their
// submission with the jars of the 3.x runtime image (connect/server-app.ts, images/build.sh).
// Either way: the gate's jar first in spark.jars, its class last among the interceptors, nothing
// resolved at the driver's start; Spark 4 gets none (its own token check).
import t from 'tap';
import { admitPod, bareDriverPod, buildRules, CONNECT_GATE_CLASS, CONNECT_INTERCEPTORS_CONF, connectGateConf, IMAGE_CONNECT_DIR, imageConnectJars } from '../../domain/index.js';
import { connectServerConf, sessionSubmission, warmSubmission } from '../../connect/server-app.js';
import { localSubmitParts } from '../../cluster/local/spark-command.js';
import { exampleCluster } from '../helpers/api.js';

const IMAGE_GATE = `local://${IMAGE_CONNECT_DIR}/connect-gate.jar`;
const IMAGE_SERVER = `local://${IMAGE_CONNECT_DIR}/spark-connect.jar`;
const own = (conf: Record<string, string>) => (name: string) => conf[name];

t.test('the gate\'s two properties: its jar first, its class last, the driver\'s own kept and never twice', async (t) => {
  t.same(connectGateConf(own({}), '/g.jar'), { 'spark.jars': '/g.jar', [CONNECT_INTERCEPTORS_CONF]: CONNECT_GATE_CLASS });
  t.same(connectGateConf(own({ 'spark.jars': '/s.jar, /x.jar', [CONNECT_INTERCEPTORS_CONF]: 'com.example.Audit' }), '/g.jar'),
    { 'spark.jars': '/g.jar,/s.jar,/x.jar', [CONNECT_INTERCEPTORS_CONF]: `com.example.Audit,${CONNECT_GATE_CLASS}` });
  const again = connectGateConf(own({ 'spark.jars': '/s.jar,/g.jar', [CONNECT_INTERCEPTORS_CONF]: `${CONNECT_GATE_CLASS},com.example.Audit` }), '/g.jar');
  t.same(again, { 'spark.jars': '/g.jar,/s.jar', [CONNECT_INTERCEPTORS_CONF]: `com.example.Audit,${CONNECT_GATE_CLASS}` },
    'named already elsewhere in either list: moved to its place, not added again');
});

t.test('a session\'s Connect server properties, per version and mode', async (t) => {
  // Local mode: the server's jar setup fetched; the gate comes at the driver's start.
  t.same(connectServerConf('3.5.7', { server: '/c/spark-connect_2.12-3.5.7.jar' }), { 'spark.jars': '/c/spark-connect_2.12-3.5.7.jar' });
  // Kubernetes mode: both jars in the 3.x image, with the gate when drivers get a token.
  t.same(imageConnectJars(true), { server: IMAGE_SERVER, gate: IMAGE_GATE });
  t.same(connectServerConf('3.5.7', imageConnectJars(true)), { 'spark.jars': `${IMAGE_GATE},${IMAGE_SERVER}`, [CONNECT_INTERCEPTORS_CONF]: CONNECT_GATE_CLASS });
  t.same(connectServerConf('3.5.7', imageConnectJars(false)), { 'spark.jars': IMAGE_SERVER }, 'no token to ask for: no gate (it would refuse the relay too)');
  for (const jars of [undefined, { server: '/c/x.jar' }, imageConnectJars(true)]) {
    t.same(connectServerConf('4.2.0', jars), {}, 'Spark 4 ships its server and checks the token itself');
  }
});

/** The admitted driver pod of a submission's overrides, as the webhook renders it (Kubernetes) and local mode reads it. */
function admitted(body: Record<string, unknown>) {
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark' });
  const overrides = body.configOverrides as Record<string, unknown>;
  const pod = bareDriverPod({ appName: 'connect-20260101-000000-aaaaa', jobName: 'connect', namespace: 'spark', configOverrides: { ...overrides, engineVersion: '3.5.7' } });
  const result = admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => j });
  if (result.outcome !== 'admitted') throw new Error(result.outcome);
  return result.pod;
}
const confs = (args: string[]) => args.flatMap((value, i) => (args[i - 1] === '--conf' ? [value] : []));

t.test('both modes give a 3.5 server the same gate; Kubernetes\' from the image, nothing resolved at start', async (t) => {
  const input = { template: undefined, version: '3.5.7', port: 15002 };
  for (const body of [sessionSubmission({ ...input, sessionId: 's1', jars: imageConnectJars(true) }), warmSubmission({ ...input, jars: imageConnectJars(true) })]) {
    const args = admitted(body).spec!.containers[0]!.args!;
    t.ok(confs(args).includes(`spark.jars=${IMAGE_GATE},${IMAGE_SERVER}`), 'Kubernetes: the driver pod names the image\'s jars, the gate first');
    t.ok(confs(args).includes(`${CONNECT_INTERCEPTORS_CONF}=${CONNECT_GATE_CLASS}`), 'and the gate among the interceptors');
    t.notOk(args.some((arg) => arg.includes('spark.jars.packages')), 'no spark.jars.packages');
  }
  const local = sessionSubmission({ ...input, sessionId: 's1', jars: { server: '/c/spark-connect_2.12-3.5.7.jar' }, bindAddress: '127.0.0.1' });
  const machine = { sparkSubmit: '/venv/bin/spark-submit', workDir: '/tmp/w', connectToken: 'a'.repeat(64), connectGate: '/cache/connect-gate-x/connect-gate.jar' };
  const options = confs(localSubmitParts(admitted(local), machine, 1).options);
  t.ok(options.includes(`spark.jars=/cache/connect-gate-x/connect-gate.jar,/c/spark-connect_2.12-3.5.7.jar`), 'local: the built gate first, then the fetched server');
  t.ok(options.includes(`${CONNECT_INTERCEPTORS_CONF}=${CONNECT_GATE_CLASS}`));
  t.notOk(options.some((arg) => arg.includes('spark.jars.packages')));
});
