// GET /api/apps/events: the change feed of applications as server-sent events, resumable
// with Last-Event-ID. The dashboard, the notebook gateway and `apps submit --follow` use it.
import type { FastifyInstance } from 'fastify';
import type { Cluster } from '../../cluster/cluster.js';
import type { FeedMessage } from '../../cluster/events.js';
import type { SparkHistory } from '../../cluster/history/spark-history.js';
import { matchesQuery } from '../../cluster/paging.js';
import { ref, schemaIds } from '../../schemas/index.js';
import { defaultStreamBudget, EventStreamWriter, type StreamBudget } from '../event-stream-writer.js';
import type { FairShare } from '../fair-share.js';
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
A comment line (\`: keep-alive\`) is sent every ${HEARTBEAT_MS / 1000} s. A resume that missed more than ${defaultStreamBudget.maxReplayEvents} events (or ${defaultStreamBudget.maxReplayBytes / 1024 / 1024} MiB of them) is answered with \`reset\`; a client that falls ${defaultStreamBudget.maxBufferedBytes / 1024 / 1024} MiB behind is disconnected. Streams and followed logs are capped per key (429). \`jobName\`, \`labelSelector\` and \`q\` filter as in the list (an application's name, job and labels never change, so a filtered stream never loses one midway).`;

export interface AppEventOptions {
  cluster: Cluster;
  history?: SparkHistory;
  fairShare: FairShare;
  budget?: StreamBudget;
}

export async function appEventRoutes(app: FastifyInstance, { cluster, history, fairShare, budget = defaultStreamBudget }: AppEventOptions) {
  const resetText = (id: string) => `id: ${id}\nevent: reset\ndata: {}\n\n`;

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
        400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error), 429: ref(schemaIds.error),
      },
    },
  }, (request, reply) => {
    const { jobName, labelSelector, q } = request.query;
    const filter = { jobName, labels: parseLabelSelector(labelSelector), q };
    const lastEventId = (request.headers['last-event-id'] as string | undefined) ?? request.query.lastEventId;
    const out = reply.raw;
    // Counted per key (per address without one), and closed at once when the key is revoked.
    const release = fairShare.holdStream(request, () => out.destroy());
    reply.hijack();
    out.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no', // nginx ingresses: deliver each event at once
    });
    const writer = new EventStreamWriter(out, budget.maxBufferedBytes, (bytes) =>
      request.log.info({ bufferedBytes: bytes }, 'closed an event stream whose client fell behind'));
    const text = (message: FeedMessage) =>
      message.type === 'reset' ? resetText(message.id)
      : matchesQuery(message.record, filter)
        // Redacted for this caller (redact-env.ts): the text is this stream's own.
        ? `id: ${message.id}\nevent: ${message.type}\ndata: ${JSON.stringify(redactEnvFor(toApplication(message.record, history), request.apiKey))}\n\n`
        : undefined;
    // A fresh connection learns its position from `ready`; a resumed one keeps the one it sent.
    writer.send(`retry: 2000\n${lastEventId === undefined ? `id: ${cluster.events.lastId}\n` : ''}event: ready\ndata: {}\n\n`);
    // What was missed arrives synchronously, before any new event: made into text here, and
    // replaced by a `reset` when it is more than a stream may be sent to catch up.
    const replay: string[] = [];
    let replayBytes = 0;
    let replaying = true;
    // The feed measured the replay before delivering it (events.ts); what this caller is shown
    // may still differ in size, so building stops as soon as it is over the budget.
    const unsubscribe = cluster.events.subscribe(lastEventId, (message) => {
      if (replaying && replayBytes > budget.maxReplayBytes) return;
      const block = text(message);
      if (block === undefined) return;
      if (!replaying) return writer.send(block);
      replay.push(block);
      replayBytes += block.length;
    }, { maxReplay: budget.maxReplayEvents, maxReplayBytes: budget.maxReplayBytes });
    replaying = false;
    if (replayBytes > budget.maxReplayBytes) writer.send(resetText(cluster.events.lastId));
    else for (const block of replay) writer.send(block);
    replay.length = 0;
    const heartbeat = setInterval(() => writer.send(': keep-alive\n\n'), HEARTBEAT_MS);
    const end = () => { clearInterval(heartbeat); unsubscribe(); release(); };
    request.raw.once('close', end);
    out.once('close', end);
    out.once('error', end);
  });
}
