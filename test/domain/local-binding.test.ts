// Local mode refuses what would move a driver's Spark UI or RPC off loopback (issue 25), in the
// pure policy the API, dry runs and local admission share; Kubernetes mode is unaffected.
import t from 'tap';
import { checkOverrides, defaultPolicy, localBindingRefusal } from '../../domain/index.js';

const local = { ...defaultPolicy, refuseLauncherEnvironment: true };

t.test('settings that rebind a local driver are refused, naming the field', async (t) => {
  const cases: Array<[string, object]> = [
    ['configOverrides.engineConf.spark.driver.bindAddress', { engineConf: { 'spark.driver.bindAddress': '0.0.0.0' } }],
    ['configOverrides.engineConf.spark.ui.port', { engineConf: { 'spark.ui.port': '4040' } }],
    ['configOverrides.driver.env.SPARK_LOCAL_IP', { driver: { env: { SPARK_LOCAL_IP: '0.0.0.0' } } }],
    ['configOverrides.driver.env.spark_public_dns', { driver: { env: { spark_public_dns: 'x' } } }],
    ['configOverrides.engineConf.spark.driverEnv.SPARK_LOCAL_IP', { engineConf: { 'spark.driverEnv.SPARK_LOCAL_IP': '0.0.0.0' } }],
    ['configOverrides.engineConf.spark.executorEnv.SPARK_LOCAL_HOSTNAME', { engineConf: { 'spark.executorEnv.SPARK_LOCAL_HOSTNAME': 'x' } }],
  ];
  for (const [field, overrides] of cases) {
    const refusal = checkOverrides(overrides, local, 'spark-driver');
    t.equal(refusal?.field, field, `${field} is refused`);
    t.match(refusal?.message, /loopback/, `${field}: the message says why`);
  }
});

t.test('other settings pass, and Kubernetes mode keeps its own rules', async (t) => {
  t.equal(localBindingRefusal({ engineConf: { 'spark.ui.retainedJobs': '10' }, driver: { env: { MY_VAR: '1' } } }), undefined, 'unrelated settings pass');
  t.equal(checkOverrides({ engineConf: { 'spark.driver.bindAddress': '0.0.0.0' } }, defaultPolicy, 'spark-driver'), undefined, 'not refused outside local mode');
});
