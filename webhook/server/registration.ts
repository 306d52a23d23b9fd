// The MutatingWebhookConfiguration that sends our pods here, as plain JSON for the Helm
// chart and the test bed. Two entries: pods a team or the API labels as ours, and the
// executors Spark creates for them. The API's own driver pods, written already admitted
// (cluster/kubernetes/expected-admission.ts), are not sent here (apiUser).
import { ANNOTATION_ADMITTED, LABEL_JOB, SPARK_APP_SELECTOR, SPARK_ROLE } from '../../domain/labels.js';
import { MUTATE_PATH } from './server.js';

export interface RegistrationOptions {
  name: string;
  /** base64 PEM of the CA(s) that sign the serving certificate (certs/rotation.ts caBundle). */
  caBundle: string;
  /** Either an in-cluster Service... */
  service?: { namespace: string; name: string; port?: number };
  /** ...or a URL (a webhook outside the cluster, e.g. the test bed). */
  url?: string;
  /** Namespaces whose pods are admitted; absent: every namespace but the system ones. */
  namespaces?: string[];
  /** Executors already carry Spark's sizing from the admitted driver; see README. */
  executorFailurePolicy?: 'Fail' | 'Ignore';
  /**
   * The username the API writes its driver pods with (in the chart its service account,
   * system:serviceaccount:<namespace>:submission-service-api). Its pods that carry the admission
   * mark skip this webhook; pods of any other user, mark or not, and every executor still come.
   */
  apiUser?: string;
}

/**
 * CEL for the drivers' entry: everything but a pod the API's identity writes with the mark.
 * Only the API holds that identity, and it writes nothing it has not admitted; anyone else
 * may set the annotation but not the username (the apiserver authenticates it).
 */
export function apiAdmittedCondition(apiUser: string): { name: string; expression: string } {
  return {
    name: 'not-admitted-by-the-api',
    expression: `!(request.userInfo.username == ${JSON.stringify(apiUser)} && has(object.metadata.annotations) && ${JSON.stringify(ANNOTATION_ADMITTED)} in object.metadata.annotations)`,
  };
}

const SYSTEM_NAMESPACES = ['kube-system', 'kube-public', 'kube-node-lease'];

function clientConfig(options: RegistrationOptions): Record<string, unknown> {
  if ((options.url === undefined) === (options.service === undefined)) throw new Error('give exactly one of url and service');
  if (options.url !== undefined) return { url: options.url, caBundle: options.caBundle };
  const { namespace, name, port } = options.service!;
  return { service: { namespace, name, path: MUTATE_PATH, port: port ?? 443 }, caBundle: options.caBundle };
}

function namespaceSelector(namespaces: string[] | undefined): Record<string, unknown> {
  const key = 'kubernetes.io/metadata.name'; // set by the apiserver on every namespace
  return namespaces && namespaces.length > 0
    ? { matchExpressions: [{ key, operator: 'In', values: namespaces }] }
    : { matchExpressions: [{ key, operator: 'NotIn', values: SYSTEM_NAMESPACES }] };
}

function entry(name: string, options: RegistrationOptions, objectSelector: object, failurePolicy: 'Fail' | 'Ignore', apiUser?: string) {
  return {
    name,
    clientConfig: clientConfig(options),
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }],
    namespaceSelector: namespaceSelector(options.namespaces),
    objectSelector,
    ...(apiUser ? { matchConditions: [apiAdmittedCondition(apiUser)] } : {}),
    failurePolicy,
    matchPolicy: 'Equivalent',
    sideEffects: 'None',
    timeoutSeconds: 5,
    admissionReviewVersions: ['v1'],
    // Admission renders the whole pod from config; a second pass would change nothing.
    reinvocationPolicy: 'Never',
  };
}

export function mutatingWebhookConfiguration(options: RegistrationOptions): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: options.name, labels: { 'app.kubernetes.io/name': 'submission-service', 'app.kubernetes.io/component': 'webhook' } },
    webhooks: [
      // A labeled pod that misses admission has no image and fails anyway: fail loudly here instead.
      entry('pods.submission-service.webhook', options,
        {
          matchExpressions: [
            { key: LABEL_JOB, operator: 'Exists' },
            // Spark copies our labels onto executors; they go to the entry below instead.
            { key: SPARK_ROLE, operator: 'NotIn', values: ['executor'] },
          ],
        }, 'Fail', options.apiUser),
      entry('executors.submission-service.webhook', options, {
        matchExpressions: [
          { key: SPARK_ROLE, operator: 'In', values: ['executor'] },
          { key: SPARK_APP_SELECTOR, operator: 'Exists' },
        ],
      }, options.executorFailurePolicy ?? 'Fail'),
    ],
  };
}
