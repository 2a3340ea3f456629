import { parentPort } from 'node:worker_threads';
import { EnvelopeError } from '../errors/index.ts';
import { canonicalize } from './canonicalize.ts';

/** The worker side of canonicalize-off-thread.ts: one canonical form per message. */
parentPort?.on('message', ({ id, value }: { id: number; value: unknown }) => {
  try {
    parentPort?.postMessage({ id, text: canonicalize(value) });
  } catch (error) {
    const known = error instanceof EnvelopeError;
    parentPort?.postMessage({
      id,
      error: {
        code: known ? error.code : 'INTERNAL_ERROR',
        message: error instanceof Error ? error.message : String(error),
        ...(known && error.details ? { details: error.details } : {}),
      },
    });
  }
});
