// The deleted drivers' last states (cluster/kubernetes/deleted-drivers.ts): kept while their
// Application lives, never for one already gone (the usual order when an Application is deleted).
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { DeletedDrivers } from '../../cluster/kubernetes/deleted-drivers.js';
import { LABEL_APP } from '../../domain/index.js';

const pod = (name: string, app: string): V1Pod => ({ metadata: { name, labels: { [LABEL_APP]: app } }, status: { phase: 'Succeeded' } });

t.test('after the list, a driver deleted after its Application is not kept; one whose Application lives is', async (t) => {
  const apps = new Set(['live']);
  const drivers = new DeletedDrivers((name) => apps.has(name));
  drivers.listed();
  drivers.keep(pod('gone-driver', 'gone'));
  drivers.keep(pod('live-driver', 'live'));
  drivers.keep({ metadata: { name: 'no-label' } });
  t.equal(drivers.size, 1);
  t.equal(drivers.get('live-driver')?.status?.phase, 'Succeeded');
  t.equal(drivers.get('gone-driver'), undefined);
});

t.test('before the list every deleted driver is kept; the list drops those of Applications that do not exist', async (t) => {
  const apps = new Set<string>();
  const drivers = new DeletedDrivers((name) => apps.has(name));
  drivers.keep(pod('a-driver', 'a'));
  drivers.keep(pod('b-driver', 'b'));
  t.equal(drivers.size, 2, 'the Applications are not listed yet');
  apps.add('a');
  drivers.listed();
  t.same([drivers.get('a-driver')?.metadata?.name, drivers.get('b-driver')], ['a-driver', undefined]);
});

t.test('an Application deleted, or a pod of that name again, forgets the last state', async (t) => {
  const apps = new Set(['a', 'b']);
  const drivers = new DeletedDrivers((name) => apps.has(name));
  drivers.listed();
  drivers.keep(pod('a-driver', 'a'));
  drivers.keep(pod('a-driver-2', 'a'));
  drivers.keep(pod('b-driver', 'b'));
  drivers.forgetApplication('a');
  t.equal(drivers.size, 1);
  drivers.forget('b-driver');
  t.equal(drivers.size, 0);
});
