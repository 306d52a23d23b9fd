// Refusals in the audit trail carry the key that was refused (submit-api/audit.ts): a write by a
// known key refused for its role, for another key's application, or a session write without
// the CSRF header, is audited with that key's id; only a request without a valid key has
// `keyId: null`. Before, every refusal made before the route ran was audited as anonymous.
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { captureLog } from '../helpers/metrics.js';
import { tempDir } from '../helpers/temp.js';

t.test('refused writes are audited with the id of the key that made them', async (t) => {
  const store = new FileKeyStore(join(tempDir(t), 'keys'));
  const a = store.create('user', 'a');
  const b = store.create('user', 'b');
  const log = captureLog();
  const api = await startTestApi(t, { auth: { enabled: true, store }, logger: log.logger });
  const submitted = await api.call('POST', '/api/apps/', { jobName: 'audited', configOverrides: fakeJob({ sleep: 30 }) }, { 'x-api-key': a.key });
  t.equal(submitted.status, 201);
  const appName = submitted.json.appName as string;

  const audit = (method: string, route: string, status: number) =>
    log.lines.find((l) => l.audit === true && l.method === method && l.route === route && l.statusCode === status);

  t.equal((await api.call('POST', `/api/apps/${appName}/stop`, undefined, { 'x-api-key': b.key })).status, 403, 'B may not stop A\'s application');
  t.match(audit('POST', '/api/apps/:appName/stop', 403), { keyId: b.id }, 'audited with B\'s id');

  t.equal((await api.call('POST', '/api/config-templates/', { name: 'nope', config: {} }, { 'x-api-key': b.key })).status, 403, 'a user key may not write templates');
  t.match(audit('POST', '/api/config-templates/', 403), { keyId: b.id }, 'audited with B\'s id');

  const session = String((await api.call('POST', '/dashboard/login', { key: b.key })).headers['set-cookie']).split(';', 1)[0]!;
  t.equal((await api.call('DELETE', `/api/apps/${appName}`, undefined, { cookie: session })).status, 403, 'a session write without the CSRF header');
  t.match(audit('DELETE', '/api/apps/:appName', 403), { keyId: b.id }, 'audited with the session\'s key id');

  t.equal((await api.call('POST', `/api/apps/${appName}/stop`, undefined, { 'x-api-key': 'ssk_unknown' })).status, 401);
  t.match(audit('POST', '/api/apps/:appName/stop', 401), { keyId: null }, 'an unknown key has no id');
  t.equal((await api.call('POST', `/api/apps/${appName}/stop`, undefined, { 'x-api-key': a.key })).status, 200);
});
