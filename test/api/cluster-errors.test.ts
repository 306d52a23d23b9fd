// Errors never change meaning: client-node's own ApiException, as the apiserver's answers
// arrive, goes through translate (cluster/kubernetes/errors.ts) and the API's one error
// handler. Only 404 means absent and 409 a conflict; a 403 for our service account, a 422
// for an object we wrote, a 500 become 503 with Kubernetes' words, and each leaves a log line.
import { ApiException } from '@kubernetes/client-node';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import t from 'tap';
import { translate } from '../../cluster/kubernetes/errors.js';
import { installErrorHandler } from '../../submit-api/errors.js';
import { captureLog } from '../helpers/metrics.js';

const status = (code: number, message: string) =>
  new ApiException(code, `HTTP-Code: ${code}`, JSON.stringify({ kind: 'Status', code, message, reason: 'x' }), {});

t.test('apiserver errors on the API path', async (t) => {
  const log = captureLog();
  const app = Fastify({ loggerInstance: log.logger as FastifyBaseLogger });
  installErrorHandler(app);
  let next: unknown;
  app.get('/api/probe', async () => { throw translate(next, 'https://apiserver.test', 'read application x'); });
  t.teardown(() => app.close());

  const cases: [number, string, number][] = [
    [403, 'pods is forbidden: User "system:serviceaccount:x:api" cannot list resource "pods"', 503],
    [422, 'Pod "x" is invalid: spec.containers[0].name: Required value', 503],
    [400, 'the server rejected our request', 503],
    [500, 'etcdserver: request timed out', 503],
    [503, 'the server is currently unable to handle the request', 503],
    [404, 'applications "x" not found', 404],
    [409, 'applications "x" already exists', 409],
  ];
  for (const [code, message, expected] of cases) {
    next = status(code, message);
    const before = log.lines.length;
    const res = await app.inject({ url: '/api/probe' });
    t.equal(res.statusCode, expected, `apiserver ${code} → ${expected}`);
    const body = res.json();
    t.match(body.message, message, 'Kubernetes\' own words are passed on');
    const lines = log.lines.slice(before).filter((l) => l.level >= 40);
    if (expected === 503) t.ok(lines.some((l) => String(l.err?.message).includes(message)), `apiserver ${code} is logged with its message`);
    else t.equal(lines.length, 0, `apiserver ${code} is an answer, not a fault`);
  }
  next = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
  const down = await app.inject({ url: '/api/probe' });
  t.equal(down.statusCode, 503);
  t.match(down.json().message, /unreachable \(ECONNREFUSED\)/);
});
