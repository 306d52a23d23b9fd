// `submission-service release-finalizers`: the finalizer's uninstall path (the chart's
// pre-delete hook runs it; cluster/kubernetes/release-finalizers.ts says why).
import { parseArgs } from 'node:util';
import { kubeClients } from '../cluster/kubernetes/client.js';
import { releaseLogFinalizers } from '../cluster/kubernetes/release-finalizers.js';

export async function releaseFinalizersCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string', default: process.env.APPLICATIONS_NAMESPACE ?? 'spark-apps' },
    },
  });
  const clients = kubeClients(values.kubeconfig);
  const say = (message: string) => void process.stdout.write(`${message}\n`);
  const released = await releaseLogFinalizers(clients.core, values.namespace, say);
  say(`release-finalizers: took the log-archive finalizer off ${released} pods in ${values.namespace}`);
  return 0;
}
