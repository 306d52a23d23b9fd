// A sandboxed driver's temp files point into its work dir (cluster/local/driver-temp.ts), as
// spark-submit and Python get it (cluster/local/spark-command.ts): TMPDIR and the driver JVM's
// java.io.tmpdir, the latter after whatever JVM options the pod gives (the JVM takes the last),
// the same for spark-submit's line and for a Python-first driver's PYSPARK_SUBMIT_ARGS. An
// unsandboxed driver keeps the machine's. The real drivers: test/security/sandbox-temp.test.ts.
import t from 'tap';
import { driverTemp, SANDBOX_TEMP_DIR } from '../../cluster/local/driver-temp.js';
import { localDriverCommand, localSubmitParts } from '../../cluster/local/spark-command.js';
import { admittedLocalPod, confValues } from '../helpers/local-driver-pod.js';

const admittedPod = (engineConf: Record<string, string>) => admittedLocalPod('tmp', { type: 'Python', mainApplicationFile: 'local:///srv/main.py', engineConf });

const sandbox = { bwrap: '/usr/bin/bwrap', hidden: [], readable: ['/venv'], dataDir: '/data' };
const machine = { sparkSubmit: '/venv/bin/spark-submit', python: '/venv/bin/python', workDir: '/data/work/tmp-1', sandbox };
/** The value the driver ends with: spark-submit's last --conf of a name wins. */
const last = (options: string[], name: string) => confValues(options).filter((c) => c.startsWith(`${name}=`)).at(-1)?.slice(name.length + 1);

t.test('a sandboxed driver: TMPDIR and java.io.tmpdir are its work dir\'s tmp folder, as it sees it', async (t) => {
  t.equal(SANDBOX_TEMP_DIR, '/tmp/app/tmp');
  const parts = localSubmitParts(admittedPod({}), machine, 1);
  t.equal(parts.env.TMPDIR, SANDBOX_TEMP_DIR, 'Python\'s tempfile (the driver\'s and its workers\', which inherit it)');
  t.equal(last(parts.options, 'spark.driver.extraJavaOptions'), `-Djava.io.tmpdir=${SANDBOX_TEMP_DIR}`, 'the driver JVM');
  t.equal(parts.env.SPARK_LOCAL_DIRS, '/tmp/app', 'Spark\'s scratch stays the work dir itself');
  t.equal(last(parts.options, 'spark.hadoop.hadoop.tmp.dir'), SANDBOX_TEMP_DIR, 'Hadoop\'s temp dir (S3A\'s upload buffers)');
});

t.test('Hadoop\'s temp dir: ours in place of the pod\'s own line', async (t) => {
  const parts = localSubmitParts(admittedPod({ 'spark.hadoop.hadoop.tmp.dir': '/tmp/mine' }), machine, 1);
  t.same(confValues(parts.options).filter((c) => c.startsWith('spark.hadoop.hadoop.tmp.dir=')), [`spark.hadoop.hadoop.tmp.dir=${SANDBOX_TEMP_DIR}`], 'one line, the work dir\'s');
});

t.test('the pod\'s own JVM options are kept, ours after them (the JVM takes the last -D of a name)', async (t) => {
  const own = "'-XX:OnOutOfMemoryError=echo oom; true' -Djava.io.tmpdir=/tmp -Dx=y";
  const parts = localSubmitParts(admittedPod({ 'spark.driver.extraJavaOptions': own }), machine, 1);
  t.equal(last(parts.options, 'spark.driver.extraJavaOptions'), `${own} -Djava.io.tmpdir=${SANDBOX_TEMP_DIR}`);
  t.equal(confValues(parts.options).filter((c) => c.startsWith('spark.driver.extraJavaOptions=')).length, 1, 'one line: a second would replace the pod\'s');
});

t.test('a Python-first driver gets the same, through PYSPARK_SUBMIT_ARGS and its environment', async (t) => {
  const command = localDriverCommand(admittedPod({}), { ...machine, pythonFirst: true }, 1);
  t.equal(command.command, '/venv/bin/python');
  t.equal(command.env.TMPDIR, SANDBOX_TEMP_DIR);
  t.match(command.env.PYSPARK_SUBMIT_ARGS, `spark.driver.extraJavaOptions=-Djava.io.tmpdir=${SANDBOX_TEMP_DIR}`);
});

t.test('an unsandboxed driver keeps the machine\'s temp dir', async (t) => {
  t.equal(driverTemp(undefined), undefined);
  const parts = localSubmitParts(admittedPod({ 'spark.driver.extraJavaOptions': '-Dx=y' }), { ...machine, sandbox: undefined }, 1);
  t.equal(parts.env.TMPDIR, undefined);
  t.equal(last(parts.options, 'spark.hadoop.hadoop.tmp.dir'), undefined, 'Hadoop\'s default');
  t.equal(last(parts.options, 'spark.driver.extraJavaOptions'), '-Dx=y', 'the pod\'s options as they were');
});
