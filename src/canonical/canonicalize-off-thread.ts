import { Worker } from 'node:worker_threads';
import { EnvelopeError, isErrorCode } from '../errors/index.ts';
import { canonicalize } from './canonicalize.ts';

/**
 * RFC 8785 canonical form computed on a worker thread, for values so large
 * that ordering their members would hold the event loop for tens of
 * milliseconds (50,000 object members: over 100 ms), while other clients wait.
 * The value is copied to the worker (structured clone, a fraction of the
 * ordering's cost) and the text comes back; the same `canonicalize` runs there,
 * so the result is the one computed in place. A value the clone cannot carry
 * (a number kept as written), or a worker that fails, is canonicalized in place.
 */

interface Reply {
  id: number;
  text?: string;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, { resolve(text: string): void; reject(error: unknown): void }>();

function workerUrl(): URL {
  // Run from the sources (tests, type stripping) or from the build.
  const own = import.meta.url;
  return new URL(own.endsWith('.ts') ? './canonicalize-worker.ts' : './canonicalize-worker.js', own);
}

function started(): Worker {
  if (worker) return worker;
  const created = new Worker(workerUrl());
  created.unref();
  created.on('message', (reply: Reply) => {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (reply.text !== undefined) {
      waiting.resolve(reply.text);
      return;
    }
    const code = reply.error?.code;
    waiting.reject(
      new EnvelopeError(
        code !== undefined && isErrorCode(code) ? code : 'INTERNAL_ERROR',
        reply.error?.message,
        reply.error?.details,
      ),
    );
  });
  const fail = (error: unknown) => {
    if (worker === created) worker = undefined;
    for (const waiting of pending.values()) waiting.reject(error);
    pending.clear();
  };
  created.on('error', fail);
  created.on('exit', () => fail(new Error('the canonical form worker exited')));
  worker = created;
  return created;
}

/** `canonicalize(value)`, computed off the event loop. */
export async function canonicalizeOffThread(value: unknown): Promise<string> {
  const id = nextId++;
  try {
    return await new Promise<string>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      started().postMessage({ id, value });
    });
  } catch (error) {
    pending.delete(id);
    // The table's refusals are the answer; anything else (a value the clone cannot carry, a
    // worker that failed) is redone in place.
    if (error instanceof EnvelopeError) throw error;
    return canonicalize(value);
  }
}
