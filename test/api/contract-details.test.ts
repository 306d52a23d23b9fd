// The exact contract: 405 with Allow, 414/413/415 and the log's text/plain in the OpenAPI
// document, no key material in logged URLs, an application's own `--master` left alone.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { localDriverCommand } from '../../cluster/local/spark-command.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { buildApi } from '../../submit-api/app.js';
import { logSerializers, redactUrl } from '../../submit-api/log-redaction.js';
import { admitPod, bareDriverPod, buildRules } from '../../domain/index.js';
import { exampleCluster, startTestApi } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';

t.test('405 with Allow for a known path and a wrong method; 404 for unknown paths', async (t) => {
  const api = await startTestApi(t);
  const cases: [string, string, string][] = [
    ['GET', '/api/apps/pi-20260101-000000-aaaaa/stop', 'POST'],
    ['PATCH', '/api/apps/', 'GET, HEAD, POST'],
    ['PUT', '/api/apps/pi-20260101-000000-aaaaa', 'DELETE, GET, HEAD'],
    ['POST', '/api/config-templates/x', 'DELETE, GET, HEAD, PUT'],
  ];
  for (const [method, url, allow] of cases) {
    const res = await api.call(method as 'GET', url);
    t.equal(res.status, 405, `${method} ${url}`);
    t.equal(res.headers.allow, allow);
    t.match(res.json, { statusCode: 405, message: new RegExp(`${method} is not allowed`) });
  }
  t.equal((await api.call('GET', '/api/nothing-here')).status, 404);
  const query = await api.call('QUERY' as 'GET', '/api/apps/pi-20260101-000000-aaaaa/stop');
  t.equal(query.status, 405, 'a body method without a content type: still 405');
  t.equal(query.headers.allow, 'POST');
});

t.test('405 comes after authentication', async (t) => {
  const keys = new FileKeyStore(tempDir(t));
  const api = await startTestApi(t, { auth: { enabled: true, store: keys } });
  t.equal((await api.call('PATCH', '/api/apps/')).status, 401, 'no key: 401, the methods are not revealed');
  const key = keys.create('user').key;
  t.equal((await api.call('PATCH', '/api/apps/', undefined, { 'x-api-key': key })).status, 405);
});

t.test('the OpenAPI document says 413, 414, 415 and the log is text/plain; 414 is as documented', async (t) => {
  const api = await startTestApi(t);
  const doc = (await api.call('GET', '/api/openapi.json')).json;
  const submit = doc.paths['/api/apps/'].post.responses;
  t.ok(submit['413'] && submit['415'], 'POST /api/apps/: 413 and 415');
  t.ok(doc.paths['/api/config-templates/{name}'].put.responses['413'], 'PUT template: 413');
  t.ok(doc.paths['/api/apps/{appName}'].get.responses['414'], 'a path with a parameter: 414');
  t.same(Object.keys(doc.paths['/api/apps/{appName}/log'].get.responses['200'].content), ['text/plain']);
  const long = await api.call('GET', `/api/apps/${'a'.repeat(1100)}`);
  t.equal(long.status, 414, 'a path parameter over 1024 characters');
  t.equal((await api.call('GET', `/api/apps/${'a'.repeat(300)}`)).status, 400, 'shorter ones: the schema says 400');
  t.equal(long.json.statusCode, 414);
});

t.test('keys in query strings never reach the log', async (t) => {
  t.equal(redactUrl('/api/apps/?token=ssk_abc&jobName=pi'), '/api/apps/?token=[redacted]&jobName=pi');
  t.equal(redactUrl('/api/x?API_KEY=1&b=ssk_zzz'), '/api/x?API_KEY=[redacted]&b=ssk_[redacted]');
  let logged = '';
  const sink = new Writable({ write(chunk, _enc, done) { logged += chunk.toString(); done(); } });
  const keys = new FileKeyStore(tempDir(t));
  const key = keys.create('user').key;
  const app = await buildApi({
    cluster: (await startTestApi(t)).cluster,
    auth: { enabled: true, store: keys },
    loggerInstance: pino({ level: 'info', serializers: logSerializers }, sink),
  });
  t.teardown(() => app.close());
  await app.inject({ method: 'GET', url: `/api/apps/?token=${key}` });
  await app.inject({ method: 'GET', url: `/api/apps/?x=1&access_token=${key}`, headers: { 'x-api-key': key } });
  t.match(logged, /token=\[redacted\]/, 'the request lines are logged, redacted');
  t.notMatch(logged, key, 'the key itself is nowhere in the log');
  t.notMatch(logged, key.slice(4, 20));
});

t.test("`--master` among the application's own arguments is left alone in local mode", async (t) => {
  const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'local' });
  const pod = bareDriverPod({ appName: 'm-20260101-000000-aaaaa', jobName: 'm', namespace: 'local', configOverrides: {
    type: 'Python', mainApplicationFile: 'local:///jobs/job.py', arguments: ['--master', 'yarn', '--input', 'x'],
  } });
  const admitted = admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => j });
  if (admitted.outcome !== 'admitted') throw new Error(admitted.outcome);
  const { args } = localDriverCommand(admitted.pod, { sparkSubmit: '/x/spark-submit', workDir: '/tmp/w' }, 3);
  const main = args.indexOf('/jobs/job.py');
  t.ok(main > 0, 'the main file, mapped from local://');
  t.same(args.slice(main + 1), ['--master', 'yarn', '--input', 'x'], "the application's arguments as written");
  t.same(args.slice(0, main).filter((a, i, all) => all[i - 1] === '--master'), ['local[3]'], 'one --master of ours, local[3]');
  const confs = args.slice(0, main).filter((a, i, all) => all[i - 1] === '--conf');
  t.ok(admitted.pod.spec!.containers[0].args!.includes('spark.driver.port=7078'), 'the pod declares its fixed driver port');
  t.same(confs.filter((c) => /^spark\.driver\.(port|blockManager\.port)=/.test(c)), ['spark.driver.port=0', 'spark.driver.blockManager.port=0'],
    'a local driver takes free ports: many drivers share this machine\'s address');
});
