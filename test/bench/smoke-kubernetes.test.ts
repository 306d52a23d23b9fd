// The benches on the test bed (apiserver and etcd; FakeKubelet where pods must run): the archived
// driver log on a bed of its own; the controller against the apiserver's ceiling, list latency,
// submissions and the webhook's latency on one `testbed up` they share (sharedBed in
// test/helpers/bench-smoke.ts), where each used to boot its own.
// Each runs as bench/README.md says with tiny counts (test/helpers/bench-smoke.ts).
import t from 'tap';
import { smokeTests } from '../helpers/bench-smoke.js';

smokeTests([
  'history/driver-log-kubernetes.ts',
  'kubernetes/controller-ceiling.ts',
  'kubernetes/list-latency.ts',
  'kubernetes/submissions.ts',
  'kubernetes/webhook-latency.ts',
]);

t.test('bench/kubernetes/real-node-start.ts', { skip: 'needs the test bed\'s real node (root, minutes): run it by hand as its head says' }, () => {});
