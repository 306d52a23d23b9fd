// Each application's own NetworkPolicy (issue 25; cluster/kubernetes/app-network-policy.ts), on
// a real kube-apiserver (test/cluster): with --app-network-policies the API creates it with the
// Application, owned by it, selecting the application's pods and admitting only them; without
// the flag it creates none. The controller's leader (network-policy-controller.ts) gives one to
// an application that was running before the flag was turned on (a chart upgrade), and brings
// a deleted one back. test/kubernetes/real-node-netpol.test.ts shows it enforced.
import { NetworkingV1Api } from '@kubernetes/client-node';
import t from 'tap';
import { GROUP, VERSION } from '../../cluster/kubernetes/client.js';
import { eventually, startApi, startKubeBed } from '../helpers/kubernetes.js';

async function submit(baseUrl: string, jobName: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/apps/`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobName }), signal: AbortSignal.timeout(120_000),
  });
  const body = await res.json() as { appName: string };
  if (res.status !== 201) throw new Error(`submit: ${res.status} ${JSON.stringify(body)}`);
  return body.appName;
}

t.test('the API gives each application a NetworkPolicy of its own, owned by its Application', async (t) => {
  const bed = await startKubeBed(t);
  const api = await startApi(bed.testbed.kubeconfig, bed.namespace, { rules: bed.rules, controller: false, appNetworkPolicies: true });
  t.teardown(() => api.close());
  const networking = bed.clients.kc.makeApiClient(NetworkingV1Api);

  const appName = await submit(api.baseUrl, 'np-on');
  const policy = await networking.readNamespacedNetworkPolicy({ name: `${appName}-pods`, namespace: bed.namespace });
  const own = { matchLabels: { 'submission-service/app-name': appName } };
  t.same(policy.spec?.podSelector, own, 'it selects the application\'s driver and executors');
  t.same(policy.spec?.policyTypes, ['Ingress']);
  t.same(policy.spec?.ingress?.map((rule) => ({ from: rule._from, ports: rule.ports })), [{ from: [{ podSelector: own }], ports: undefined }],
    'and admits only them, on every port');
  const application = (await bed.applications()).find((a) => a.metadata.name === appName)!.metadata as { uid?: string };
  t.same(policy.metadata?.ownerReferences?.map((o) => [o.apiVersion, o.kind, o.name, o.uid]), [[`${GROUP}/${VERSION}`, 'Application', appName, application.uid]],
    'owned by its Application (the garbage collector removes it with the run)');

  const without = await submit(bed.api.baseUrl, 'np-off');
  const listed = await networking.listNamespacedNetworkPolicy({ namespace: bed.namespace });
  t.same(listed.items.map((p) => p.metadata?.name), [`${appName}-pods`], `an API without --app-network-policies made none for ${without}`);
});

t.test('an application running before the policies were turned on gets its own from the controller, and a deleted one comes back', async (t) => {
  const bed = await startKubeBed(t);
  const networking = bed.clients.kc.makeApiClient(NetworkingV1Api);
  const read = (name: string) => networking.readNamespacedNetworkPolicy({ name, namespace: bed.namespace }).catch((error: unknown) => {
    if ((error as { code?: number }).code === 404) return undefined;
    throw error;
  });
  const running = await submit(bed.api.baseUrl, 'np-before');
  t.equal(await read(`${running}-pods`), undefined, 'submitted before the upgrade: no policy');
  // The upgrade: the api without the flag goes (releasing the Lease), one with it comes.
  await bed.api.close();
  const api = await startApi(bed.testbed.kubeconfig, bed.namespace, { rules: bed.rules, appNetworkPolicies: true });
  t.teardown(() => api.close());
  const application = (await bed.applications()).find((a) => a.metadata.name === running)!.metadata as { uid?: string };
  t.notOk(['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'].includes((await bed.applications()).find((a) => a.metadata.name === running)!.status?.state), 'the run has not ended');
  const made = await eventually(() => read(`${running}-pods`), (p) => p !== undefined, { timeoutMs: 120_000, what: `the controller makes ${running}'s policy` });
  t.same(made!.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Application', running, application.uid]], 'owned by its Application');
  t.same(made!.spec?.podSelector, { matchLabels: { 'submission-service/app-name': running } }, 'selecting its pods');

  await networking.deleteNamespacedNetworkPolicy({ name: `${running}-pods`, namespace: bed.namespace });
  const back = await eventually(() => read(`${running}-pods`), (p) => p !== undefined && p.metadata?.uid !== made!.metadata?.uid, { timeoutMs: 120_000, what: 'the deleted policy back' });
  t.same(back!.spec, made!.spec, 'deleted: the controller makes it again, the same');

  // A submission through the upgraded api: its policy is the API's, made before the driver.
  const after = await submit(api.baseUrl, 'np-after');
  t.ok(await read(`${after}-pods`), 'a new run has its policy as soon as it is accepted');
});
