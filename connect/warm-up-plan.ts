// What the warm pool asks of a new Connect server before it counts as ready (connect/warm-up.ts
// sends it): the calls a client's first queries make — a config read, the Spark version, a
// schema, `spark.sql(...)`, a `spark.range(...)` aggregation and a small DataFrame collected as
// Arrow, reattachable like the clients' — so that the class loading, code generation and first
// jobs of a fresh JVM are done before a session's first query. All of it in a session of its own
// (a random id nobody is given, the service's own user id) that creates nothing: no view, no
// table, no cache, no config; it is released at the end (Spark 4; 3.5 has no such call and drops
// the idle session itself). Pure: the requests as bytes, and what an answer says.
import { decodeFields, encodeMessage, type ProtoMessage } from './protobuf.js';

/** The user id of the warm-up's session (clients send the OS user's): not a user of the service. */
export const WARM_UP_USER = 'submission-service-warm-up';
/** The warm-up's operations carry this tag: its jobs say so in the Spark UI (job tags, Spark ≥ 3.5). */
export const WARM_UP_TAG = 'submission-service-warm-up';
const CLIENT_TYPE = 'submission-service/warm-up';

export type WarmUpMethod = 'Config' | 'AnalyzePlan' | 'ExecutePlan' | 'ReattachExecute' | 'ReleaseExecute' | 'ReleaseSession';

/** One call: a unary one, or an ExecutePlan whose answers are read to their end (`rows`: it must bring Arrow rows). */
export type WarmUpCall =
  | { method: 'Config' | 'AnalyzePlan'; request: Buffer }
  | { method: 'ExecutePlan'; request: Buffer; operationId: string; rows: boolean };

const context = (sessionId: string): ProtoMessage => [[1, sessionId], [2, [[1, WARM_UP_USER]]]];

const expression = (text: string): ProtoMessage => [[4, [[1, text]]]];
const sqlRelation = (query: string): ProtoMessage => [[10, [[1, query]]]];
/** spark.range(n).selectExpr("sum(id)"): a Project over a Range. */
const sumOfRange = (n: number): ProtoMessage => [[3, [[1, [[15, [[1, 0], [2, n], [3, 1]]]]], [3, expression('sum(id)')]]]];
/** spark.sql(query) as each client sends it: Spark 4 names the query as a relation, 3.5 as a string. */
const sqlCommand = (version: string, query: string): ProtoMessage =>
  [[5, Number(version.split('.')[0]) >= 4 ? [[6, sqlRelation(query)]] : [[1, query]]]];

/** An ExecutePlanRequest of `plan`, reattachable (as the clients send them), tagged as the warm-up's. */
function execute(sessionId: string, operationId: string, plan: ProtoMessage, rows: boolean): WarmUpCall {
  const request = encodeMessage([
    ...context(sessionId), [6, operationId], [3, plan], [4, CLIENT_TYPE],
    [5, [[1, [[1, true]]]]], // request_options: reattach_options { reattachable: true }
    [7, WARM_UP_TAG],
  ]);
  return { method: 'ExecutePlan', request, operationId, rows };
}

/** The warm-up's calls, in order, for a server of Spark `version`; `newId` makes the operations' ids (UUIDs). */
export function warmUpCalls(sessionId: string, version: string, newId: () => string): WarmUpCall[] {
  const analyze = (request: ProtoMessage): WarmUpCall => ({ method: 'AnalyzePlan', request: encodeMessage([...context(sessionId), [3, CLIENT_TYPE], ...request]) });
  return [
    // config { get_option { keys: "spark.sql.session.timeZone" } }
    { method: 'Config', request: encodeMessage([...context(sessionId), [3, [[4, [[1, 'spark.sql.session.timeZone']]]]], [4, CLIENT_TYPE]]) },
    analyze([[10, []]]), // spark_version
    execute(sessionId, newId(), [[2, sqlCommand(version, 'SELECT 1 AS one')]], false),
    execute(sessionId, newId(), [[1, sqlRelation('SELECT 1 AS one')]], true),
    analyze([[4, [[1, [[1, sumOfRange(1_000_000)]]]]]]), // schema of a plan
    execute(sessionId, newId(), [[1, sumOfRange(1_000_000)]], true),
    execute(sessionId, newId(), [[1, sqlRelation("SELECT id, repeat('x', 92) AS s FROM range(10000)")]], true),
  ];
}

/** ReattachExecute: the rest of a reattachable operation's answers, after `lastResponseId`. */
export const reattachRequest = (sessionId: string, operationId: string, lastResponseId: string | undefined): Buffer =>
  encodeMessage([...context(sessionId), [3, operationId], [4, CLIENT_TYPE], ...(lastResponseId ? [[5, lastResponseId] as const] : [])]);

/** ReleaseExecute { release_all }: the server may forget a finished operation (as clients do once they have its answers). */
export const releaseExecuteRequest = (sessionId: string, operationId: string): Buffer =>
  encodeMessage([...context(sessionId), [3, operationId], [4, CLIENT_TYPE], [5, []]]);

/** ReleaseSession (Spark ≥ 4.0; 3.5 answers UNIMPLEMENTED): the server drops the session now. */
export const releaseSessionRequest = (sessionId: string): Buffer =>
  encodeMessage([...context(sessionId), [3, CLIENT_TYPE]]);

/** What one ExecutePlanResponse says: its id (for a reattach), the Arrow rows it carries, whether it is the last. */
export interface ExecuteAnswer { responseId: string | undefined; rows: number; complete: boolean }

export function readExecuteAnswer(message: Uint8Array): ExecuteAnswer {
  const answer: ExecuteAnswer = { responseId: undefined, rows: 0, complete: false };
  for (const { field, value } of decodeFields(message)) {
    if (field === 13 && value instanceof Uint8Array) answer.responseId = Buffer.from(value).toString('utf8');
    if (field === 14) answer.complete = true;
    if (field === 2 && value instanceof Uint8Array) {
      const rowCount = decodeFields(value).find((f) => f.field === 1);
      answer.rows += typeof rowCount?.value === 'number' ? rowCount.value : 0;
    }
  }
  return answer;
}
