// Kubernetes mode: a Connect session started on a warm pool's server is labelled with its session
// id on the Application (KubernetesCluster.setLabels, as the endpoint's hand-out does), so that
// another replica of the API finds it by the list's labelSelector (connect/sessions.ts) through
// the informer's cache. Real apiserver and webhook (the test bed); no driver runs.
import t from 'tap';
import { CONNECT_SESSION_LABEL } from '../../connect/server-app.js';
import { LABEL_JOB } from '../../domain/index.js';
import { startKubeBed } from '../helpers/kubernetes.js';

const skip = !process.env.SUBMISSION_SERVICE_TESTBED ? 'no test bed (scripts/setup.sh)' : false;

t.test('a label set on an Application is on the resource and found by the list\'s labelSelector', { skip, timeout: 600_000 }, async (t) => {
  const bed = await startKubeBed(t);
  const made = await bed.call('POST', '/api/apps/', { jobName: 'warm-server' });
  t.equal(made.status, 201, made.body);
  const { appName } = made.json as { appName: string };
  const sessionId = 'c0ffee00-0000-4000-8000-000000000001';
  const selector = `/api/apps/?labelSelector=${encodeURIComponent(`${CONNECT_SESSION_LABEL}=${sessionId}`)}`;
  t.same((await bed.call('GET', selector)).json.items, [], 'not found before it is labelled');

  await bed.api.cluster.setLabels(appName, { [CONNECT_SESSION_LABEL]: sessionId });
  const resource = (await bed.applications()).find((a) => a.metadata.name === appName) as { metadata: { labels?: Record<string, string> } } | undefined;
  t.equal(resource?.metadata.labels?.[CONNECT_SESSION_LABEL], sessionId, 'on the Application resource');
  t.equal(resource?.metadata.labels?.[LABEL_JOB], 'warm-server', 'its other labels kept');
  const listed = (await bed.call('GET', selector)).json.items as Array<{ appName: string }>;
  t.same(listed.map((a) => a.appName), [appName], 'the list finds it by the session label, at once (setLabels waits for the cache)');
  await t.resolves(bed.api.cluster.setLabels('no-such-application', { [CONNECT_SESSION_LABEL]: sessionId }), 'an application gone meanwhile is no error');
});
