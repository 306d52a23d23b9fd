// A stop's request in the Application's spec (cluster/kubernetes/stop-request.ts), against a fake
// apiserver that applies JSON patches with their test: the request and its reason are one write on
// the Application as read; a stop that finds one there writes nothing; of two stops at once the
// first's reason is kept (the second's test fails, it reads again and finds the request); a reason
// is cut to the CRD's bound; a write that keeps failing ends after a bounded number of tries.
import t from 'tap';
import { ConflictError } from '../../cluster/cluster.js';
import type { PatchOperation } from '../../cluster/kubernetes/config-copy.js';
import { KubernetesError } from '../../cluster/kubernetes/errors.js';
import { type ApplicationResource, desiredStatus } from '../../cluster/kubernetes/records.js';
import { boundedReason, requestStop, stopRequestPatch } from '../../cluster/kubernetes/stop-request.js';
import { STOP_REASON_MAX_LENGTH } from '../../schemas/crd.js';

function application(resourceVersion = '1'): ApplicationResource {
  return {
    apiVersion: 'submission-service.io/v1', kind: 'Application',
    metadata: { name: 'pi-1', namespace: 'spark-apps', creationTimestamp: '2026-11-25T10:00:00.000Z', resourceVersion },
    spec: { jobName: 'pi', configTemplateName: '', config: {} },
  };
}

/** One Application as the apiserver keeps it: a patch's test fails with 422, as Kubernetes answers a failed JSON patch test. */
class FakeApiserver {
  stored: ApplicationResource | undefined = application();
  patches = 0;
  reads = 0;
  read = async () => { this.reads++; return this.stored && structuredClone(this.stored); };
  patch = async (operations: PatchOperation[]) => {
    this.patches++;
    if (!this.stored) return undefined;
    const next = structuredClone(this.stored);
    for (const { op, path, value } of operations) {
      if (op === 'test') {
        if (path !== '/metadata/resourceVersion' || value !== next.metadata.resourceVersion) throw new KubernetesError(422, 'the test failed');
      } else (next.spec as Record<string, unknown>)[path.replace('/spec/', '')] = value;
    }
    next.metadata.resourceVersion = String(Number(next.metadata.resourceVersion) + 1);
    this.stored = next;
    return next;
  };

  /** Another writer (a label, the status) changed it. */
  touch() { this.stored!.metadata.resourceVersion = String(Number(this.stored!.metadata.resourceVersion) + 1); }
}

t.test('the request and its reason are one patch on the Application as read; a user\'s stop has no reason', async (t) => {
  t.same(stopRequestPatch(application('7'), 'idle for more than 600 s'), [
    { op: 'test', path: '/metadata/resourceVersion', value: '7' },
    { op: 'add', path: '/spec/stopRequested', value: true },
    { op: 'add', path: '/spec/stopReason', value: 'idle for more than 600 s' },
  ]);
  t.same(stopRequestPatch(application('7')).map((o) => o.path), ['/metadata/resourceVersion', '/spec/stopRequested']);
  const long = boundedReason('x'.repeat(5000));
  t.equal(long.length, STOP_REASON_MAX_LENGTH, 'a long reason is cut to the CRD\'s bound');
  t.equal(boundedReason('short'), 'short');
});

t.test('a stop writes once; one that finds a request there writes nothing', async (t) => {
  const api = new FakeApiserver();
  t.equal(await requestStop(api.stored, 'idle for more than 600 s', api), true);
  t.match(api.stored?.spec, { stopRequested: true, stopReason: 'idle for more than 600 s' });
  t.equal(api.reads, 0, 'a current cache needs no read');
  t.equal(await requestStop(await api.read(), 'an orphaned Spark Connect session', api), true);
  t.equal(api.patches, 1, 'the second stop wrote nothing');
  t.equal(api.stored?.spec.stopReason, 'idle for more than 600 s', 'the first reason is kept');
  t.equal(desiredStatus(api.stored!, undefined, 0).stateDetail, 'idle for more than 600 s', 'and is the record\'s stateDetail');
  const user = application();
  user.spec.stopRequested = true;
  t.equal(desiredStatus(user, undefined, 0).stateDetail, 'stopped by a user', 'no reason: a user\'s stop');
});

t.test('two stops at once: the second\'s test fails, it reads again and keeps the first\'s reason', async (t) => {
  const api = new FakeApiserver();
  const seenByBoth = await api.read();
  await requestStop(seenByBoth, 'idle for more than 600 s', api);
  t.equal(await requestStop(seenByBoth, 'an orphaned Spark Connect session', api), true);
  t.equal(api.patches, 2, 'its one write failed its test');
  t.equal(api.stored?.spec.stopReason, 'idle for more than 600 s');
});

t.test('a stale cache (another writer changed it): read again, then written', async (t) => {
  const api = new FakeApiserver();
  const stale = await api.read();
  api.touch();
  t.equal(await requestStop(stale, 'why', api), true);
  t.match(api.stored?.spec, { stopRequested: true, stopReason: 'why' });
});

t.test('gone: false; a write that keeps meeting changes gives up after a few tries; other errors at once', async (t) => {
  const gone = new FakeApiserver();
  gone.stored = undefined;
  t.equal(await requestStop(undefined, 'why', gone), false);
  let tries = 0;
  const busy = { read: async () => application(), patch: async () => { tries++; throw new ConflictError('changed again'); } };
  await t.rejects(requestStop(undefined, 'why', busy), { message: 'changed again' });
  t.ok(tries > 1 && tries <= 5, `bounded retries (${tries})`);
  tries = 0;
  const refused = { read: async () => application(), patch: async () => { tries++; throw new KubernetesError(403, 'forbidden'); } };
  await t.rejects(requestStop(undefined, 'why', refused), { message: 'forbidden' });
  t.equal(tries, 1, 'not retried');
});
