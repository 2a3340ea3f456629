import { EnvelopeError } from '../../errors/index.ts';

/**
 * How many bytes of upstream answers the gateway holds at once. Each answer
 * costs several copies on its way through (the raw line, its text, the parsed
 * value, the re-serialized reply), so concurrent large answers multiply with
 * no bound of their own; past the budget an answer is refused with
 * RESOURCE_EXHAUSTED (retriable) instead of being held, and one within it is
 * passed whole. Budgets nest: an upstream set's (one principal's over HTTP,
 * one session's over stdio) sits inside the process's, and bytes count
 * against both.
 */

/**
 * What the whole gateway process holds of upstream answers at once. An answer
 * costs several copies on its way (line, text, value, reply, and garbage not yet
 * collected: about 4x its size at peak), so this keeps a default heap safe.
 */
export const PROCESS_RESULT_BUDGET_BYTES = 192 * 1024 * 1024;
/**
 * What one upstream set (one principal's over HTTP) holds at once, so one
 * principal cannot take the whole process budget; a single answer larger is refused.
 */
export const SET_RESULT_BUDGET_BYTES = 96 * 1024 * 1024;

/** Bytes counted against a budget until released; release is idempotent. */
export interface Reservation {
  readonly bytes: number;
  /** Takes `bytes` in all (more or, freeing, fewer); throws RESOURCE_EXHAUSTED, holding what it held, when that does not fit. */
  resize(bytes: number): void;
  release(): void;
}

export class ResultBudget {
  readonly limitBytes: number;
  /** What the budget covers, for the error's details: `process` or `upstream set`. */
  readonly scope: string;
  readonly parent: ResultBudget | undefined;
  #inFlight = 0;

  constructor(limitBytes: number, scope: string, parent?: ResultBudget) {
    this.limitBytes = limitBytes;
    this.scope = scope;
    this.parent = parent;
  }

  /** Bytes held now. */
  get inFlightBytes(): number {
    return this.#inFlight;
  }

  /** Holds `bytes` here and in every enclosing budget, or throws RESOURCE_EXHAUSTED naming the one that is full. */
  reserve(bytes: number): Reservation {
    this.#take(bytes);
    return this.#reservation(bytes);
  }

  #reservation(bytes: number): Reservation {
    let held = bytes;
    let released = false;
    return {
      get bytes() {
        return released ? 0 : held;
      },
      resize: (next: number) => {
        if (released) throw new EnvelopeError('USAGE_ERROR', 'resize of a released reservation');
        if (next > held) this.#take(next - held);
        else this.#give(held - next);
        held = next;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#give(held);
      },
    };
  }

  /**
   * Holds `bytes` even past the limit: for an answer already admitted changing
   * hands (leaving the upstream's reservation for a reply not yet sent), so the
   * overdraw is at most the answers in hand-over, and new answers are refused
   * until it is paid back.
   */
  hold(bytes: number): Reservation {
    for (let budget: ResultBudget | undefined = this; budget; budget = budget.parent)
      budget.#inFlight += bytes;
    return this.#reservation(bytes);
  }

  #take(bytes: number): void {
    for (let budget: ResultBudget | undefined = this; budget; budget = budget.parent) {
      if (budget.#inFlight + bytes > budget.limitBytes) throw exhausted(budget, bytes);
    }
    for (let budget: ResultBudget | undefined = this; budget; budget = budget.parent)
      budget.#inFlight += bytes;
  }

  #give(bytes: number): void {
    for (let budget: ResultBudget | undefined = this; budget; budget = budget.parent)
      budget.#inFlight -= bytes;
  }
}

function exhausted(budget: ResultBudget, bytes: number): EnvelopeError {
  return new EnvelopeError(
    'RESOURCE_EXHAUSTED',
    `The gateway holds too many bytes of upstream answers at once (${budget.scope} limit ${budget.limitBytes} bytes); try again later`,
    {
      limit: `${budget.scope} result bytes`,
      limit_bytes: budget.limitBytes,
      in_flight_bytes: budget.inFlightBytes,
      requested_bytes: bytes,
    },
  );
}

let processBudget: ResultBudget | undefined;

/** The budget of the whole process, made on first use: one per process, whatever serves it. */
export function processResultBudget(): ResultBudget {
  processBudget ??= new ResultBudget(PROCESS_RESULT_BUDGET_BYTES, 'process');
  return processBudget;
}

/** A new upstream set's budget inside `parent` (the process's unless given). */
export function setResultBudget(
  parent: ResultBudget = processResultBudget(),
  limitBytes: number = SET_RESULT_BUDGET_BYTES,
): ResultBudget {
  return new ResultBudget(limitBytes, 'upstream set', parent);
}

/**
 * About how many bytes `value` takes serialized as JSON, without serializing
 * it (an answer that arrived already parsed, from an HTTP upstream): strings
 * and keys by length, with quotes and separators. Bounded work: one visit per
 * value, iterative, so any depth is fine.
 */
export function serializedSizeOf(value: unknown): number {
  let size = 0;
  const stack: unknown[] = [value];
  for (let item = stack.pop(); stack.length > 0 || item !== undefined; item = stack.pop()) {
    if (typeof item === 'string') size += item.length + 2;
    else if (typeof item === 'number' || typeof item === 'boolean') size += String(item).length;
    else if (item === null) size += 4;
    else if (Array.isArray(item)) {
      size += 2 + item.length;
      for (const element of item) stack.push(element);
    } else if (typeof item === 'object') {
      const entries = Object.entries(item);
      size += 2 + entries.length;
      for (const [key, element] of entries) {
        size += key.length + 3;
        stack.push(element);
      }
    }
  }
  return size;
}
