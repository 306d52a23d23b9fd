// A key per application on the test bed's S3 server (versitygw 1.8, its own IAM): the key made
// for application A reaches A's folder only (it writes, reads and lists there, as S3A does), and
// neither B's folder, nor the History Server's directory, nor the archived logs, nor the bucket's
// root; revoked, it reaches nothing. The collector moves only a log whose head names the
// application, and never over an entry the history has.
import { join } from 'node:path';
import { Client } from 'minio';
import t from 'tap';
import { collectS3EventLogs } from '../../cluster/history/collect-s3-event-log.js';
import { type EventLogKey, VersityEventLogKeys } from '../../cluster/history/event-log-keys.js';
import { startS3Server, type S3Server } from '../../testbed/s3-server.js';
import { logText } from '../helpers/event-logs.js';
import { tempDir } from '../helpers/temp.js';

const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const skip = s3Binary ? false : 'no S3 server (test/s3/build.sh)';

/** An S3 client holding one key, as a driver's code would. */
function clientOf(s3: S3Server, key: EventLogKey): Client {
  const url = new URL(s3.endpoint);
  return new Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey: key.accessKeyId, secretKey: key.secretAccessKey, pathStyle: true, region: 'us-east-1' });
}

const codeOf = (work: Promise<unknown>): Promise<string> => work.then(() => 'allowed', (error: { code?: string }) => error.code ?? String(error));

async function listed(client: Client, bucket: string, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of client.listObjectsV2(bucket, prefix, true)) names.push(item.name ?? item.prefix ?? '');
  return names;
}

t.test('a key per application: its own folder only, then nothing once revoked', { skip, timeout: 120_000 }, async (t) => {
  const s3 = await startS3Server(s3Binary!, join(tempDir(t, 'subsvc-s3-keys-'), 's3'), 'spark-history', '127.0.0.1', { users: true });
  t.teardown(() => s3.stop());
  const keys = new VersityEventLogKeys({ adminEndpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey, store: s3.store });
  const { bucket } = s3;
  await s3.store.put('spark-events/eventlog_v2_spark-old/events_1_spark-old', Buffer.from('{}\n'));
  await s3.store.put('spark-logs/other-1/driver.log', Buffer.from('secret\n'));
  await s3.store.put('spark-incoming/bob-1/eventlog_v2_spark-b/events_1_spark-b', Buffer.from('{}\n'));
  const a = clientOf(s3, await keys.grant('alice-1', 'spark-incoming/alice-1'));
  await keys.grant('bob-1', 'spark-incoming/bob-1');
  t.same((await keys.granted()).sort(), ['alice-1', 'bob-1'], 'the policy names both applications');

  // What S3A does in its own folder: head the directory, list it, write, read, rename (copy + delete).
  const own = 'spark-incoming/alice-1/eventlog_v2_spark-a/events_1_spark-a';
  t.equal(await codeOf(a.putObject(bucket, own, Buffer.from('{}\n'))), 'allowed', 'A writes its own event log');
  t.equal(await codeOf(a.statObject(bucket, own)), 'allowed', 'A heads it');
  t.same(await listed(a, bucket, 'spark-incoming/alice-1/'), [own], 'A lists its own folder');
  t.equal(await codeOf(a.copyObject(bucket, `${own}.copy`, `/${bucket}/${own}`)), 'allowed', 'A copies within it');
  t.equal(await codeOf(a.removeObject(bucket, `${own}.copy`)), 'allowed', 'A deletes within it');

  const denied = 'AccessDenied';
  for (const prefix of ['spark-incoming/bob-1/', 'spark-incoming/', 'spark-events/', 'spark-logs/', '', 'spark-incoming/alice-10/']) {
    t.equal(await codeOf(listed(a, bucket, prefix)), denied, `A cannot list "${prefix}"`);
  }
  for (const key of ['spark-incoming/bob-1/eventlog_v2_spark-b/events_1_spark-b', 'spark-events/eventlog_v2_spark-old/events_1_spark-old', 'spark-logs/other-1/driver.log', 'spark-incoming/alice-10/x']) {
    t.equal(await codeOf(a.getObject(bucket, key)), denied, `A cannot read ${key}`);
    t.equal(await codeOf(a.putObject(bucket, key, Buffer.from('forged'))), denied, `A cannot write ${key}`);
    t.equal(await codeOf(a.removeObject(bucket, key)), denied, `A cannot delete ${key}`);
  }
  t.equal(await codeOf(a.copyObject(bucket, own, `/${bucket}/spark-logs/other-1/driver.log`)), denied, 'A cannot copy an archived log into its folder');
  t.equal((await s3.store.readSmall('spark-logs/other-1/driver.log', 100))?.toString(), 'secret\n', 'the archived log is untouched');

  await keys.revoke('alice-1');
  t.same(await keys.granted(), ['bob-1'], "B's rights stay");
  t.match(await codeOf(a.putObject(bucket, own, Buffer.from('late'))), /InvalidAccessKeyId|AccessDenied/, 'revoked: A writes nothing more');
  t.match(await codeOf(listed(a, bucket, 'spark-incoming/alice-1/')), /InvalidAccessKeyId|AccessDenied/, 'revoked: A lists nothing');
});

t.test("collecting: only a finished log whose head names the application moves, never over the history's", { skip, timeout: 120_000 }, async (t) => {
  const s3 = await startS3Server(s3Binary!, join(tempDir(t, 'subsvc-s3-collect-'), 's3'));
  t.teardown(() => s3.stop());
  const put = (key: string, text: string) => s3.store.put(key, Buffer.from(text), 'application/octet-stream');
  const from = 'spark-incoming/alice-1';
  await put(`${from}/eventlog_v2_spark-a/events_1_spark-a`, logText({ sparkAppId: 'spark-a', appName: 'alice-1' }));
  await put(`${from}/eventlog_v2_spark-a/appstatus_spark-a`, '');
  await put(`${from}/eventlog_v2_spark-b/events_1_spark-b`, logText({ sparkAppId: 'spark-b', appName: 'bob-1' }));
  await put(`${from}/eventlog_v2_spark-c/events_1_spark-c`, logText({ sparkAppId: 'spark-x', appName: 'alice-1' }));
  await put(`${from}/eventlog_v2_spark-old/events_1_spark-old`, logText({ sparkAppId: 'spark-old', appName: 'alice-1' }));
  await put('spark-events/eventlog_v2_spark-old/events_1_spark-old', logText({ sparkAppId: 'spark-old', appName: 'carol-1' }));
  const warnings: string[] = [];
  const moved = await collectS3EventLogs(s3.store, { from, to: 'spark-events', appName: 'alice-1' }, (entry) => warnings.push(entry));
  t.same(moved, ['eventlog_v2_spark-a'], 'its own log moves');
  t.same(warnings.sort(), ['eventlog_v2_spark-b', 'eventlog_v2_spark-c', 'eventlog_v2_spark-old'], "another application's, a name that is not its id, an entry the history has: refused");
  const keys: string[] = [];
  for await (const item of s3.store.list('spark-events/')) if ('key' in item) keys.push(item.key);
  t.same(keys.sort(), ['spark-events/eventlog_v2_spark-a/appstatus_spark-a', 'spark-events/eventlog_v2_spark-a/events_1_spark-a', 'spark-events/eventlog_v2_spark-old/events_1_spark-old']);
  t.match((await s3.store.readSmall('spark-events/eventlog_v2_spark-old/events_1_spark-old', 1 << 20))?.toString(), /carol-1/, "the history's entry is untouched");
});
