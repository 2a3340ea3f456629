import { Worker } from 'node:worker_threads';
import { canonicalize } from '../../canonical/canonicalize.ts';
import { EnvelopeError, isErrorCode } from '../../errors/index.ts';
import { defaultRegistry, type ValidationResult } from '../../schemas/registry.ts';
import type { Job } from './off-thread-worker.ts';

/**
 * Work over large arguments done on a worker thread, so that a call of tens
 * of thousands of members does not hold the event loop every client shares
 * for tens of milliseconds at a time (ordering 50,000 members for the canonical
 * form: over 100 ms; checking 40,000 objects for uniqueItems: about 70 ms).
 * The value is copied to the worker (structured clone, a fraction of the
 * work's cost) and the answer comes back; the same `canonicalize` and the same
 * default schema registry run there, so the answer is the one computed in
 * place. A value the clone cannot carry (a number kept as written), or a
 * worker that fails, is done in place.
 */

interface Reply {
  id: number;
  result?: unknown;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, { resolve(result: unknown): void; reject(error: unknown): void }>();

function workerUrl(): URL {
  // Run from the sources (tests, type stripping) or from the build.
  const own = import.meta.url;
  return new URL(own.endsWith('.ts') ? './off-thread-worker.ts' : './off-thread-worker.js', own);
}

function started(): Worker {
  if (worker) return worker;
  const created = new Worker(workerUrl());
  created.unref();
  created.on('message', (reply: Reply) => {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (!reply.error) {
      waiting.resolve(reply.result);
      return;
    }
    const { code, message, details } = reply.error;
    waiting.reject(new EnvelopeError(isErrorCode(code) ? code : 'INTERNAL_ERROR', message, details));
  });
  const fail = (error: unknown) => {
    if (worker === created) worker = undefined;
    for (const waiting of pending.values()) waiting.reject(error);
    pending.clear();
  };
  created.on('error', fail);
  created.on('exit', () => fail(new Error('the worker for large arguments exited')));
  worker = created;
  return created;
}

async function offThread<T>(job: Job, inPlace: () => T): Promise<T> {
  const id = nextId++;
  try {
    return (await new Promise<unknown>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      started().postMessage({ id, job });
    })) as T;
  } catch (error) {
    pending.delete(id);
    // The table's refusals are the answer; anything else (a value the clone cannot carry, a
    // worker that failed) is redone in place.
    if (error instanceof EnvelopeError) throw error;
    return inPlace();
  }
}

/** `canonicalize(value)`, computed off the event loop. */
export function canonicalizeOffThread(value: unknown): Promise<string> {
  return offThread({ kind: 'canonicalize', value }, () => canonicalize(value));
}

/** `value` checked against `schema` by the default registry, off the event loop. */
export function validateOffThread(
  schema: Record<string, unknown>,
  value: unknown,
): Promise<ValidationResult> {
  return offThread({ kind: 'validate', schema, value }, () =>
    defaultRegistry().validatorForSchema(schema)(value),
  );
}
