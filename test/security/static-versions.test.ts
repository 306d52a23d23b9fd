// Spark's static files are answered by version, never by application (issue 25: "anonymous
// assets answer the same for every name"). Before: a cookieless `/static/` request looked up the
// name's engineVersion, so an existing 4.2.0 run's name got Spark 4.2.0's stagepage.js and an
// unknown name 3.5.7's: an existence (and version) oracle. Now the pages' links name their Spark
// (`static/spark-<version>/…`), and every static request answers the same for every name,
// existing or not, with any key or none. Local mode, `--auth on`, a real 4.2.0 run.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { SparkEnvs } from '../../cluster/local/spark-envs.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const base = realSpark();
const four = base && await new SparkEnvs({ base }).ready('4.2.0');
const skip = base && four ? false : 'needs the 3.5.7 and 4.2 virtualenvs (SETUP_SPARK_VERSIONS=1 scripts/setup.sh)';
const MADE_UP = 'no-such-app-7f3a9c';

t.test('static files answer the same for an existing 4.2.0 run and an unknown name, with any key or none', { skip, timeout: 900_000 }, async (t) => {
  const dir = mkdtempSync('/var/tmp/subsvc-static-versions-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  const key = new FileKeyStore(dataDir).create('admin', 'ops').key;
  const api = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--sandbox', 'off', '--cores', '2'] });
  const withKey = (method: string, path: string, body?: unknown) => http(api.url, method, path, body, { 'x-api-key': key });
  const main = join(dir, 'ends.py');
  writeFileSync(main, 'from pyspark.sql import SparkSession\nSparkSession.builder.getOrCreate().range(10).count()\n', { mode: 0o644 });
  chmodSync(dir, 0o711);
  const created = await withKey('POST', '/api/apps/', { jobName: 'four', configOverrides: { type: 'Python', engineVersion: '4.2.0', mainApplicationFile: `local://${main}` } });
  t.equal(created.status, 201, 'a 4.2.0 application is submitted');
  const appName = created.json.appName as string;
  await waitForState(() => withKey('GET', `/api/apps/${appName}`).then((r) => r.json), 'COMPLETED', { timeoutMs: 600_000 });
  await until(async () => (await withKey('GET', `/api/apps/${appName}`)).json.sparkUi?.state === 'history', { timeoutMs: 120_000, what: 'the run in the history' });

  const asked = (name: string, file: string, headers: Record<string, string> = {}) => http(api.url, 'GET', `/dashboard/apps/${name}/spark-ui/static/${file}`, undefined, headers);
  const same = async (t: Test, file: string, what: string) => {
    const answers = [await asked(appName, file), await asked(MADE_UP, file), await asked(appName, file, { 'x-api-key': key }), await asked(MADE_UP, file, { 'x-api-key': key })];
    t.same(answers.map((a) => a.status), Array(4).fill(answers[0]!.status), `${what}: one status for the run's name and an unknown one, without and with a key (${answers[0]!.status})`);
    t.ok(answers.every((a) => a.text === answers[0]!.text), `${what}: one body for all four`);
    return answers[0]!;
  };

  await t.test('an unversioned path without a key: the installation\'s own Spark for every name (it was the run\'s 4.2.0 before)', async (t) => {
    const [run, unknown] = [await asked(appName, 'stagepage.js'), await asked(MADE_UP, 'stagepage.js')];
    t.equal(run.status, unknown.status, `the same status (${run.status}, ${unknown.status})`);
    t.equal(run.text, unknown.text, 'the same body');
  });

  await t.test('a versioned path: that version\'s file, whoever asks for whichever name', async (t) => {
    const flamegraph = await same(t, 'spark-4.2.0/flamegraph.js', '4.2.0\'s flamegraph.js (only Spark 4 has it)');
    t.equal(flamegraph.status, 200);
    t.match(flamegraph.headers.get('content-type'), /javascript/);
    t.equal(flamegraph.headers.get('cache-control'), 'public, max-age=86400');
    t.equal((await same(t, 'spark-3.5.7/flamegraph.js', '3.5.7 has no flamegraph.js')).status, 404);
    t.equal((await same(t, 'spark-3.5.7/jquery-3.5.1.min.js', '3.5.7\'s own jQuery')).status, 200);
    t.equal((await same(t, 'spark-9.9.9/webui.js', 'a version not offered')).status, 404);
    const [four_, three] = [await asked(MADE_UP, 'spark-4.2.0/stagepage.js'), await asked(MADE_UP, 'spark-3.5.7/stagepage.js')];
    t.not(four_.text, three.text, 'the same name, each version\'s own bytes');
  });

  await t.test('the run\'s history page names the History Server\'s Spark in its static links, and each of them loads', async (t) => {
    const prefix = `/dashboard/apps/${appName}/spark-ui`;
    const page = await withKey('GET', `${prefix}/jobs/`);
    t.equal(page.status, 200);
    const links = [...page.text.matchAll(/(?:src|href)="([^"]*\/static\/[^"]*)"/g)].map((m) => m[1]!);
    t.ok(links.length > 3, `the page names Spark's scripts and styles (${links.length})`);
    t.same(links.filter((link) => !link.startsWith(`${prefix}/static/spark-4.2.0/`)), [], 'every one under static/spark-4.2.0/ (the History Server runs the newest Spark prepared)');
    for (const link of links) t.equal((await http(api.url, 'GET', link.split('?')[0]!)).status, 200, `${link} loads without a key`);
  });
});
