// How executors reach their driver (domain/driver-dns.ts): under the namespace's one
// headless drivers' Service by name when the rules name it, else by the pod IP; a pod whose
// name cannot be a hostname falls back to its IP and says so, and never keeps a name under
// the Service that is not its own.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import {
  admitPod, ANNOTATION_DRIVER_ADDRESS, ANNOTATION_OVERRIDES, type AdmissionContext, bareDriverPod, buildRules, DEFAULT_DRIVER_SERVICE, driverAddress,
  LABEL_JOB, POD_IP_HOST,
} from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';

const context = (driverService?: string): AdmissionContext => ({
  rules: buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark-apps', driverService }),
  templates: () => undefined,
  applications: () => undefined,
  newAppName: (jobName) => `${jobName}-20261126-040000-abcde`,
});

/** The admitted pod of `pod`, and its spark.driver.host argument. */
function admitted(pod: V1Pod, ctx: AdmissionContext): { pod: V1Pod; host: string | undefined } {
  const admission = admitPod(pod, ctx);
  if (admission.outcome !== 'admitted') throw new Error(`not admitted: ${JSON.stringify(admission)}`);
  const args = admission.pod.spec!.containers[0].args ?? [];
  const host = args.find((arg) => arg.startsWith('spark.driver.host='))?.slice('spark.driver.host='.length);
  return { pod: admission.pod, host };
}

const bare = (appName: string) => bareDriverPod({ appName, jobName: 'pi', namespace: 'spark-apps' });

t.test('with a drivers\' Service: hostname, subdomain and spark.driver.host name the pod under it', async (t) => {
  const appName = 'pi-20261126-040000-abcde';
  const { pod, host } = admitted(bare(appName), context(DEFAULT_DRIVER_SERVICE));
  t.equal(pod.spec?.hostname, appName, 'the hostname is the pod\'s own name');
  t.equal(pod.spec?.subdomain, 'spark-drivers');
  t.equal(host, `${appName}.spark-drivers.spark-apps.svc`, 'executors dial the DNS name the Service publishes');
  t.notOk(pod.metadata?.annotations?.[ANNOTATION_DRIVER_ADDRESS], 'no fallback to explain');
});

t.test('without one: executors dial the pod IP, as before', async (t) => {
  const { pod, host } = admitted(bare('pi-20261126-040000-abcde'), context());
  t.equal(host, POD_IP_HOST);
  t.equal(pod.spec?.hostname, undefined);
  t.equal(pod.spec?.subdomain, undefined);
});

t.test('the longest appName the API makes fits a hostname; longer or dotted names fall back to the pod IP and say why', async (t) => {
  // jobName is at most 41 characters (schemas/submission.json): the appName then has 63.
  const longest = `${'j'.repeat(41)}-20261126-040000-abcde`;
  t.equal(longest.length, 63);
  t.equal(driverAddress(longest, 'spark-apps', DEFAULT_DRIVER_SERVICE).pod?.hostname, longest);
  for (const name of [`${'j'.repeat(42)}-20261126-040000-abcde`, 'team.nightly-report', 'Report']) {
    const address = driverAddress(name, 'spark-apps', DEFAULT_DRIVER_SERVICE);
    t.equal(address.host, POD_IP_HOST, `${name}: the pod IP`);
    t.equal(address.pod, undefined);
    t.match(address.fallback, /not a DNS-1123 label of at most 63 characters/);
  }
});

t.test('a team\'s pod that names another pod under the Service loses that name', async (t) => {
  const team: V1Pod = {
    metadata: {
      name: 'team.nightly-report', labels: { [LABEL_JOB]: 'nightly' },
      annotations: { [ANNOTATION_OVERRIDES]: '{}' },
    },
    spec: { hostname: 'pi-20261126-040000-abcde', subdomain: DEFAULT_DRIVER_SERVICE, containers: [{ name: 'spark-kubernetes-driver' }] },
  };
  const { pod, host } = admitted(team, context(DEFAULT_DRIVER_SERVICE));
  t.equal(host, POD_IP_HOST, 'its name cannot be a hostname: the pod IP');
  t.equal(pod.spec?.subdomain, undefined, 'the subdomain naming the drivers\' Service is removed');
  t.equal(pod.spec?.hostname, undefined, 'and the hostname it claimed');
  t.match(pod.metadata?.annotations?.[ANNOTATION_DRIVER_ADDRESS], /executors dial the driver's pod IP/, 'the pod says why');
  // A subdomain of the team's own is theirs to keep.
  const own = admitted({ ...team, spec: { ...team.spec!, subdomain: 'reports' } }, context(DEFAULT_DRIVER_SERVICE));
  t.equal(own.pod.spec?.subdomain, 'reports');
});
