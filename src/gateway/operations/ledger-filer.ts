import { performance } from 'node:perf_hooks';
import { EnvelopeError } from '../../errors/index.ts';
import type { InsertMeta, Ledger } from '../../ledger/index.ts';

/**
 * Files the gateway's records in its ledger by group commit: the records
 * reported during one turn of the event loop are stored in one transaction at
 * its end (setImmediate), so calls in flight together share one write of the
 * pages they touch instead of paying a commit each. A call's answer waits for
 * `settled()`, so it still goes out only once its record is in the ledger.
 */
export class LedgerFiler {
  readonly #ledger: Ledger;
  readonly #onError: (error: unknown) => void;
  readonly #onAppended: ((seconds: number, records: number) => void) | undefined;
  #queue: Array<{ subject: unknown; meta: InsertMeta }> = [];
  #settled: Promise<void> | undefined;
  #resolve: (() => void) | undefined;

  /** `onAppended`: told how long each transaction took and how many records it stored (the metrics). */
  constructor(
    ledger: Ledger,
    onError: (error: unknown) => void,
    onAppended?: (seconds: number, records: number) => void,
  ) {
    this.#ledger = ledger;
    this.#onError = onError;
    this.#onAppended = onAppended;
  }

  /** Queues a record for this turn's transaction. */
  file(subject: unknown, meta: InsertMeta): void {
    this.#queue.push({ subject, meta });
    if (this.#settled) return;
    this.#settled = new Promise((resolve) => {
      this.#resolve = resolve;
    });
    setImmediate(() => this.flush());
  }

  /** Settles once every record queued so far is stored, or its failure reported. */
  settled(): Promise<void> {
    return this.#settled ?? Promise.resolve();
  }

  /** Stores what is queued now (at the end of the turn, and when the gateway stops). */
  flush(): void {
    const batch = this.#queue;
    const resolve = this.#resolve;
    this.#queue = [];
    this.#settled = undefined;
    this.#resolve = undefined;
    try {
      if (batch.length > 0) {
        const started = this.#onAppended ? performance.now() : 0;
        const results = this.#ledger.insertMany(batch);
        this.#onAppended?.((performance.now() - started) / 1000, batch.length);
        for (const result of results) {
          if (result instanceof EnvelopeError) this.#onError(result);
        }
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      resolve?.();
    }
  }
}
