import { MAX_NESTING_DEPTH, pathBeyondDepth } from '../../canonical/index.ts';
import { EnvelopeError } from '../../errors/index.ts';
import { encodePointer } from '../../pointer/json-pointer.ts';

/**
 * Why a message from a client is refused for its nesting, or undefined. Every
 * transport and era draws the same line, the canonical form's: past it a
 * message could be neither digested nor serialized again on its way upstream
 * (JSON.stringify overflows the stack a few thousand levels down), and where
 * that happened would depend on the stack, not on a rule a client can read.
 */
export function nestingRefusal(message: unknown): EnvelopeError | undefined {
  const path = pathBeyondDepth(message);
  if (!path) return undefined;
  const pointer = encodePointer(path);
  return new EnvelopeError('JSON_TOO_DEEP', `The message is nested deeper than ${MAX_NESTING_DEPTH} levels`, {
    pointer,
    max_depth: MAX_NESTING_DEPTH,
  });
}
