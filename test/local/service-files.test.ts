// What a local driver may point at (cluster/local/service-files.ts): no main file or Spark file
// list inside the data dir, however the path is spelt (symlink, `..`, $(SPARK_LOCAL_DIRS), a
// fragment); JVM options that run commands only inside a sandbox.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { ApplicationConfig } from '../../schemas/index.js';
import { serviceFileRefusal } from '../../cluster/local/service-files.js';
import { admitPod, buildRules } from '../../domain/index.js';
import { bareDriverPod } from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';

const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'local' });

function admitted(configOverrides: ApplicationConfig) {
  const pod = bareDriverPod({ appName: 'peek-20260101-000000-aaaaa', jobName: 'peek', namespace: 'local', configOverrides });
  const result = admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => `${j}-x` });
  if (result.outcome !== 'admitted') throw new Error(`not admitted: ${JSON.stringify(result)}`);
  return result.pod;
}

t.test('paths into the data dir are refused however they are spelt; others pass', async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const workDir = join(dataDir, 'work', 'peek-20260101-000000-aaaaa');
  mkdirSync(workDir, { recursive: true });
  writeFileSync(join(dataDir, 'keys.json'), '{}');
  const elsewhere = join(root, 'jobs');
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, 'job.py'), 'print(1)\n');
  symlinkSync(join(dataDir, 'keys.json'), join(elsewhere, 'innocent.py'));
  symlinkSync(dataDir, join(elsewhere, 'dir'));
  const ctx = { dataDir, workDir, sandboxed: true };
  for (const [overrides, field] of [
    [{ mainApplicationFile: `local://${join(elsewhere, 'innocent.py')}` }, 'mainApplicationFile'],
    [{ mainApplicationFile: `local://${join(elsewhere, 'dir', 'session-secret')}#.py` }, 'mainApplicationFile'],
    [{ mainApplicationFile: `file://${dataDir}/gateway-secret` }, 'mainApplicationFile'],
    [{ mainApplicationFile: '../../keys.json' }, 'mainApplicationFile'],
    [{ mainApplicationFile: `local://${join(elsewhere, 'job.py')}`, engineConf: { 'spark.submit.pyFiles': `s3a://bucket/a.zip,local://${dataDir}/keys.json` } }, 'engineConf.spark.submit.pyFiles'],
    [{ mainApplicationFile: `local://${join(elsewhere, 'job.py')}`, engineConf: { 'spark.driver.extraClassPath': `/opt/a.jar:${dataDir}` } }, 'engineConf.spark.driver.extraClassPath'],
  ] as const) {
    t.match(serviceFileRefusal(admitted({ type: 'Python', ...overrides } as ApplicationConfig), ctx), { field, message: /inside the service's data dir/ }, JSON.stringify(overrides));
  }
  t.equal(serviceFileRefusal(admitted({ type: 'Python', mainApplicationFile: `local://${join(elsewhere, 'job.py')}`, engineConf: { 'spark.files': 'https://example.com/a.csv' } }), ctx), undefined);
  // A sandboxed driver reads relative paths from its work dir, inside the data dir: a marker is no path.
  const connectServer = admitted({ type: 'Scala', mainClass: 'org.apache.spark.sql.connect.service.SparkConnectServer', mainApplicationFile: 'spark-internal' });
  t.equal(serviceFileRefusal(connectServer, ctx), undefined, 'spark-submit\'s "spark-internal" (a Connect server\'s driver) is no file');
});

t.test('JVM options that run a command are refused without a sandbox only', async (t) => {
  const root = tempDir(t);
  const ctx = { dataDir: join(root, 'data'), workDir: join(root, 'data', 'work', 'x') };
  for (const options of ['-XX:OnOutOfMemoryError=touch /x', "'-XX:OnError=sh -c id'", '-agentpath:/x.so', '-javaagent:/a.jar', '-Xmx1g @/tmp/args']) {
    const pod = admitted({ type: 'Python', mainApplicationFile: 'local:///opt/job.py', engineConf: { 'spark.driver.extraJavaOptions': options } });
    t.match(serviceFileRefusal(pod, { ...ctx, sandboxed: false }), { field: 'engineConf.spark.driver.extraJavaOptions' }, options);
    t.equal(serviceFileRefusal(pod, { ...ctx, sandboxed: true }), undefined, `${options}: harmless in the sandbox`);
  }
  const plain = admitted({ type: 'Python', mainApplicationFile: 'local:///opt/job.py', engineConf: { 'spark.executor.extraJavaOptions': '-XX:+UseG1GC -Dx=y' } });
  t.equal(serviceFileRefusal(plain, { ...ctx, sandboxed: false }), undefined, 'ordinary JVM options pass');
});
