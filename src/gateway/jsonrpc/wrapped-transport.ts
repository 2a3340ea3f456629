import type {
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/server';

/**
 * A transport in front of another: everything goes through to the one it
 * wraps, and what arrives is seen first by the subclass (`receive`), which
 * passes it on to `onmessage` when it sees fit.
 */
export abstract class WrappedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  protected readonly inner: Transport;

  constructor(inner: Transport) {
    this.inner = inner;
    inner.onmessage = (message, extra) => this.receive(message, extra);
    inner.onerror = (error) => this.onerror?.(error);
    inner.onclose = () => this.closed();
  }

  /** A message arrived from the wrapped transport. */
  protected abstract receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void;

  /** The wrapped transport closed. */
  protected closed(): void {
    this.onclose?.();
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion = (version: string): void => {
    this.inner.setProtocolVersion?.(version);
  };

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
