// The endpoint's pure parts: the session id read from a request's first message, the metadata
// it reads and passes on, who may use a session, and a session's application.
import t from 'tap';
import { peekSessionId } from '../../connect/session-id.js';
import { bearerToken, forwardedHeaders, templateOf } from '../../connect/metadata.js';
import { sessionRefusal } from '../../connect/session-owners.js';
import { GrpcStatus } from '../../connect/grpc-status.js';
import { connectServerConf, sessionSubmission } from '../../connect/server-app.js';

/** A gRPC-framed message: field 2 (a nested user context) before or after field 1 (the session id). */
function framed(fields: Buffer[]): Buffer {
  const body = Buffer.concat(fields);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}
const stringField = (field: number, text: string) => Buffer.concat([Buffer.from([(field << 3) | 2, Buffer.byteLength(text)]), Buffer.from(text)]);
const id = '6b3c1f9e-2d1a-4c55-9a43-0d6f1f2b7c11';

t.test('the session id is read from field 1 of the first message, wherever it lies and however the bytes arrive', async (t) => {
  const message = framed([stringField(1, id), stringField(2, 'user')]);
  t.same(peekSessionId(message), { kind: 'found', sessionId: id });
  t.same(peekSessionId(framed([stringField(2, 'user'), stringField(1, id)])), { kind: 'found', sessionId: id }, 'after another field');
  t.same(peekSessionId(message.subarray(0, 12)), { kind: 'more' }, 'a partial message waits for more');
  t.same(peekSessionId(message.subarray(0, 3)), { kind: 'more' }, 'a partial prefix waits for more');
});

t.test('a message without a session id, compressed or malformed is refused', async (t) => {
  t.match(peekSessionId(framed([stringField(2, 'user')])), { kind: 'invalid', message: /no session id/ });
  const compressed = framed([stringField(1, id)]);
  compressed[0] = 1;
  t.match(peekSessionId(compressed), { kind: 'invalid', message: /compressed/ });
  t.match(peekSessionId(framed([stringField(1, 'not an id!')])), { kind: 'invalid', message: /not a session id/ });
  t.match(peekSessionId(framed([Buffer.from([0x0f, 1])])), { kind: 'invalid', message: /not a protocol buffer/ }, 'an unknown wire type');
});

t.test('the token comes from authorization or the JVM client\'s authentication header; the key never goes on', async (t) => {
  t.equal(bearerToken({ authorization: 'Bearer ssk_a' }), 'ssk_a');
  t.equal(bearerToken({ authentication: 'Bearer ssk_b' }), 'ssk_b', 'the JVM client before mid-2026');
  t.equal(bearerToken({ authorization: 'bearer  ssk_c ' }), 'ssk_c');
  t.equal(bearerToken({ 'x-api-key': 'ssk_d' }), 'ssk_d', 'pyspark 3.5 in plaintext: ;x-api-key=KEY');
  t.equal(bearerToken({}), undefined);
  t.equal(templateOf({ template: 'small' }), 'small');
  t.equal(templateOf({}), undefined);
  t.throws(() => templateOf({ template: '../x' }), /not a template name/);
  const forwarded = forwardedHeaders({ ':path': '/spark.connect.SparkConnectService/ExecutePlan', authorization: 'Bearer ssk_a', authentication: 'Bearer ssk_a', template: 'small', 'content-type': 'application/grpc', te: 'trailers', 'user-agent': 'grpc-python' });
  t.same(forwarded, { 'content-type': 'application/grpc', te: 'trailers', 'user-agent': 'grpc-python' });
});

t.test('a session is its owner\'s alone, admins included; with auth off, its client session\'s', async (t) => {
  const session = { owner: 'a', template: 'small' };
  t.equal(sessionRefusal({ id: 'a', key: 'k' }, id, session, undefined), undefined);
  t.equal(sessionRefusal({ id: 'b', key: 'k' }, id, session, undefined)?.code, GrpcStatus.PERMISSION_DENIED);
  t.equal(sessionRefusal({ id: 'a', key: 'k' }, id, session, 'large')?.code, GrpcStatus.INVALID_ARGUMENT, 'another template is another session');
  t.equal(sessionRefusal({ id: null, key: undefined }, id, { owner: null, template: undefined }, undefined), undefined, 'auth off');
});

t.test('a session\'s application runs the Connect server of its version on the chosen port', async (t) => {
  t.same(connectServerConf('3.5.7', { server: '/c/spark-connect_2.12-3.5.7.jar' }), { 'spark.jars': '/c/spark-connect_2.12-3.5.7.jar' });
  t.same(connectServerConf('3.5.7', undefined), { 'spark.jars.packages': 'org.apache.spark:spark-connect_2.12:3.5.7' });
  t.same(connectServerConf('4.2.0', undefined), {}, 'Spark 4 ships its Connect server');
  const body = sessionSubmission({ sessionId: id, template: 'small', version: '3.5.7', port: 41234, bindAddress: '127.0.0.1' }) as any;
  t.equal(body.configTemplateName, 'small');
  t.match(body.jobName, /^connect-[a-z0-9]{12}$/);
  t.equal(body.configOverrides.mainClass, 'org.apache.spark.sql.connect.service.SparkConnectServer');
  t.equal(body.configOverrides.engineConf['spark.connect.grpc.binding.port'], '41234');
  t.same(body.labels, { 'connect.submission-service.io/session': id, 'connect.submission-service.io/template': 'small' });
  t.notOk('spark.connect.grpc.binding.address' in body.configOverrides.engineConf, '3.5 has no binding address');
  const four = sessionSubmission({ sessionId: id, template: 'small', version: '4.2.0', port: 41234, bindAddress: '127.0.0.1' }) as any;
  t.equal(four.configOverrides.engineConf['spark.connect.grpc.binding.address'], '127.0.0.1', 'local Spark 4 servers listen on loopback only');
});
