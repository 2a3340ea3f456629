import type { JSONRPCMessage, MessageExtraInfo, Transport } from '@modelcontextprotocol/server';
import { WrappedTransport } from '../../jsonrpc/wrapped-transport.ts';

/**
 * Holds a connection's messages until something has been decided about its
 * first one. The stdio gateway's upstreams start before its client speaks;
 * the client's first message (its `initialize`, or a 2026-07-28 request's
 * `_meta`) says what it declared and who it is, and the upstreams it is served
 * by are chosen from that before anything reaches the relay. Messages that
 * arrive meanwhile wait behind the first, in order.
 */
export class FirstMessageHold extends WrappedTransport {
  readonly #decide: (first: JSONRPCMessage) => Promise<void>;
  /** Messages waiting for the decision; undefined once it is made. */
  #held: [JSONRPCMessage, MessageExtraInfo | undefined][] | undefined = [];

  constructor(inner: Transport, decide: (first: JSONRPCMessage) => Promise<void>) {
    super(inner);
    this.#decide = decide;
  }

  protected receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const held = this.#held;
    if (!held) {
      this.onmessage?.(message, extra);
      return;
    }
    held.push([message, extra]);
    if (held.length > 1) return;
    // Whatever was decided, or failed to be, the connection goes on with what it has.
    void this.#decide(message)
      .catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))))
      .finally(() => {
        this.#held = undefined;
        for (const [waiting, info] of held) this.onmessage?.(waiting, info);
      });
  }
}
