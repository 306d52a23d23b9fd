// The CRDs are our JSON Schemas made structural, and the committed chart files are current.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { generatedFiles } from '../../manifests/chart-files.js';
import { allSchemas } from '../../schemas/index.js';
import { applicationCrd, configTemplateCrd, STOP_REASON_MAX_LENGTH } from '../../schemas/crd.js';
import { type Schema, structuralProblems, toStructural } from '../../schemas/structural.js';

const chart = fileURLToPath(new URL('../../manifests/chart/', import.meta.url));
const versionOf = (crd: Schema) => (crd.spec as { versions: Schema[] }).versions[0];
const rootOf = (crd: Schema) => (versionOf(crd).schema as { openAPIV3Schema: Schema }).openAPIV3Schema;
const props = (schema: Schema) => schema.properties as Record<string, Schema>;

t.test('committed generated files are current (else: npx tsx manifests/generate.ts)', async (t) => {
  for (const file of generatedFiles()) {
    let committed = '';
    try { committed = readFileSync(chart + file.path, 'utf8'); } catch { /* missing: reported below */ }
    t.equal(committed, file.text, `manifests/chart/${file.path} is stale or missing: run npx tsx manifests/generate.ts`);
  }
});

t.test('the CRD files are valid YAML (JSON) holding the CRDs', async (t) => {
  for (const file of generatedFiles().filter((f) => f.path.startsWith('crds/'))) {
    const body = file.text.split('\n').filter((line) => !line.startsWith('#')).join('\n');
    const crd = JSON.parse(body) as Schema;
    t.equal(crd.kind, 'CustomResourceDefinition');
    t.equal(`crds/${String((crd.metadata as Schema).name)}.yaml`, file.path);
  }
});

t.test('every schema converts to a structural schema', async (t) => {
  for (const schema of allSchemas) {
    t.same(structuralProblems(toStructural(schema.$id)), [], schema.$id);
  }
});

t.test('conversion rules', async (t) => {
  const app = toStructural('application.json');
  const p = props(app);
  t.notOk('$id' in app, '$id dropped');
  t.notOk('title' in app, 'title dropped');
  t.notOk('additionalProperties' in app, 'additionalProperties: false dropped');
  t.same(p.startedAt, { type: 'string', nullable: true, format: 'date-time' }, '[string, null] becomes nullable');
  t.equal(props(p.config).driver.type, 'object', '$ref inlined');
  t.notOk(JSON.stringify(app).includes('$ref'), 'no $ref left anywhere');
  t.same(props(props(p.config).engineConf), undefined);
  t.same(props(p.config).engineConf.additionalProperties, { type: 'string', maxLength: 4096 }, 'string maps are kept, with their limits');
  t.equal(props(p.config).engineConf.maxProperties, 256, 'map sizes reach the CRD');
  t.same(p.state.enum, ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN']);

  const pool = props(toStructural('node-pool.json'));
  t.same([pool.maximumSchedulableCoreRequest.minimum, pool.maximumSchedulableCoreRequest.exclusiveMinimum], [0, true],
    'numeric exclusiveMinimum becomes minimum + exclusiveMinimum: true');

  t.equal(toStructural({ type: 'object' })['x-kubernetes-preserve-unknown-fields'], true, 'a free-form object keeps its fields');
  t.equal(toStructural({ type: 'object', additionalProperties: true })['x-kubernetes-preserve-unknown-fields'], true);
  t.throws(() => toStructural({ type: ['string', 'integer'] }), /no structural equivalent/);
  t.throws(() => toStructural({ type: 'object', patternProperties: {} }), /patternProperties is not supported/);
  t.throws(() => toStructural({ $ref: 'nope.json' }), /no schema with \$id nope.json/);
  const loop = new Map<string, Schema>([['a.json', { $id: 'a.json', type: 'object', properties: { a: { $ref: 'a.json' } } }]]);
  t.throws(() => toStructural('a.json', loop), /recursive/);
  t.same(toStructural({ type: 'string', const: 'x' }), { type: 'string', enum: ['x'] });
});

t.test('ConfigTemplate CRD', async (t) => {
  const crd = configTemplateCrd();
  const spec = crd.spec as Schema;
  t.equal((crd.metadata as Schema).name, 'configtemplates.submission-service.io');
  t.equal(spec.group, 'submission-service.io');
  t.equal(spec.scope, 'Namespaced');
  t.match(spec.names, { kind: 'ConfigTemplate', plural: 'configtemplates', singular: 'configtemplate', shortNames: ['ct'] });
  t.equal(versionOf(crd).name, 'v1');
  t.equal(versionOf(crd).storage, true);
  t.notOk(versionOf(crd).subresources, 'no status: a template is all spec');
  t.same(props(props(rootOf(crd)).spec).config, toStructural('application-config.json'), 'spec.config is ApplicationConfig');
  const columns = (versionOf(crd).additionalPrinterColumns as Schema[]).map((c) => c.jsonPath);
  t.ok(columns.includes('.spec.config.engineVersion') && columns.includes('.metadata.creationTimestamp'));
  t.same(structuralProblems(rootOf(crd)), []);
});

t.test('Application CRD', async (t) => {
  const crd = applicationCrd();
  const spec = crd.spec as Schema;
  t.equal((crd.metadata as Schema).name, 'applications.submission-service.io');
  t.match(spec.names, { kind: 'Application', plural: 'applications', shortNames: ['ssapp'] });
  t.same(versionOf(crd).subresources, { status: {} });
  const root = props(rootOf(crd));
  t.same(Object.keys(props(root.spec)), ['jobName', 'configTemplateName', 'config', 'submittedBy', 'stopRequested', 'stopReason']);
  t.equal(props(root.spec).stopRequested.type, 'boolean', 'a stop is a request in the spec (the controller writes the status)');
  t.match(props(root.spec).stopReason, { type: 'string', maxLength: STOP_REASON_MAX_LENGTH }, 'its reason, bounded, beside it');
  t.same(Object.keys(props(root.status)), ['state', 'stateDetail', 'attempt', 'attempts', 'startedAt', 'endedAt', 'runningExecutors', 'transitions']);
  const columns = (versionOf(crd).additionalPrinterColumns as Schema[]).filter((c) => !c.priority).map((c) => c.jsonPath);
  t.same(columns, ['.spec.jobName', '.status.state', '.metadata.creationTimestamp']);
  t.same(structuralProblems(rootOf(crd)), []);
});
