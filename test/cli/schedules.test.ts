// `submission-service schedules ...` (the compiled CLI) against the API in this process.
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { runCli } from '../helpers/service.js';

t.test('schedules create, list, get, pause, resume and delete from a terminal', async (t) => {
  const api = await startTestApi(t, { schedules: {} });
  const url = await api.app.listen({ port: 0, host: '127.0.0.1' });
  const { SUBMISSION_SERVICE_API_KEY: _key, ...inherited } = process.env;
  const env = { ...inherited, SUBMISSION_SERVICE_URL: url };
  const cli = (...args: string[]) => runCli(['schedules', ...args], env);
  const created = await cli('create', 'nightly', '--cron', '30 2 * * *', '--time-zone', 'Europe/Berlin', '--job', 'etl',
    '--set', 'mainApplicationFile=local:///fake/job.py', '--set', 'type=Python', '--concurrency', 'Forbid', '--starting-deadline', '600');
  t.equal(created.code, 0, created.stderr);
  t.match(JSON.parse(created.stdout), { name: 'nightly', timeZone: 'Europe/Berlin', concurrencyPolicy: 'Forbid', startingDeadlineSeconds: 600, configOverrides: { type: 'Python' } });
  const listed = await cli('list');
  t.match(listed.stdout, /^NAME .*\nnightly\s+30 2 \* \* \*\s+Europe\/Berlin\s+etl\s+\d{4}-/);
  t.equal(JSON.parse((await cli('pause', 'nightly')).stdout).suspend, true);
  t.match((await cli('list')).stdout, /nightly .* paused/);
  t.equal(JSON.parse((await cli('resume', 'nightly')).stdout).suspend, false);
  t.equal(JSON.parse((await cli('get', 'nightly')).stdout).name, 'nightly');
  const bad = await cli('create', 'broken', '--cron', 'sometimes', '--job', 'etl');
  t.equal(bad.code, 1);
  t.match(bad.stderr, /400 field "schedule"/, 'the API\'s message on stderr');
  t.equal((await cli('delete', 'nightly')).code, 0);
  t.equal((await cli('get', 'nightly')).code, 1, 'gone');
});
