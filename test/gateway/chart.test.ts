// The chart's notebook-service runs `submission-service gateway` with flags that command takes
// (strict parsing fails on any other), with the launchers' address and the reconnect secret.
import { parseArgs } from 'node:util';
import t from 'tap';
import { gatewayFlags } from '../../cli/gateway.js';
import { parseWarmPool } from '../../cli/gateway-wiring.js';
import { helmBinary, named, renderChart } from '../manifests/helm.js';

interface Deployment { spec: { template: { spec: { containers: Array<{ command: string[]; args: string[]; env?: Array<{ name: string }> }> } } } }

const skip = (() => { try { helmBinary(); return false; } catch { return 'needs helm'; } })();

t.test('the gateway deployment passes flags the gateway command accepts', { skip }, async (t) => {
  for (const sets of [{}, { 'auth.enabled': 'false' }, { 'notebookService.kernelImage': 'registry.example/kernel:1', 'notebookService.cullIdleSeconds': '3600', 'notebookService.warmPool.notebook': '2', 'notebookService.warmPool.etl-py': '1' }] as Array<Record<string, string>>) {
    const gateway = named<Deployment>(renderChart(sets), 'Deployment', 'submission-service-gateway')!;
    const container = gateway.spec.template.spec.containers[0];
    t.same(container.command, ['submission-service', 'gateway']);
    const { values } = parseArgs({ args: container.args, options: gatewayFlags, strict: true });
    t.match(values['api-url'], /^http:\/\/submission-service\./, `${JSON.stringify(sets)}: --api-url`);
    t.match(values['launcher-url'], /^ws:\/\/notebook-service\.[a-z-]+\.svc\/notebooks$/, 'launchers dial the notebook service');
    t.equal(values['launcher-file'], 'local:///opt/submission-service/launcher.py', 'where the kernel image keeps the launcher');
    t.ok(container.env?.some((e) => e.name === 'SUBMISSION_SERVICE_GATEWAY_SECRET'), 'the reconnect secret comes from a Secret');
    if ('notebookService.kernelImage' in sets) {
      t.equal(values['kernel-image'], 'registry.example/kernel:1');
      t.equal(values['cull-idle-seconds'], '3600');
      t.same(parseWarmPool(values['warm-pool']), { 'etl-py': 1, notebook: 2 }, 'the warm pool map becomes --warm-pool flags the command parses');
    } else {
      t.same(parseWarmPool(values['warm-pool']), {}, 'no warm pool by default');
    }
  }
});

t.test('--warm-pool takes TEMPLATE=N, repeatable; anything else is refused with the reason', async (t) => {
  t.same(parseWarmPool(['notebook=2', 'etl=0', 'notebook=3']), { notebook: 3, etl: 0 }, 'a later value for a template wins; 0 is no pool');
  t.same(parseWarmPool(undefined), {});
  for (const bad of ['notebook', 'notebook=', '=2', 'Notebook=1', 'notebook=-1', 'notebook=1.5', 'notebook=1000']) {
    t.throws(() => parseWarmPool([bad]), /--warm-pool takes TEMPLATE=N/, bad);
  }
});
