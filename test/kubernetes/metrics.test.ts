// Kubernetes mode on the test bed's real apiserver: submissions go through the real
// admission webhook, and one scrape of the API's /metrics (the webhook runs in this process,
// so it shares the default registry) shows every series of the API and the webhook move:
// request latency by route, submissions by outcome, admissions by outcome and latency,
// the webhook certificates' notAfter.
import t from 'tap';
import { exampleCluster } from '../helpers/api.js';
import { startKubeBed } from '../helpers/kubernetes.js';
import { bareDriverPod } from '../../domain/driver-pod.js';
import { sample } from '../helpers/metrics.js';

t.test('metrics of the API and the webhook move with submissions on the test bed', { skip: process.env.SUBMISSION_SERVICE_TESTBED ? false : 'no test bed (SUBMISSION_SERVICE_TESTBED; scripts/test.sh builds it)' }, async (t) => {
  const bed = await startKubeBed(t);
  const scrape = async () => {
    const res = await fetch(`${bed.api.baseUrl}/metrics`);
    t.equal(res.status, 200);
    return res.text();
  };
  const before = await scrape();
  const overrides = { mainApplicationFile: 'local:///opt/spark/examples/src/main/python/pi.py', executor: { cores: 1 } };
  for (let i = 0; i < 2; i++) t.equal((await bed.call('POST', '/api/apps/', { jobName: 'metered', configOverrides: overrides })).status, 201);
  t.equal((await bed.call('POST', '/api/apps/?dryRun=true', { jobName: 'metered', configOverrides: overrides })).status, 200);
  const cores = exampleCluster().expected.rejectedExecutorCores;
  t.equal((await bed.call('POST', '/api/apps/', { jobName: 'metered', configOverrides: { executor: { cores } } })).status, 422);
  // The API refuses that one itself, before writing; a team's pod asking the same is refused by the webhook.
  const oversized = bareDriverPod({ appName: 'metered-team', jobName: 'metered', namespace: bed.namespace, configOverrides: { executor: { cores } } });
  const refused = await bed.clients.core.createNamespacedPod({ namespace: bed.namespace, body: oversized }).then(() => undefined, (e: { code?: number }) => e.code);
  t.equal(refused, 422, "the team's oversized pod: refused by the webhook");
  t.equal((await bed.call('POST', '/api/config-templates/', { name: 'metered', config: { executor: { cores: 1 } } })).status, 201);
  const after = await scrape();
  const moved = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);

  t.equal(moved('submission_service_submissions_total', { outcome: 'created' }), 2, 'submissions: created');
  t.equal(moved('submission_service_submissions_total', { outcome: 'dry_run' }), 1, 'submissions: dry_run');
  t.equal(moved('submission_service_submissions_total', { outcome: 'unschedulable' }), 1, 'submissions: unschedulable');
  t.equal(moved('submission_service_http_request_duration_seconds_count', { method: 'POST', route: '/api/apps/', status_code: '201' }), 2, 'latency by route and status');
  t.equal(moved('submission_service_http_request_duration_seconds_count', { method: 'POST', route: '/api/config-templates/', status_code: '201' }), 1);
  // The apiserver called the webhook (this API writes with the admin's certificate, not an identity of its own):
  // two creates and the dry run admitted, the team's oversized pod refused.
  t.ok(moved('submission_service_admissions_total', { outcome: 'admitted' }) >= 3, `admissions: admitted ${moved('submission_service_admissions_total', { outcome: 'admitted' })}`);
  t.ok(moved('submission_service_admissions_total', { outcome: 'refused' }) >= 1, 'admissions: refused');
  t.ok(moved('submission_service_admission_duration_seconds_count') >= 4, 'admission latency observed');
  const now = Date.now() / 1000;
  t.ok(sample(after, 'submission_service_certificate_not_after_seconds', { certificate: 'serving' }) > now, 'serving certificate notAfter in the future');
  t.ok(sample(after, 'submission_service_certificate_not_after_seconds', { certificate: 'ca' }) > now, 'CA notAfter in the future');
});
