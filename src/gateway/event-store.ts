import { randomUUID } from 'node:crypto';
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

/**
 * Keeps the most recent SSE events of one session so a client that lost its
 * stream can resume with Last-Event-ID. Bounded: the oldest events are dropped
 * first, so a long session never grows memory without limit.
 */
export class BoundedEventStore implements EventStore {
  readonly #limit: number;
  readonly #events = new Map<string, { streamId: string; message: JSONRPCMessage }>();
  #sequence = 0;
  readonly #prefix = randomUUID().slice(0, 8);

  constructor(limit = 1000) {
    this.#limit = limit;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${this.#prefix}-${++this.#sequence}`;
    this.#events.set(eventId, { streamId, message });
    if (this.#events.size > this.#limit) {
      const oldest = this.#events.keys().next().value;
      if (oldest !== undefined) this.#events.delete(oldest);
    }
    return eventId;
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const start = this.#events.get(lastEventId);
    if (!start) return '';
    let after = false;
    for (const [eventId, event] of this.#events) {
      if (eventId === lastEventId) {
        after = true;
        continue;
      }
      if (after && event.streamId === start.streamId) await send(eventId, event.message);
    }
    return start.streamId;
  }
}
