// The gate on a Spark 3.x Connect server as Spark properties (domain/connect-gate.ts), one
// function for both modes: local mode puts it on the driver's command line at its start
// (cluster/local/spark-command.ts), Kubernetes mode's sessions and warm servers carry it in their
// submission with the jars of the 3.x runtime image (connect/server-app.ts, images/build.sh).
// Either way: the gate's jar first in spark.jars, its class last among the interceptors (so it
// runs first), nothing resolved at the driver's start; Spark 4 gets none (its own token check).
// A template's own jars and interceptors are merged with the service's, never replaced by them.
import t from 'tap';
import { admitPod, bareDriverPod, buildRules, CONNECT_GATE_CLASS, CONNECT_INTERCEPTORS_CONF, connectGateConf, IMAGE_CONNECT_DIR, imageConnectJars, mergeConnectServerConf } from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
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

/** The admitted driver pod of a submission (its template `template`, if any), as the webhook renders it (Kubernetes) and local mode reads it. */
function admitted(body: Record<string, unknown>, template?: ApplicationConfig, version = '3.5.7') {
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark' });
  const overrides = body.configOverrides as Record<string, unknown>;
  const name = body.configTemplateName as string | undefined;
  const pod = bareDriverPod({ appName: 'connect-20260101-000000-aaaaa', jobName: 'connect', namespace: 'spark', configTemplateName: name, configOverrides: { ...overrides, engineVersion: version } });
  const result = admitPod(pod, { rules, templates: (asked) => (asked === name ? template : undefined), applications: () => undefined, newAppName: (j) => j });
  if (result.outcome !== 'admitted') throw new Error(`${result.outcome}: ${JSON.stringify(result)}`);
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

t.test('the merge of the service\'s lists with a driver\'s own: the gate stays first to run, whatever the own lists say', async (t) => {
  const ours = own({ 'spark.jars': '/g.jar,/s.jar', [CONNECT_INTERCEPTORS_CONF]: CONNECT_GATE_CLASS });
  const merge = (conf: Record<string, string>) => mergeConnectServerConf(own(conf), ours);
  t.same(merge({ 'spark.jars': '/jdbc.jar,/delta.jar', [CONNECT_INTERCEPTORS_CONF]: 'com.example.Audit,com.example.Trace' }),
    { 'spark.jars': '/g.jar,/s.jar,/jdbc.jar,/delta.jar', [CONNECT_INTERCEPTORS_CONF]: `com.example.Audit,com.example.Trace,${CONNECT_GATE_CLASS}` },
    'the template\'s jars after ours in their order; its interceptors before the gate, which gRPC runs first');
  t.same(merge({ [CONNECT_INTERCEPTORS_CONF]: `${CONNECT_GATE_CLASS}, com.example.Audit,${CONNECT_GATE_CLASS}` })[CONNECT_INTERCEPTORS_CONF],
    `com.example.Audit,${CONNECT_GATE_CLASS}`, 'the gate named first (to run last), or twice: back to its own place, once');
  t.same(merge({ 'spark.jars': '', [CONNECT_INTERCEPTORS_CONF]: ' , ' }), { 'spark.jars': '/g.jar,/s.jar', [CONNECT_INTERCEPTORS_CONF]: CONNECT_GATE_CLASS },
    'lists emptied to take the gate off: the gate is still there');
  t.same(merge({ 'spark.jars': '/evil/connect-gate.jar,/s.jar,/g.jar,/x.jar,/x.jar' })['spark.jars'], '/g.jar,/s.jar,/evil/connect-gate.jar,/x.jar',
    'another jar of the gate\'s name comes after ours (the class loads from ours); ours and repeats once');
  t.same(merge({ [CONNECT_INTERCEPTORS_CONF]: 'com.example.Open' })[CONNECT_INTERCEPTORS_CONF], `com.example.Open,${CONNECT_GATE_CLASS}`,
    'an interceptor list that leaves the gate out gets it');
  const noGate = own({ 'spark.jars': '/s.jar' });
  t.same(mergeConnectServerConf(own({ 'spark.jars': '/a.jar', [CONNECT_INTERCEPTORS_CONF]: 'com.example.A,com.example.A' }), noGate),
    { 'spark.jars': '/s.jar,/a.jar', [CONNECT_INTERCEPTORS_CONF]: 'com.example.A' }, 'no gate of ours: the driver\'s interceptors as they are (once each)');
  t.same(mergeConnectServerConf(own({}), own({})), {}, 'neither side names a list: none');
});

/** A team's template: its own engine version, a JDBC driver and Delta on the class path, an audit interceptor. */
const teamTemplate = (version: string, conf: Record<string, string> = {}): ApplicationConfig => ({
  engineVersion: version,
  engineConf: { 'spark.jars': 'local:///opt/jars/postgresql.jar,s3a://team/delta-spark.jar', [CONNECT_INTERCEPTORS_CONF]: 'com.example.Audit', 'spark.sql.shuffle.partitions': '8', ...conf },
});
const TEAM_JARS = 'local:///opt/jars/postgresql.jar,s3a://team/delta-spark.jar';
const confOf = (args: string[], name: string) => confs(args).filter((value) => value.startsWith(`${name}=`)).map((value) => value.slice(name.length + 1));

t.test('Kubernetes mode: a 3.5 session\'s driver pod has its template\'s jars and interceptors, and the gate first to run', async (t) => {
  const input = { template: 'team', version: '3.5.7', port: 15002 };
  const adversarial = { [CONNECT_INTERCEPTORS_CONF]: `${CONNECT_GATE_CLASS},com.example.Audit`, 'spark.jars': `${TEAM_JARS},/elsewhere/connect-gate.jar` };
  for (const template of [teamTemplate('3.5.7'), teamTemplate('3.5.7', adversarial)]) {
    for (const body of [sessionSubmission({ ...input, sessionId: 's1', jars: imageConnectJars(true) }), warmSubmission({ ...input, jars: imageConnectJars(true) })]) {
      const args = admitted(body, template).spec!.containers[0]!.args!;
      const [jars] = confOf(args, 'spark.jars');
      t.ok(jars?.startsWith(`${IMAGE_GATE},${IMAGE_SERVER},${TEAM_JARS}`), `the image's jars first, then the template's: ${jars}`);
      t.same(confOf(args, CONNECT_INTERCEPTORS_CONF), [`com.example.Audit,${CONNECT_GATE_CLASS}`], 'one line: the template\'s interceptor, the gate last (run first)');
      t.same(confOf(args, 'spark.sql.shuffle.partitions'), ['8'], 'the template\'s other properties as they were');
    }
  }
  const open = admitted(sessionSubmission({ ...input, sessionId: 's1', jars: imageConnectJars(false) }), teamTemplate('3.5.7')).spec!.containers[0]!.args!;
  t.same(confOf(open, 'spark.jars'), [`${IMAGE_SERVER},${TEAM_JARS}`], 'no token to ask for: the server\'s jar and the template\'s');
  t.same(confOf(open, CONNECT_INTERCEPTORS_CONF), ['com.example.Audit']);
});

t.test('local mode: a 3.5 session\'s driver line has its template\'s jars and interceptors, and the gate first to run', async (t) => {
  const body = sessionSubmission({ template: 'team', version: '3.5.7', port: 15002, sessionId: 's1', jars: { server: '/c/spark-connect_2.12-3.5.7.jar' }, bindAddress: '127.0.0.1' });
  const machine = { sparkSubmit: '/venv/bin/spark-submit', workDir: '/tmp/w', connectToken: 'a'.repeat(64), connectGate: '/cache/connect-gate-x/connect-gate.jar' };
  for (const template of [teamTemplate('3.5.7'), teamTemplate('3.5.7', { [CONNECT_INTERCEPTORS_CONF]: `${CONNECT_GATE_CLASS},com.example.Audit`, 'spark.jars': '' })]) {
    const options = localSubmitParts(admitted(body, template), machine, 1).options;
    const jars = template.engineConf!['spark.jars'] ? `,${TEAM_JARS}` : '';
    t.same(confOf(options, 'spark.jars'), [`/cache/connect-gate-x/connect-gate.jar,/c/spark-connect_2.12-3.5.7.jar${jars}`], 'one line: the gate, the server, the template\'s');
    t.same(confOf(options, CONNECT_INTERCEPTORS_CONF), [`com.example.Audit,${CONNECT_GATE_CLASS}`], 'one line: the template\'s interceptor, the gate last (run first)');
  }
});

t.test('Spark 4 sessions, both modes: the template\'s jars and interceptors as it wrote them, no gate (Spark\'s own token check)', async (t) => {
  const template = teamTemplate('4.2.0');
  const kubernetes = admitted(sessionSubmission({ template: 'team', version: '4.2.0', port: 15002, sessionId: 's1', jars: imageConnectJars(true) }), template, '4.2.0');
  const local = admitted(sessionSubmission({ template: 'team', version: '4.2.0', port: 15002, sessionId: 's1', bindAddress: '127.0.0.1' }), template, '4.2.0');
  const machine = { sparkSubmit: '/venv/bin/spark-submit', workDir: '/tmp/w', connectToken: 'a'.repeat(64) };
  for (const [mode, args] of [['Kubernetes', kubernetes.spec!.containers[0]!.args!], ['local', localSubmitParts(local, machine, 1).options]] as const) {
    t.same(confOf(args, 'spark.jars'), [TEAM_JARS], `${mode}: the template's jars`);
    t.same(confOf(args, CONNECT_INTERCEPTORS_CONF), ['com.example.Audit'], `${mode}: the template's interceptor`);
  }
});

t.test('any other application: a submission\'s spark.jars still replaces its template\'s (the merge rule of SPEC)', async (t) => {
  const body = { configTemplateName: 'team', configOverrides: { type: 'Scala', mainClass: 'com.example.Main', mainApplicationFile: 'local:///app.jar', engineConf: { 'spark.jars': '/mine.jar' } } };
  t.same(confOf(admitted(body, teamTemplate('3.5.7')).spec!.containers[0]!.args!, 'spark.jars'), ['/mine.jar']);
});
