// The API's side of the Connect warm pool (submit-api/routes/claim.ts): a server the service
// started with no key becomes one key's application by the claim, once, within that key's cap of
// unfinished applications; only with the service's proof, never an application that has a
// submitter, never a second key. User keys A and B; drivers are the fake-spark-submit TEST DOUBLE.
import t from 'tap';
import { warmVia } from '../../cli/connect-wiring.js';
import { CONNECT_WARM_LABEL_KEY, KERNEL_CLAIMER_LABEL } from '../../domain/index.js';
import { GATEWAY_PROOF_HEADER } from '../../lib/gateway-proof.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { tempDir } from '../helpers/temp.js';

const PROOF = 'the-service-proof';

async function setUp(t: Parameters<typeof tempDir>[0]) {
  const store = new FileKeyStore(tempDir(t));
  const [a, b] = [store.create('user', 'A'), store.create('user', 'B')];
  const api = await startTestApi(t, { cores: 4, auth: { enabled: true, store }, gatewayProof: PROOF, fairShare: { applicationsPerKey: 1 } });
  // As the endpoint's pool submits them: to the cluster itself, no key.
  const warm = async () => (await warmVia(api.cluster).submit({ jobName: 'connect-warm', configOverrides: fakeJob({ sleep: 60 }), labels: { [CONNECT_WARM_LABEL_KEY]: 'none' } })).appName;
  const claim = (appName: string, key: string, proof: string | null = PROOF) =>
    api.call('POST', `/api/apps/${appName}/claim`, undefined, { 'x-api-key': key, ...(proof ? { [GATEWAY_PROOF_HEADER]: proof } : {}) });
  const owner = async (appName: string) => {
    const app = (await api.call('GET', `/api/apps/${appName}`, undefined, { 'x-api-key': a.key })).json;
    return { submittedBy: app.submittedBy ?? null, claimer: app.labels?.[KERNEL_CLAIMER_LABEL] ?? null };
  };
  return { api, a, b, warm, claim, owner };
}

t.test('a warm server becomes the claiming key\'s application, once; another key cannot take or stop it', async (t) => {
  const { api, a, b, warm, claim, owner } = await setUp(t);
  const server = await warm();
  t.same(await owner(server), { submittedBy: null, claimer: null }, 'started by the service: nobody\'s');
  t.equal((await claim(server, a.key, null)).status, 403, 'without the service\'s proof: refused');
  t.equal((await claim(server, a.key, 'a-guess')).status, 403, 'with a wrong proof: refused');
  t.same(await owner(server), { submittedBy: null, claimer: null }, 'and nothing recorded');
  const claimed = await claim(server, a.key);
  t.equal(claimed.status, 200, claimed.body);
  t.same(await owner(server), { submittedBy: a.id, claimer: a.id }, 'A is its submitter now');
  const again = await claim(server, b.key);
  t.equal(again.status, 400, 'B cannot claim it after A: it has a submitter now');
  t.same(await owner(server), { submittedBy: a.id, claimer: a.id }, 'still A\'s');
  t.equal((await api.call('POST', `/api/apps/${server}/stop`, undefined, { 'x-api-key': b.key })).status, 403, 'B may not stop A\'s session');
  t.equal((await api.call('POST', `/api/apps/${server}/stop`, undefined, { 'x-api-key': a.key })).status, 200, 'A may');
});

t.test('a claim counts toward the key\'s unfinished applications: at its cap it is refused and the server stays nobody\'s', async (t) => {
  const { a, b, warm, claim, owner } = await setUp(t);
  const [first, second] = [await warm(), await warm()];
  t.equal((await claim(first, a.key)).status, 200, 'A\'s first session from the pool');
  const refused = await claim(second, a.key);
  t.equal(refused.status, 429, 'A holds its cap of one unfinished application');
  t.match(refused.json.message, /1 unfinished applications/);
  t.same(await owner(second), { submittedBy: null, claimer: null }, 'the refused claim recorded nothing');
  t.equal((await claim(second, b.key)).status, 200, 'so B can have it');
});

t.test('an application with a submitter is never claimed, whatever its labels say', async (t) => {
  const { api, a, b, claim, owner } = await setUp(t);
  const own = await api.call('POST', '/api/apps/', { jobName: 'mine', configOverrides: fakeJob({ sleep: 60 }), labels: { [CONNECT_WARM_LABEL_KEY]: 'none' } }, { 'x-api-key': b.key });
  t.equal(own.status, 201, 'B may label its own application so');
  const stolen = await claim(own.json.appName, a.key);
  t.equal(stolen.status, 400, 'but A cannot claim it');
  t.same(await owner(own.json.appName), { submittedBy: b.id, claimer: null }, 'it stays B\'s');
});
