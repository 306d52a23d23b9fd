// The controller's copy of a driver pod's config and submission annotations onto its
// Application (cluster/kubernetes/config-copy.ts), sent to the real apiserver: annotations
// someone else keeps on the Application stay, and a patch built from a read that is no longer
// current is refused (the controller counts it a conflict and tries again) rather than
// replacing the annotations written meanwhile.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { APPLICATIONS, GROUP, VERSION } from '../../cluster/kubernetes/client.js';
import { configCopyPatch } from '../../cluster/kubernetes/config-copy.js';
import type { ApplicationResource } from '../../cluster/kubernetes/records.js';
import { statusCode } from '../../lib/api-error.js';
import { ANNOTATION_ADMITTED, ANNOTATION_CONFIG, ANNOTATION_OVERRIDES } from '../../domain/index.js';
import { startKubeBed } from '../helpers/kubernetes.js';

const config = { type: 'Python', mainApplicationFile: 'local:///opt/app.py', driver: { cores: 1 } };
const driverPod: V1Pod = {
  metadata: {
    name: 'copied',
    annotations: {
      [ANNOTATION_CONFIG]: JSON.stringify(config),
      [ANNOTATION_OVERRIDES]: JSON.stringify({ driver: { cores: 1 } }),
      [ANNOTATION_ADMITTED]: 'the webhook',
    },
  },
};

t.test('copying the config onto an Application keeps what others wrote there', async (t) => {
  const bed = await startKubeBed(t);
  const where = { group: GROUP, version: VERSION, namespace: bed.namespace, plural: APPLICATIONS };
  const { custom } = bed.clients;
  const create = (name: string, annotations?: Record<string, string>) => custom.createNamespacedCustomObject({ ...where, body: {
    apiVersion: `${GROUP}/${VERSION}`, kind: 'Application',
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: { jobName: 'copy', configTemplateName: '', config: {} },
  } }) as Promise<ApplicationResource>;
  const read = (name: string) => custom.getNamespacedCustomObject({ ...where, name }) as Promise<ApplicationResource>;
  const send = (name: string, read: ApplicationResource) => custom.patchNamespacedCustomObject({ ...where, name, body: configCopyPatch(read, driverPod)! });

  t.equal(configCopyPatch(await create('no-config'), { metadata: { annotations: {} } }), undefined, 'a pod without config: nothing to copy');

  // Annotations there already: added key by key.
  await create('annotated', { 'example.com/owner': 'team-a' });
  await send('annotated', await read('annotated'));
  const annotated = await read('annotated');
  t.same(annotated.spec.config, config, 'the config copied');
  t.same(annotated.metadata.annotations, {
    'example.com/owner': 'team-a',
    [ANNOTATION_OVERRIDES]: JSON.stringify({ driver: { cores: 1 } }),
    [ANNOTATION_ADMITTED]: 'the webhook',
  }, "the submission's annotations beside the one kept");

  // None yet, and someone adds one after the controller read the Application.
  await create('bare');
  const stale = await read('bare');
  await custom.patchNamespacedCustomObject({ ...where, name: 'bare', body: [{ op: 'add', path: '/metadata/annotations', value: { 'example.com/owner': 'team-b' } }] });
  const refused = await send('bare', stale).then(() => undefined, (error: unknown) => statusCode(error));
  t.equal(refused, 422, 'a patch from a stale read is refused (a conflict for the controller)');
  t.same((await read('bare')).metadata.annotations, { 'example.com/owner': 'team-b' }, 'what was written meanwhile stays');
  await send('bare', await read('bare'));
  const bare = await read('bare');
  t.same(bare.spec.config, config, 'the next try copies the config');
  t.equal(bare.metadata.annotations?.['example.com/owner'], 'team-b', 'and keeps the annotation');
  t.equal(bare.metadata.annotations?.[ANNOTATION_ADMITTED], 'the webhook');

  // Never onto another Application of the same name.
  const old = await read('bare');
  await custom.deleteNamespacedCustomObject({ ...where, name: 'bare' });
  await create('bare');
  t.equal(await send('bare', old).then(() => undefined, (error: unknown) => statusCode(error)), 422, 'a recreated Application (another uid) is refused');
});
