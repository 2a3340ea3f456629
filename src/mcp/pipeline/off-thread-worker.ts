import { parentPort } from 'node:worker_threads';
import { canonicalize } from '../../canonical/canonicalize.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { defaultRegistry } from '../../schemas/registry.ts';

/** The worker side of off-thread.ts: one job per message, answered by id. */
export type Job =
  | { kind: 'canonicalize'; value: unknown }
  | { kind: 'validate'; schema: unknown; value: unknown };

function run(job: Job): unknown {
  if (job.kind === 'canonicalize') return canonicalize(job.value);
  const validate = defaultRegistry().validatorForSchema(job.schema as Record<string, unknown>);
  return validate(job.value);
}

parentPort?.on('message', ({ id, job }: { id: number; job: Job }) => {
  try {
    parentPort?.postMessage({ id, result: run(job) });
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
