// The change feed of applications: every state change and deletion, numbered, held in a
// bounded ring so that a subscriber that reconnects with the id of the last event it saw
// gets what it missed. The API serves it as server-sent events (GET /api/apps/events); the
// dashboard, the notebook gateway and the CLI follow it.
//
// Ids are `<epoch>.<sequence>`: the epoch is new in every process, so an id from another
// process (a restarted service, another API replica) or one older than the ring is answered
// with a `reset`: the subscriber re-reads the list, then follows the live events.
//
// Each held event keeps the size of its record's JSON, measured once when it is published: a
// resume that would replay more bytes than a stream may send is answered `reset` before any of
// it is made into text (16 resumes of 1,000 held events each, built and then refused, stalled
// the process for 10.9 s).
import { randomBytes } from 'node:crypto';
import type { AppRecord } from './app-record.js';

export type AppEventType = 'changed' | 'deleted';

export interface AppEvent {
  id: string;
  type: AppEventType;
  record: AppRecord;
}

/** What a subscriber receives: events, or a `reset` when its position cannot be resumed. */
export type FeedMessage = AppEvent | { type: 'reset'; id: string };

export interface EventFeedOptions {
  /** How many past events are kept for resumption. */
  capacity?: number;
  /** Told when the first subscriber comes (true) and the last one goes (false): a source may watch only while someone listens. */
  onDemand?: (active: boolean) => void;
}

/** Whether held events (with their sizes) are few and small enough to be replayed: counted before any is built. */
export function replayFits(missed: readonly { bytes: number }[], maxEvents: number, maxBytes: number): boolean {
  if (missed.length > maxEvents) return false;
  let bytes = 0;
  for (const held of missed) {
    bytes += held.bytes;
    if (bytes > maxBytes) return false;
  }
  return true;
}

export class EventFeed {
  readonly epoch = randomBytes(4).toString('hex');
  private readonly capacity: number;
  private readonly onDemand?: (active: boolean) => void;
  private readonly ring: { event: AppEvent; bytes: number }[] = [];
  private sequence = 0;
  private readonly subscribers = new Set<(message: FeedMessage) => void>();

  constructor(options: EventFeedOptions = {}) {
    this.capacity = options.capacity ?? 10_000;
    this.onDemand = options.onDemand;
  }

  /** The id a subscriber that has seen everything so far would hold. */
  get lastId(): string {
    return `${this.epoch}.${this.sequence}`;
  }

  /** `json`: the record's JSON, when the caller has made it already (the cache compares records by it). */
  publish(type: AppEventType, record: AppRecord, json = JSON.stringify(record)): AppEvent {
    this.sequence += 1;
    const event: AppEvent = { id: `${this.epoch}.${this.sequence}`, type, record };
    // Bytes as sent (UTF-8): a string's length counts UTF-16 units, a third of some characters' bytes.
    this.ring.push({ event, bytes: Buffer.byteLength(json) });
    if (this.ring.length > this.capacity) this.ring.shift();
    for (const subscriber of this.subscribers) subscriber(event);
    return event;
  }

  /**
   * Delivers the events after `lastEventId` (or a reset when they are no longer held, the id
   * is from elsewhere, more than `maxReplay` were missed, or their records' JSON is more than
   * `maxReplayBytes`), then every new event, until the returned function is called. Without
   * `lastEventId`, only new events.
   */
  subscribe(lastEventId: string | undefined, subscriber: (message: FeedMessage) => void, { maxReplay = Infinity, maxReplayBytes = Infinity } = {}): () => void {
    if (lastEventId !== undefined) {
      const missed = this.after(lastEventId);
      if (missed === undefined || !replayFits(missed, maxReplay, maxReplayBytes)) subscriber({ type: 'reset', id: this.lastId });
      else for (const { event } of missed) subscriber(event);
    }
    this.subscribers.add(subscriber);
    if (this.subscribers.size === 1) this.onDemand?.(true);
    return () => {
      if (this.subscribers.delete(subscriber) && this.subscribers.size === 0) this.onDemand?.(false);
    };
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** The held events after an id of this feed; undefined when they cannot be known. */
  private after(id: string): { event: AppEvent; bytes: number }[] | undefined {
    const [epoch, text] = id.split('.');
    const seen = Number(text);
    if (epoch !== this.epoch || !Number.isSafeInteger(seen) || seen < 0 || seen > this.sequence) return undefined;
    if (seen === this.sequence) return [];
    const oldest = this.sequence - this.ring.length + 1;
    if (seen + 1 < oldest) return undefined;
    return this.ring.slice(seen + 1 - oldest);
  }
}
