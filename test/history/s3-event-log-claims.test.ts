// Kubernetes mode's event log index on the test bed's S3 server (versitygw): drivers write their
// logs into one bucket, so a driver can write a log under any key. The index knows a log by the
// `App ID` and the appName mark inside it, never by its key: B's log named after A's run, or
// claiming A's id or A's application, gives B's link nothing and A's link stays A's run, also
// after a restart (a new index reads the bucket again).
import { join } from 'node:path';
import t from 'tap';
import { S3EventLogIndex } from '../../cluster/history/s3-event-log-index.js';
import type { Refusal } from '../../cluster/history/run-claims.js';
import { startS3Server } from '../../testbed/s3-server.js';
import { logText } from '../helpers/event-logs.js';
import { tempDir } from '../helpers/temp.js';

const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const PREFIX = 'spark-events';

t.test("object storage: a log named after, or claiming, another run is refused; the run's own link keeps it", { skip: s3Binary ? false : 'no S3 server (test/s3/build.sh)', timeout: 120_000 }, async (t) => {
  const s3 = await startS3Server(s3Binary!, join(tempDir(t, 'subsvc-s3-claims-'), 's3'));
  t.teardown(() => s3.stop());
  const put = (key: string, text: string) => s3.store.put(`${PREFIX}/${key}`, Buffer.from(text), 'application/octet-stream');
  await s3.store.ensureFolder(PREFIX);
  await put('eventlog_v2_spark-aaa/events_1_spark-aaa', logText({ sparkAppId: 'spark-aaa', appName: 'alice-1' }));
  await put('eventlog_v2_spark-aaa/appstatus_spark-aaa', '');
  const refusals: Refusal[] = [];
  const index = new S3EventLogIndex(s3.store, PREFIX, { onRefused: (r) => refusals.push(r), onError: (e) => t.fail(String(e)) });
  await index.refresh();
  t.match(index.lookup('alice-1'), { sparkAppId: 'spark-aaa', completed: true });

  // B's own run under A's name (a single file); A's id inside a log of B's; A's application for another run.
  await put('spark-aaa.inprogress', logText({ sparkAppId: 'spark-bbb', appName: 'bob-1' }));
  await put('spark-aaa', logText({ sparkAppId: 'spark-aaa', appName: 'bob-2' }));
  await put('eventlog_v2_spark-ccc/events_1_spark-ccc', logText({ sparkAppId: 'spark-ccc', appName: 'alice-1' }));
  await put('eventlog_v2_spark-ddd/events_1_spark-ddd', logText({ sparkAppId: 'spark-aaa', appName: 'bob-3' }));
  await index.refresh();
  for (const name of ['bob-1', 'bob-2', 'bob-3']) t.equal(index.lookup(name), undefined, `${name}: no run`);
  t.match(index.lookup('alice-1'), { sparkAppId: 'spark-aaa', entry: 'eventlog_v2_spark-aaa' }, "A's link: A's run");
  t.same(refusals.map((r) => r.entry).sort(), ['eventlog_v2_spark-ccc', 'eventlog_v2_spark-ddd', 'spark-aaa', 'spark-aaa.inprogress']);
  t.ok(refusals.every((r) => r.owner === 'alice-1'), 'each report names the application whose run or name was claimed');

  const again = new S3EventLogIndex(s3.store, PREFIX);
  await again.refresh();
  t.match(again.lookup('alice-1'), { sparkAppId: 'spark-aaa', entry: 'eventlog_v2_spark-aaa' }, 'after a restart too');
  for (const name of ['bob-1', 'bob-2', 'bob-3']) t.equal(again.lookup(name), undefined);

  // A's log removed (its application deleted): nothing held, and B's forgeries still serve no one but themselves.
  await index.remove('alice-1');
  t.equal(index.lookup('alice-1'), undefined);
});
