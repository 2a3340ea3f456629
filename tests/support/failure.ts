import type { EnvelopeError } from '../../src/errors/index.ts';

/** The error `run` throws; fails the test when it throws none. */
export function failure(run: () => unknown): EnvelopeError {
  try {
    run();
  } catch (error) {
    return error as EnvelopeError;
  }
  throw new Error('expected a failure');
}
