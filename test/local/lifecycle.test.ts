// Real Spark (the project's virtualenv, Java 17): examples/pi.py through the API to
// COMPLETED, and an application that raises to FAILED. Both run at once to save time.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot, startTestApi } from '../helpers/api.js';
import { waitForState } from '../helpers/poll.js';
import { realSpark } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const spark = realSpark();

t.test('real Spark: pi.py COMPLETES with its result in the log; a raising app FAILS with its exit code', { skip: spark ? false : 'no Spark virtualenv (scripts/setup.sh makes one)' }, async (t) => {
  const api = await startTestApi(t, { cores: 2, spark });
  const scripts = tempDir(t);
  const marker = `boom-${Math.random().toString(36).slice(2, 8)}`;
  const failing = join(scripts, 'fails.py');
  writeFileSync(failing, `from pyspark.sql import SparkSession\nspark = SparkSession.builder.getOrCreate()\nraise RuntimeError("${marker}")\n`);

  const pi = await api.call('POST', '/api/apps/', {
    jobName: 'pi',
    configOverrides: { type: 'Python', mainApplicationFile: `local://${join(repoRoot, 'examples', 'pi.py')}`, arguments: ['4'], executor: { cores: 1 } },
  });
  t.equal(pi.status, 201, pi.body.slice(0, 200));
  const bad = await api.call('POST', '/api/apps/', {
    jobName: 'fails',
    configOverrides: { type: 'Python', mainApplicationFile: `local://${failing}`, executor: { cores: 1 } },
  });
  t.equal(bad.status, 201, bad.body.slice(0, 200));

  const [done, failed] = await Promise.all([
    waitForState(() => api.getApp(pi.json.appName), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 150_000, intervalMs: 500 }),
    waitForState(() => api.getApp(bad.json.appName), ['COMPLETED', 'FAILED', 'UNKNOWN'], { timeoutMs: 150_000, intervalMs: 500 }),
  ]);
  const piLog = (await api.call('GET', `/api/apps/${pi.json.appName}/log`)).body;
  t.equal(done.state, 'COMPLETED', `pi.py COMPLETED (log tail: ${piLog.slice(-400)})`);
  t.equal(done.stateDetail, 'exit code 0');
  t.match(piLog, /Pi is roughly 3\.\d+/, 'the log holds the result');
  t.match(piLog, /local\[1\]|Running Spark version/, 'it was a real Spark driver');
  t.ok(done.createdAt! <= done.startedAt!, 'createdAt <= startedAt');
  t.ok(done.startedAt! <= done.endedAt!, 'startedAt <= endedAt');
  t.ok(Date.parse(done.endedAt!) - Date.parse(done.startedAt!) > 1000, 'it ran for a while: a JVM started');

  const badLog = (await api.call('GET', `/api/apps/${bad.json.appName}/log`)).body;
  t.equal(failed.state, 'FAILED', `the raising app FAILED (log tail: ${badLog.slice(-400)})`);
  t.match(failed.stateDetail, /^exit code [1-9]\d*$/, 'stateDetail holds the non-zero exit code');
  t.match(badLog, new RegExp(`RuntimeError: ${marker}`), 'the log holds the Python error');
  t.ok(failed.startedAt! <= failed.endedAt!);

  const listed = await api.call('GET', '/api/apps/?state=COMPLETED');
  t.same(listed.json.items.map((a: { appName: string }) => a.appName), [pi.json.appName], 'listed by state');
});
