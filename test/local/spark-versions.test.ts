// engineVersion chooses the Spark that runs, in local mode with real Spark: examples/pi.py as
// 3.5.7 and as 4.2.0 side by side, each COMPLETED, each driver's log naming its own version,
// each Spark UI opening from the history (one History Server, the newest Spark, reads both
// versions' event logs). A version the installation does not offer is refused with 400 naming
// the offered ones, in a submission, a dry run and a config template alike. The 4.2 virtualenv
// is made here if scripts/setup.sh (SETUP_SPARK_VERSIONS=1) did not make it: minutes, once.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const spark = realSpark();
const skip = spark ? false : 'no Spark virtualenv (scripts/setup.sh makes one)';
const pi = `local://${join(repoRoot, 'examples', 'pi.py')}`;
const VERSIONS = ['3.5.7', '4.2.0'];

interface Read { state: string; stateDetail?: string; config: { engineVersion: string }; sparkUi: { state: string } }
const read = (url: string, appName: string) => http(url, 'GET', `/api/apps/${appName}`).then((r) => r.json as Read);

t.test('a version not offered: a submission is refused with 400 naming the offered ones; a dry run and a template answer as SPEC shows', { skip }, async (t) => {
  const service = await startService(t, { dataDir: tempDir(t), args: ['--cores', '2'] });
  const body = { jobName: 'pi', configOverrides: { type: 'Python', mainApplicationFile: pi, engineVersion: '3.4.1' } };
  const res = await http(service.url, 'POST', '/api/apps/', body);
  t.equal(res.status, 400, 'a submission: 400');
  t.match(res.json.message, /engineVersion "3\.4\.1" is not offered here; offered: 3\.5\.7, 4\.2\.0/, 'names the offered versions');
  const dryVersion = await http(service.url, 'POST', '/api/apps/?dryRun=true', body);
  t.equal(dryVersion.status, 200, 'a dry run answers what admission would make of it (SPEC\'s dry runs name 3.0.0 and 2.4.4)');
  const template = await http(service.url, 'POST', '/api/config-templates/', { name: 'old', config: { engineVersion: '3.4.1' } });
  t.equal(template.status, 201, 'a template may name it (SPEC\'s show 2.4.4)');
  const fromTemplate = await http(service.url, 'POST', '/api/apps/', { jobName: 'pi', configTemplateName: 'old', configOverrides: { type: 'Python', mainApplicationFile: pi } });
  t.equal(fromTemplate.status, 400, 'a submission from that template is refused');
  t.same((await http(service.url, 'GET', '/api/apps/')).json.items, [], 'nothing was created');
  const dry = await http(service.url, 'POST', '/api/apps/?dryRun=true', { jobName: 'pi', configOverrides: { type: 'Python', mainApplicationFile: pi } });
  t.equal(dry.json.config?.engineVersion, '3.5.7', 'no engineVersion: the default, 3.5.7');
});

t.test('3.5.7 and 4.2.0 side by side: each COMPLETED on its own Spark, each UI from the history', { skip, timeout: 900_000 }, async (t) => {
  const dataDir = tempDir(t);
  const service = await startService(t, { dataDir, args: ['--cores', '2'] });
  const apps: Record<string, string> = {};
  for (const version of VERSIONS) {
    const res = await http(service.url, 'POST', '/api/apps/', {
      jobName: `pi-${version.replaceAll('.', '-')}`,
      configOverrides: { type: 'Python', mainApplicationFile: pi, arguments: ['2'], engineVersion: version, executor: { cores: 1, instances: 1 } },
    });
    t.equal(res.status, 201, res.status === 201 ? `submitted as ${version}` : res.text);
    apps[version] = res.json.appName as string;
  }
  for (const version of VERSIONS) {
    // A first 4.2 application here waits for its virtualenv (pip: minutes on a cold cache).
    const done = await waitForState(() => read(service.url, apps[version]!), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 600_000, intervalMs: 500 });
    const log = (await http(service.url, 'GET', `/api/apps/${apps[version]}/log`)).text;
    t.equal(done.state, 'COMPLETED', `${version}: COMPLETED (log tail: ${log.slice(-600)})`);
    t.equal(done.config.engineVersion, version, `${version}: its config says so`);
    t.match(log, new RegExp(`Running Spark version ${version.replaceAll('.', '\\.')}`), `${version}: the driver log names its Spark`);
    t.match(log, /Pi is roughly 3\.\d+/, `${version}: its result`);
  }
  for (const version of VERSIONS) {
    const appName = apps[version]!;
    await until(async () => (await read(service.url, appName)).sparkUi.state === 'history', { timeoutMs: 120_000, intervalMs: 250, what: `${version}'s history` });
    // The first request starts the History Server (a JVM) and waits for its scan.
    const runs = await http(service.url, 'GET', `/dashboard/apps/${appName}/spark-ui/api/v1/applications`);
    t.equal(runs.status, 200, `${version}: the history's REST API answers`);
    const run = (runs.json as { attempts: { appSparkVersion: string; completed: boolean }[] }[])[0];
    t.equal(run?.attempts[0]?.appSparkVersion, version, `${version}: the history shows the run of its own Spark`);
    const jobs = await http(service.url, 'GET', `/dashboard/apps/${appName}/spark-ui/jobs/`);
    t.equal(jobs.status, 200, `${version}: its jobs page opens from the history`);
    t.match(jobs.text, /Completed Jobs/, `${version}: the jobs page lists the finished job`);
  }
  // spark-class execs the JVM: the pid file names it, and its classpath names the Spark it runs.
  const [pid] = readFileSync(join(dataDir, 'run', 'history-server.pid'), 'utf8').trim().split(' ');
  const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  t.match(command, /\/spark-4\.2-[0-9a-f]{12}\/lib\/python[^ ]*\/pyspark\/jars\//, "one History Server, 4.2.0's, served both runs");
});
