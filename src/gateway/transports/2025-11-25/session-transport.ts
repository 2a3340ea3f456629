import type { IncomingMessage, ServerResponse } from 'node:http';
import type {
  AuthInfo,
  JSONRPCMessage,
  MessageExtraInfo,
  RequestId,
  Transport,
} from '@modelcontextprotocol/server';
import {
  isInitializeRequest,
  isJsonContentType,
  parseJSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';
import { EnvelopeError } from '../../../errors/index.ts';
import { sendJson } from '../../http/reply.ts';
import { COUNTED_REPLY_BYTES, countUnreadBytes } from '../../http/unread-bound.ts';
import { errorResponse, requestIdOf, rpcErrorMessage, withCanonicalCode } from '../../jsonrpc/messages.ts';
import { admitOutgoing, droppedReport, MAX_QUEUED_BYTES } from '../../relay/downstream.ts';
import { processResultBudget, type Reservation } from '../../upstreams/result-budget.ts';

/** SSE comment lines keep idle streams open through proxies that drop silent connections. */
const KEEP_ALIVE_MS = 15_000;

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * The HTTP exchange that carries the answers to the requests of one POST.
 * It starts as a plain JSON reply and becomes an SSE stream only when the
 * server has something to say about those requests before answering them.
 */
interface Exchange {
  res: ServerResponse;
  /** Request ids of this POST still waiting for their response. */
  pending: Set<RequestId>;
  /** Responses ready before the exchange was known to need a stream. */
  answered: JSONRPCMessage[];
  batch: boolean;
  streaming: boolean;
  /** The client went away: nothing more can be delivered. */
  gone: boolean;
  keepAlive?: NodeJS.Timeout;
  /** Notifications dropped because the client was not reading (reported when the stream closes). */
  dropped: number;
}

/** An SSE stream the client may stop reading: the GET stream, or a POST's reply turned stream. */
interface Outgoing {
  res: ServerResponse;
  dropped: number;
}

/**
 * The process's answer budget held for a reply's bytes until it has been
 * handed to the system (`finish`) or its connection closed; the budget's
 * RESOURCE_EXHAUSTED when it cannot take them, undefined for a small reply.
 */
function holdUnread(text: string): Reservation | EnvelopeError | undefined {
  if (text.length < COUNTED_REPLY_BYTES) return undefined;
  try {
    return processResultBudget().reserve(Buffer.byteLength(text));
  } catch (error) {
    if (error instanceof EnvelopeError) return error;
    throw error;
  }
}

function reportOnStderr(message: string): void {
  process.stderr.write(`gateway: ${message}\n`);
}

const NOT_READING = `the client is not reading this stream: more than ${MAX_QUEUED_BYTES / (1024 * 1024)} MiB are waiting`;

/** Which canonical code each refusal of the transport is, by its HTTP status. */
const CANONICAL_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'INVALID_INPUT',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'INVALID_INPUT',
  409: 'RESOURCE_EXHAUSTED',
  415: 'INVALID_INPUT',
};

/**
 * A JSON-RPC error for an HTTP request the transport refuses, as the SDK's
 * transport words it, with the canonical code every error of the gateway carries.
 */
function rpcError(res: ServerResponse, status: number, code: number, message: string, headers = {}): void {
  const canonical = CANONICAL_BY_STATUS[status] ?? 'INVALID_INPUT';
  sendJson(
    res,
    status,
    rpcErrorMessage(null, { code, message, data: { canonical_code: canonical } }),
    headers,
  );
}

/**
 * Whether the client ranks `text/event-stream` above `application/json`: by
 * q-value, and on a tie by the order it listed them. The client must accept
 * both; this only decides which one a POST gets when either would do.
 */
export function prefersEventStream(accept: string): boolean {
  let json: { q: number; at: number } | undefined;
  let sse: { q: number; at: number } | undefined;
  accept.split(',').forEach((range, at) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParam = params.find((param) => param.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    const entry = { q: Number.isFinite(q) ? q : 0, at };
    if (type === 'application/json') json ??= entry;
    else if (type === 'text/event-stream') sse ??= entry;
  });
  if (!sse || sse.q <= 0) return false;
  if (!json || json.q <= 0) return true;
  return sse.q > json.q || (sse.q === json.q && sse.at < json.at);
}

function isResponse(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } {
  return 'id' in message && ('result' in message || 'error' in message);
}

function isRequest(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId; method: string } {
  return 'id' in message && 'method' in message;
}

/** The method is checked first: the SDK's guard is a full schema parse, too dear for every call. */
function isInitialize(message: JSONRPCMessage): boolean {
  return 'method' in message && message.method === 'initialize' && isInitializeRequest(message);
}

function sseEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/**
 * Streamable HTTP (2025 era) for one stateful session, on node:http directly.
 *
 * Each POST that carries requests is answered with `application/json` when
 * nothing related to those requests has to go out before their responses, and
 * is switched to `text/event-stream` at the first notification or
 * server-to-client request that does (progress, log messages, sampling,
 * elicitation). The specification lets the server choose per POST and obliges
 * clients to take both; a client whose Accept header ranks the event stream
 * first gets a stream from the start. The SDK's own transport chooses once per
 * session, and its SSE path (through Web streams and a Request/Response
 * adapter) costs several times the JSON reply, which most tool calls can use.
 *
 * Validation follows the SDK's transport: Accept (406), Content-Type (415),
 * JSON-RPC shape (400/-32700), a second initialize (400/-32600), the
 * MCP-Protocol-Version header (400). The session id itself is checked by the
 * router that looked this transport up.
 *
 * A client that stops reading a stream cannot make it buffer without limit
 * (`admitOutgoing`): past `ADVISORY_QUEUED_BYTES` waiting, progress, log
 * messages and list changes to that stream are dropped (counted, reported when
 * the stream closes); past `MAX_QUEUED_BYTES`, the stream is ended. A POST's
 * reply then answers its requests still pending with RESOURCE_EXHAUSTED (after
 * what was queued, should the client read again) and their later answers are
 * dropped; a server-to-client request that found its stream full is failed
 * for the server at once. The client can open a new GET stream, or repeat the
 * requests, once it reads again.
 */
export class SessionTransport implements Transport {
  readonly sessionId: string;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  /** The client's GET stream opened (true) or went away (false): a session whose client left closes its stream. */
  onstreamchange?: (open: boolean) => void;

  #initialized = false;
  #closed = false;
  #versions: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
  readonly #exchanges = new Map<RequestId, Exchange>();
  /** Requests the client cancelled: no answer is owed, and one that still comes is dropped. */
  readonly #cancelled = new Set<RequestId>();
  /** The GET stream for messages that belong to no request. */
  #standalone?: Outgoing & { keepAlive: NodeJS.Timeout };
  readonly #report: (message: string) => void;

  /** `report` tells the operator what a stream cost (never the client's concern); stderr by default. */
  constructor(sessionId: string, options: { report?: (message: string) => void } = {}) {
    this.sessionId = sessionId;
    this.#report = options.report ?? reportOnStderr;
  }

  get initialized(): boolean {
    return this.#initialized;
  }

  async start(): Promise<void> {}

  setSupportedProtocolVersions(versions: string[]): void {
    this.#versions = versions;
  }

  /** Serves one HTTP request of this session; POST bodies arrive parsed. */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo): Promise<void> {
    if (this.#closed) {
      rpcError(res, 404, -32001, 'Session not found');
      return;
    }
    switch (req.method) {
      case 'POST':
        this.#post(req, res, body, authInfo);
        return;
      case 'GET':
        this.#get(req, res);
        return;
      case 'DELETE':
        if (!this.#checkVersion(req, res)) return;
        res.writeHead(200, { 'mcp-session-id': this.sessionId });
        res.end();
        await this.close();
        return;
      default:
        rpcError(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
    }
  }

  #checkVersion(req: IncomingMessage, res: ServerResponse): boolean {
    const version = req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && !this.#versions.includes(version)) {
      rpcError(
        res,
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${version} (supported versions: ${this.#versions.join(', ')})`,
      );
      return false;
    }
    return true;
  }

  #post(req: IncomingMessage, res: ServerResponse, body: unknown, authInfo?: AuthInfo): void {
    const accept = req.headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      rpcError(
        res,
        406,
        -32000,
        'Not Acceptable: Client must accept both application/json and text/event-stream',
      );
      return;
    }
    if (!isJsonContentType(req.headers['content-type'] ?? null)) {
      rpcError(res, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
      return;
    }
    let messages: JSONRPCMessage[];
    try {
      messages = Array.isArray(body) ? body.map(parseJSONRPCMessage) : [parseJSONRPCMessage(body)];
    } catch {
      // The body is JSON (the server parsed it): what fails is its shape, -32600 as on stdio.
      const error = new EnvelopeError(
        'INVALID_INPUT',
        'Invalid Request: the body is not a JSON-RPC 2.0 message',
      );
      sendJson(
        res,
        400,
        errorResponse(Array.isArray(body) ? null : (requestIdOf(body) ?? null), error, -32600),
      );
      return;
    }
    if (messages.length === 0) {
      rpcError(res, 400, -32600, 'Invalid Request: empty batch');
      return;
    }
    if (messages.some(isInitialize)) {
      if (this.#initialized) {
        rpcError(res, 400, -32600, 'Invalid Request: Server already initialized');
        return;
      }
      if (messages.length > 1) {
        rpcError(res, 400, -32600, 'Invalid Request: Only one initialization request is allowed');
        return;
      }
      this.#initialized = true;
    } else if (!this.#initialized) {
      rpcError(res, 400, -32000, 'Bad Request: Server not initialized');
      return;
    } else if (!this.#checkVersion(req, res)) {
      return;
    }

    const extra: MessageExtraInfo = authInfo ? { authInfo } : {};
    const requests = messages.filter(isRequest);
    if (requests.length === 0) {
      res.writeHead(202, { 'mcp-session-id': this.sessionId });
      res.end();
      for (const message of messages) this.onmessage?.(message, extra);
      this.#settleCancelled(messages);
      return;
    }
    // An id still waiting for its answer would have its answer go to the wrong POST.
    const pending = new Set<RequestId>();
    for (const request of requests) {
      if (this.#exchanges.has(request.id) || pending.has(request.id)) {
        rpcError(
          res,
          400,
          -32600,
          `Invalid Request: request id ${JSON.stringify(request.id)} is already in use`,
        );
        return;
      }
      pending.add(request.id);
    }
    const exchange: Exchange = {
      res,
      pending,
      answered: [],
      batch: Array.isArray(body),
      streaming: false,
      gone: false,
      dropped: 0,
    };
    if (prefersEventStream(accept)) {
      this.#startStream(exchange);
      res.flushHeaders();
    }
    for (const id of exchange.pending) this.#exchanges.set(id, exchange);
    res.once('close', () => {
      this.#reportDropped(exchange, 'a reply stream');
      if (res.writableFinished) return;
      // Losing the connection is not a cancellation (2025-11-25); the answers just cannot arrive.
      exchange.gone = true;
      clearInterval(exchange.keepAlive);
    });
    for (const message of messages) this.onmessage?.(message, extra);
    this.#settleCancelled(messages);
  }

  /**
   * A cancelled request gets no answer (the SDK sends none), so the POST that
   * carried it is no longer waiting for one: once nothing else is pending there,
   * its reply ends instead of staying open forever.
   */
  #settleCancelled(messages: readonly JSONRPCMessage[]): void {
    for (const message of messages) {
      if (!('method' in message) || message.method !== 'notifications/cancelled') continue;
      const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof id !== 'string' && typeof id !== 'number') continue;
      const exchange = this.#exchanges.get(id);
      if (!exchange) continue;
      this.#exchanges.delete(id);
      exchange.pending.delete(id);
      // Bounded: an id is forgotten once its late answer came, or when many are held.
      if (this.#cancelled.size >= 1024) this.#cancelled.clear();
      this.#cancelled.add(id);
      if (exchange.pending.size === 0) this.#finish(exchange);
    }
  }

  #get(req: IncomingMessage, res: ServerResponse): void {
    if (!(req.headers.accept ?? '').includes('text/event-stream')) {
      rpcError(res, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
      return;
    }
    if (!this.#initialized) {
      rpcError(res, 400, -32000, 'Bad Request: Server not initialized');
      return;
    }
    if (!this.#checkVersion(req, res)) return;
    if (this.#standalone) {
      rpcError(res, 409, -32000, 'Conflict: Only one SSE stream is allowed per session');
      return;
    }
    res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': this.sessionId });
    res.flushHeaders();
    countUnreadBytes(res);
    const stream = { res, keepAlive: this.#keepAlive(res), dropped: 0 };
    this.#standalone = stream;
    this.onstreamchange?.(true);
    res.once('close', () => {
      this.#reportDropped(stream, 'the GET stream');
      clearInterval(stream.keepAlive);
      // A stream the gateway ended (or replaced) was already reported gone.
      if (this.#standalone !== stream) return;
      this.#standalone = undefined;
      if (!this.#closed) this.onstreamchange?.(false);
    });
  }

  #keepAlive(res: ServerResponse): NodeJS.Timeout {
    const timer = setInterval(() => res.write(': keepalive\n\n'), KEEP_ALIVE_MS);
    timer.unref();
    return timer;
  }

  #startStream(exchange: Exchange): void {
    exchange.streaming = true;
    exchange.res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': this.sessionId });
    countUnreadBytes(exchange.res);
    exchange.keepAlive = this.#keepAlive(exchange.res);
    for (const response of exchange.answered) exchange.res.write(sseEvent(response));
    exchange.answered = [];
  }

  #finish(exchange: Exchange): void {
    clearInterval(exchange.keepAlive);
    if (exchange.gone) return;
    if (exchange.streaming) {
      exchange.res.end();
      return;
    }
    if (exchange.answered.length === 0) {
      // Every request was cancelled: an event stream with nothing in it is the empty reply.
      exchange.res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': this.sessionId });
      exchange.res.end();
      return;
    }
    let text = JSON.stringify(exchange.batch ? exchange.answered : exchange.answered[0]);
    // A large reply counts against the process's answer budget until it has left the process:
    // replies their clients never read stayed in memory uncounted (14 of a 40 MiB image, 1.3 GB).
    const held = holdUnread(text);
    if (held instanceof EnvelopeError) {
      const refused = exchange.answered.map((answer) => errorResponse(requestIdOf(answer) ?? null, held));
      text = JSON.stringify(exchange.batch ? refused : refused[0]);
    }
    exchange.res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      'mcp-session-id': this.sessionId,
    });
    if (held && !(held instanceof EnvelopeError)) {
      exchange.res.once('finish', () => held.release());
      exchange.res.once('close', () => held.release());
    }
    exchange.res.end(text);
  }

  async send(outgoing: JSONRPCMessage, options?: { relatedRequestId?: RequestId }): Promise<void> {
    if (this.#closed) return;
    const message = withCanonicalCode(outgoing);
    if (isResponse(message)) {
      const exchange = this.#exchanges.get(message.id);
      if (!exchange && this.#cancelled.delete(message.id)) return;
      if (!exchange) {
        this.onerror?.(new Error(`No open exchange for the response to request ${String(message.id)}`));
        return;
      }
      this.#exchanges.delete(message.id);
      exchange.pending.delete(message.id);
      if (exchange.gone) {
        this.onerror?.(new Error(`The client left before the response to request ${String(message.id)}`));
      } else if (exchange.streaming) {
        if (admitOutgoing(exchange.res.writableLength, message) === 'close') {
          // Answered with the error, as the requests still pending are.
          exchange.pending.add(message.id);
          this.#overflow(exchange);
          return;
        }
        exchange.res.write(sseEvent(message));
      } else {
        exchange.answered.push(message);
      }
      if (exchange.pending.size === 0) this.#finish(exchange);
      return;
    }
    const related = options?.relatedRequestId;
    const exchange = related === undefined ? undefined : this.#exchanges.get(related);
    if (exchange && !exchange.gone) {
      if (!exchange.streaming) this.#startStream(exchange);
      const admitted = this.#admit(exchange, message);
      if (admitted === 'write') exchange.res.write(sseEvent(message));
      else if (admitted === 'close') this.#overflow(exchange);
      return;
    }
    // Unrelated (or its request's client left): the GET stream, when the client keeps one open.
    const stream = this.#standalone;
    if (!stream) return;
    const admitted = this.#admit(stream, message);
    if (admitted === 'write') stream.res.write(sseEvent(message));
    if (admitted !== 'close') return;
    // Nothing on the GET stream is owed an answer: ending it is all; the client may open another.
    this.#standalone = undefined;
    clearInterval(stream.keepAlive);
    this.onstreamchange?.(false);
    this.#report(
      `session ${this.sessionId}: ended the GET stream the client stopped reading (more than ${MAX_QUEUED_BYTES / (1024 * 1024)} MiB waiting)`,
    );
    stream.res.end();
  }

  /**
   * What becomes of a notification or server-to-client request for a stream
   * (`admitOutgoing`), counting what is dropped. A request that finds the
   * stream past its bound is failed for the server at once, not at its timeout.
   */
  #admit(stream: Outgoing, message: JSONRPCMessage): 'write' | 'drop' | 'close' {
    const admitted = admitOutgoing(stream.res.writableLength, message);
    if (admitted === 'drop') stream.dropped++;
    if (admitted === 'close' && isRequest(message)) {
      const refused = errorResponse(message.id, new EnvelopeError('RESOURCE_EXHAUSTED', NOT_READING));
      queueMicrotask(() => this.onmessage?.(refused));
    }
    return admitted;
  }

  /**
   * The client stopped reading a POST's reply: the requests still pending are
   * answered with the error, behind what is queued, and the stream ends. Their
   * own answers, when they come, are dropped as for a client that left.
   */
  #overflow(exchange: Exchange): void {
    if (exchange.gone) return;
    this.#report(
      `session ${this.sessionId}: ended a reply stream the client stopped reading (more than ${MAX_QUEUED_BYTES / (1024 * 1024)} MiB waiting); its ${exchange.pending.size} pending requests were answered with RESOURCE_EXHAUSTED`,
    );
    for (const id of exchange.pending) {
      exchange.res.write(sseEvent(errorResponse(id, new EnvelopeError('RESOURCE_EXHAUSTED', NOT_READING))));
    }
    exchange.gone = true;
    clearInterval(exchange.keepAlive);
    exchange.res.end();
  }

  #reportDropped(stream: Outgoing, name: string): void {
    if (stream.dropped === 0) return;
    this.#report(`session ${this.sessionId}: ${droppedReport(stream.dropped, name)}`);
    stream.dropped = 0;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const exchanges = new Set(this.#exchanges.values());
    this.#exchanges.clear();
    for (const exchange of exchanges) {
      for (const id of exchange.pending) {
        const closed = rpcErrorMessage(id, { code: -32000, message: 'Session closed' });
        if (exchange.streaming) exchange.res.write(sseEvent(closed));
        else exchange.answered.push(closed);
      }
      exchange.pending.clear();
      this.#finish(exchange);
    }
    if (this.#standalone) {
      clearInterval(this.#standalone.keepAlive);
      this.#standalone.res.end();
      this.#standalone = undefined;
    }
    this.onclose?.();
  }
}
