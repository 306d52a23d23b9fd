// Interactive drivers in local mode start Python first, the way Spark's bin/pyspark does:
// the command built from a real admitted pod, and pyspark's own reading of it (shlex.split of
// PYSPARK_SUBMIT_ARGS, checked with the project's real Python when it is there).
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { localDriverCommand } from '../../cluster/local/spark-command.js';
import { shellQuote } from '../../cluster/local/python-first.js';
import { admittedLocalPod } from '../helpers/local-driver-pod.js';
import { realSpark, sparkEnv } from '../helpers/service.js';

const admittedPod = (mainApplicationFile: string) => admittedLocalPod('k', { type: 'Python', mainApplicationFile, arguments: ['--x', "it's a value"], driver: { env: { GREETING: 'hello world' } } });

const machine = { sparkSubmit: '/venv/bin/spark-submit', python: '/venv/bin/python', workDir: '/tmp/w', uiPort: 4555 };

t.test('an interactive Python driver runs `python MAIN ARGS`; spark-submit options go to PYSPARK_SUBMIT_ARGS', async (t) => {
  const pod = admittedPod('local:///srv/launcher.py');
  const batch = localDriverCommand(pod, machine, 2);
  const first = localDriverCommand(pod, { ...machine, pythonFirst: true }, 2);
  t.equal(batch.command, '/venv/bin/spark-submit', 'without pythonFirst: spark-submit, as before');
  t.equal(first.command, '/venv/bin/python', 'with it: the driver Python itself');
  t.same(first.args, ['/srv/launcher.py', '--x', "it's a value"], 'the main file (from local://) and the app\'s own arguments');
  const main = batch.args.indexOf('/srv/launcher.py');
  const submitArgs = first.env.PYSPARK_SUBMIT_ARGS;
  t.ok(submitArgs.endsWith(' pyspark-shell'), 'ends with the primary resource pyspark starts its JVM with');
  t.equal(submitArgs, [...batch.args.slice(0, main), 'pyspark-shell'].map(shellQuote).join(' '),
    'the same options spark-submit gets on the batch path, in the same order');
  t.ok(submitArgs.includes("--master 'local[2]'"), 'master local[2], quoted for the shell');
  for (const expected of ['spark.ui.port=4555', 'spark.driver.port=0', 'spark.driver.blockManager.port=0',
    'spark.ui.proxyBase=/dashboard/apps/k-20260101-000000-aaaaa/spark-ui', 'spark.driver.bindAddress=127.0.0.1']) {
    t.ok(submitArgs.includes(expected), expected);
  }
  t.equal(first.env.GREETING, 'hello world', "the pod's env is kept");
  t.equal(first.env.PYSPARK_PYTHON, '/venv/bin/python', 'executors (Python workers) use the same Python');
  t.equal(first.env.PYTHONUNBUFFERED, 'YES');
  t.notOk(batch.env.PYSPARK_SUBMIT_ARGS, 'the batch path sets no PYSPARK_SUBMIT_ARGS');
});

t.test('python first applies only to .py main files and needs a known Python', async (t) => {
  const jar = localDriverCommand(admittedPod('local:///srv/app.jar'), { ...machine, pythonFirst: true }, 1);
  t.equal(jar.command, '/venv/bin/spark-submit', 'a jar still goes through spark-submit');
  const noPython = localDriverCommand(admittedPod('local:///srv/launcher.py'), { ...machine, python: undefined, pythonFirst: true }, 1);
  t.equal(noPython.command, '/venv/bin/spark-submit', 'no project Python: spark-submit, which finds its own');
});

t.test("shell quoting survives pyspark's shlex.split", { skip: realSpark() ? false : 'needs the Spark virtualenv' }, async (t) => {
  const first = localDriverCommand(admittedPod('local:///srv/launcher.py'), { ...machine, pythonFirst: true }, 2);
  const tricky = ["a b", "it's", 'x"y', '$(HOME)', '', 'back\\slash', 'spark.app.name=k-1'];
  const line = `${first.env.PYSPARK_SUBMIT_ARGS} ${tricky.map(shellQuote).join(' ')}`;
  const python = `${sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV}/bin/python`;
  const run = spawnSync(python, ['-c', 'import json, shlex, sys; print(json.dumps(shlex.split(sys.argv[1])))', line], { encoding: 'utf8' });
  t.equal(run.status, 0, run.stderr);
  const split = JSON.parse(run.stdout) as string[];
  const batch = localDriverCommand(admittedPod('local:///srv/launcher.py'), machine, 2);
  t.same(split, [...batch.args.slice(0, batch.args.indexOf('/srv/launcher.py')), 'pyspark-shell', ...tricky], 'every argument comes back as written');
});
