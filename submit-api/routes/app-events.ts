// GET /api/apps/events: the change feed of applications as server-sent events, resumable
// with Last-Event-ID. The dashboard, the notebook gateway and `apps submit --follow` use it.
import type { FastifyInstance } from 'fastify';
import type { Cluster } from '../../cluster/cluster.js';
import type { FeedMessage } from '../../cluster/events.js';
import type { SparkHistory } from '../../cluster/history/spark-history.js';
import { matchesQuery } from '../../cluster/paging.js';
import { ref, schemaIds } from '../../schemas/index.js';
import { toApplication } from '../present.js';
import { redactEnvFor } from '../redact-env.js';
import { labelSelectorQuery, parseLabelSelector, searchQuery } from './list-filters.js';

/** A comment line this often keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;

const description = `Server-sent events (\`text/event-stream\`), one per change of an application:
- \`event: ready\` first, on every connection: from here on nothing is missed (read the list after it);
- \`event: changed\`, \`data\`: the Application as \`GET /api/apps/{appName}\` answers it (created, state changed, stopped);
- \`event: deleted\`, \`data\`: the Application as it was;
- \`event: reset\`: the position asked for is no longer held (or belongs to another replica or a restarted service): re-read the list, then carry on.

Every event has an \`id\`. Reconnect with \`Last-Event-ID\` (browsers' EventSource does it by itself) or \`?lastEventId=\` to receive what was missed.
A comment line (\`: keep-alive\`) is sent every ${HEARTBEAT_MS / 1000} s. \`jobName\`, \`labelSelector\` and \`q\` filter as in the list (an application's name, job and labels never change, so a filtered stream never loses one midway).`;

export async function appEventRoutes(app: FastifyInstance, { cluster, history }: { cluster: Cluster; history?: SparkHistory }) {
  app.get<{ Querystring: { jobName?: string; labelSelector?: string; q?: string; lastEventId?: string } }>('/api/apps/events', {
    schema: {
      summary: 'Follow changes of applications (server-sent events, resumable)',
      description,
      tags: ['apps'],
      querystring: {
        type: 'object', additionalProperties: false,
        properties: {
          jobName: { type: 'string', maxLength: 63 },
          labelSelector: labelSelectorQuery,
          q: searchQuery,
          lastEventId: { type: 'string', maxLength: 64, description: 'Resume after this event (the Last-Event-ID header does the same and wins).' },
        },
      },
      headers: { type: 'object', properties: { 'last-event-id': { type: 'string', maxLength: 64 } } },
      response: {
        200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
        400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error),
      },
    },
  }, (request, reply) => {
    const { jobName, labelSelector, q } = request.query;
    const filter = { jobName, labels: parseLabelSelector(labelSelector), q };
    const lastEventId = (request.headers['last-event-id'] as string | undefined) ?? request.query.lastEventId;
    reply.hijack();
    const out = reply.raw;
    out.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no', // nginx ingresses: deliver each event at once
    });
    const send = (message: FeedMessage) => {
      if (message.type === 'reset') {
        out.write(`id: ${message.id}\nevent: reset\ndata: {}\n\n`);
      } else if (matchesQuery(message.record, filter)) {
        out.write(`id: ${message.id}\nevent: ${message.type}\ndata: ${JSON.stringify(redactEnvFor(toApplication(message.record, history), request.apiKey))}\n\n`);
      }
    };
    // A fresh connection learns its position from `ready`; a resumed one keeps the one it sent.
    out.write(`retry: 2000\n${lastEventId === undefined ? `id: ${cluster.events.lastId}\n` : ''}event: ready\ndata: {}\n\n`);
    const unsubscribe = cluster.events.subscribe(lastEventId, send);
    const heartbeat = setInterval(() => out.write(': keep-alive\n\n'), HEARTBEAT_MS);
    const end = () => { clearInterval(heartbeat); unsubscribe(); };
    request.raw.once('close', end);
    out.once('error', end);
  });
}
