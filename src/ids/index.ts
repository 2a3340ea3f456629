import { randomBytes, randomUUID } from 'node:crypto';
import { v5 as uuidv5 } from 'uuid';
import { canonicalize } from '../canonical/canonicalize.ts';

/**
 * Run and request ids. Random mode uses UUIDv4. Deterministic mode derives
 * UUIDv5 ids from a seed namespace, the call's canonical content and its
 * sequence number, so the same calls in the same order give the same ids.
 */

/** The namespace all seeds hang off (a fixed UUIDv4, generated once for this project). */
export const MCP_ENVELOPE_NAMESPACE = '6c0b3a64-3f0e-4d6e-9a57-6f6a1e8a2b41';

export interface IdSource {
  /** A run id for a call with this content. */
  runId(content?: unknown): string;
  readonly deterministic: boolean;
}

export function randomRunId(): string {
  return randomUUID();
}

export class RandomIds implements IdSource {
  readonly deterministic = false;
  runId(): string {
    return randomUUID();
  }
}

export class DeterministicIds implements IdSource {
  readonly deterministic = true;
  readonly namespace: string;
  private sequence = 0;

  constructor(seed: string) {
    this.namespace = uuidv5(seed, MCP_ENVELOPE_NAMESPACE);
  }

  runId(content: unknown = null): string {
    const name = `${this.sequence++}:${canonicalize(content)}`;
    return uuidv5(name, this.namespace);
  }
}

/** Random ids, or deterministic ones when a seed is given. */
export function createIdSource(seed?: string): IdSource {
  return seed === undefined ? new RandomIds() : new DeterministicIds(seed);
}

/** A 32-hex-digit correlation id (the Code Scalpel form). */
export function hexRequestId(): string {
  return randomBytes(16).toString('hex');
}

/** A `req_` prefixed id of letters and digits (the accessibility suite form). */
export function prefixedRequestId(): string {
  return `req_${randomBytes(16).toString('hex')}`;
}
