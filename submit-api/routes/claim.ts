// POST /api/apps/{app}/claim: the notebook gateway's and the Spark Connect endpoint's, not the
// public API's (hidden from the OpenAPI document). Needs the service's proof and the claimer's own
// key. A warm pool's kernel handed to a key is recorded as that key's (KERNEL_CLAIMER_LABEL), so
// its owner checks and its Spark UI let the claimer in. A warm Connect server (no submitter: the
// service started it) becomes the claimer's application, once, and counts toward that key's
// unfinished applications (429 at its cap, as a submission of its own would).
import type { FastifyInstance } from 'fastify';
import type { Cluster } from '../../cluster/cluster.js';
import type { SparkHistory } from '../../cluster/history/spark-history.js';
import { CONNECT_WARM_LABEL_KEY, KERNEL_POOL_LABEL_KEY } from '../../domain/index.js';
import { GATEWAY_PROOF_HEADER, isGatewayProof } from '../../lib/gateway-proof.js';
import { HttpError, notFound } from '../errors.js';
import type { FairShare } from '../fair-share.js';
import { toApplication } from '../present.js';
import { redactEnvFor } from '../redact-env.js';

const appNameParams = {
  type: 'object', required: ['appName'], additionalProperties: false,
  properties: { appName: { type: 'string', maxLength: 63 } },
} as const;

export function claimRoute(app: FastifyInstance, { cluster, history, gatewayProof, fairShare }: { cluster: Cluster; history?: SparkHistory; gatewayProof?: string; fairShare: FairShare }): void {
  app.post<{ Params: { appName: string } }>('/api/apps/:appName/claim', {
    schema: { hide: true, params: appNameParams },
  }, async (request) => {
    if (!isGatewayProof(gatewayProof, request.headers[GATEWAY_PROOF_HEADER])) {
      throw new HttpError(403, 'only the notebook gateway and the Spark Connect endpoint claim a warm pool\'s kernel or server (they start or claim one for a key)');
    }
    if (!request.apiKey) throw new HttpError(400, 'a claim is recorded for the claiming key; with authentication off kernels have no owners');
    const record = await cluster.get(request.params.appName);
    if (!record) throw notFound(`application ${request.params.appName}`);
    const warmConnect = record.labels?.[CONNECT_WARM_LABEL_KEY] !== undefined && !record.submittedBy;
    if (record.labels?.[KERNEL_POOL_LABEL_KEY] === undefined && !warmConnect) throw new HttpError(400, `application ${record.appName} is not a warm pool's kernel or Connect server`);
    const counted = warmConnect ? fairShare.reserveApplication(request) : undefined;
    const claimed = await cluster.claim(record.appName, request.apiKey.id).catch((error: unknown) => { counted?.(); throw error; });
    counted?.(claimed);
    if (!claimed) throw notFound(`application ${request.params.appName}`);
    return redactEnvFor(toApplication(claimed, history), request.apiKey);
  });
}
