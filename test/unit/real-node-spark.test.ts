// What `testbed up --real-node` decides before it builds anything (testbed/real-node-spark.ts,
// testbed/history-bed.ts): the node-pool file it writes (this node as the pool, every offered
// version's locally built image), which build.sh archive is which version's, and which Spark
// runs the History Server on S3 (the newest whose S3A jars are here).
import t from 'tap';
import { locallyBuilt, realNodePools, REAL_NODE_POOL, runtimeArchiveVersion, sparkRuntimeImage } from '../../testbed/real-node-spark.js';
import { historySpark, s3aClassPath } from '../../testbed/history-bed.js';

t.test('the node-pool file: this node as the pool, each offered version\'s local image unless the file names one', async (t) => {
  const own = realNodePools(undefined);
  t.same(own.nodePools, [REAL_NODE_POOL], 'no file: the node is the one pool');
  t.same(own.images, { '3.5.7': 'localhost/submission-service/spark:3.5.7', '4.2.0': 'localhost/submission-service/spark:4.2.0' }, 'every default version\'s image');
  const given = realNodePools({ nodePools: [{ ...REAL_NODE_POOL, instanceName: 'big' }], engineVersions: ['3.5.7', '4.2.0'], images: { '3.5.7': 'registry.example/spark:3.5.7' } });
  t.equal(given.nodePools?.[0]?.instanceName, 'big', 'a given file keeps its pools');
  t.same(given.images, { '3.5.7': 'registry.example/spark:3.5.7', '4.2.0': sparkRuntimeImage('4.2.0') }, 'its own image kept, the missing one filled in');
  t.same(locallyBuilt(given.images!, ['3.5.7', '4.2.0']), ['4.2.0'], 'only the filled-in one is built and imported');
});

t.test('build.sh\'s archive names map to versions by their place in SPARK_VERSIONS', async (t) => {
  t.equal(runtimeArchiveVersion('spark-runtime', ['3.5.7', '4.2.0']), '3.5.7', 'the first keeps the plain name');
  t.equal(runtimeArchiveVersion('spark-runtime-4.2.0', ['3.5.7', '4.2.0']), '4.2.0');
  t.equal(runtimeArchiveVersion('spark-runtime-4.3.0', ['3.5.7', '4.2.0']), undefined, 'a version not asked for');
  t.equal(runtimeArchiveVersion('kernel-4.2.0', ['3.5.7', '4.2.0']), undefined, 'not a runtime image');
});

t.test('the History Server on S3 runs the newest Spark whose S3A jars are here', async (t) => {
  const env = { SUBMISSION_SERVICE_S3A_JARS: '/j/aws-3.3.4.jar', SUBMISSION_SERVICE_S3A_JARS_SPARK4: '/j/aws-3.5.0.jar' };
  t.equal(s3aClassPath('3.5.7', env), '/j/aws-3.3.4.jar', '3.x: Hadoop 3.3.4\'s connector');
  t.equal(s3aClassPath('4.2.0', env), '/j/aws-3.5.0.jar', '4.x: Hadoop 3.5.0\'s');
  const sparks = [{ version: '4.2.0', sparkSubmit: '/v4/spark-submit' }, { version: '3.5.7', sparkSubmit: '/v3/spark-submit' }];
  t.same(historySpark(sparks, env), { ...sparks[0], classPath: '/j/aws-3.5.0.jar' }, 'Spark 4.2 (it reads 3.5\'s event logs too)');
  t.same(historySpark(sparks, { SUBMISSION_SERVICE_S3A_JARS: '/j/aws-3.3.4.jar' }), { ...sparks[1], classPath: '/j/aws-3.3.4.jar' }, 'without 4.x jars: 3.5.7');
  t.equal(historySpark(sparks, {}), undefined, 'no jars: none');
});
