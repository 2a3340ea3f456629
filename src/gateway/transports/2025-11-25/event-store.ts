import { randomUUID } from 'node:crypto';
import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';

/**
 * Keeps the most recent SSE events of one session so a client that lost its
 * stream can resume with Last-Event-ID. Bounded in count and in bytes: the
 * oldest events are dropped first, so large results never pile up in memory.
 */
export class BoundedEventStore implements EventStore {
  readonly #limit: number;
  readonly #maxBytes: number;
  readonly #events = new Map<string, { streamId: string; message: JSONRPCMessage; bytes: number }>();
  #bytes = 0;
  #sequence = 0;
  readonly #prefix = randomUUID().slice(0, 8);

  constructor(limit = 1000, maxBytes = 4 * 1024 * 1024) {
    this.#limit = limit;
    this.#maxBytes = maxBytes;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const eventId = `${this.#prefix}-${++this.#sequence}`;
    const bytes = JSON.stringify(message).length;
    this.#events.set(eventId, { streamId, message, bytes });
    this.#bytes += bytes;
    for (let guard = 0; guard < this.#limit + 1; guard++) {
      if (this.#events.size <= 1 || (this.#events.size <= this.#limit && this.#bytes <= this.#maxBytes))
        break;
      const [oldest, event] = this.#events.entries().next().value ?? [];
      if (oldest === undefined || event === undefined) break;
      this.#events.delete(oldest);
      this.#bytes -= event.bytes;
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
