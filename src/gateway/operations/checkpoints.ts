import type { KeyObject } from 'node:crypto';
import type { Ledger } from '../../ledger/index.ts';
import { storedCheckpoints, writeCheckpoint } from '../../ledger/log/checkpoint.ts';

/**
 * The gateway's signed checkpoints of its ledger's transparency log: one
 * every `intervalMs` while the log grows, and one when the gateway stops, so
 * an auditor who keeps them can later prove the log was only ever appended to.
 */
export interface Checkpoints {
  /** Writes the last checkpoint (when the log grew since the one before) and stops. */
  stop(): void;
}

export function startCheckpoints(
  ledger: Ledger,
  key: KeyObject,
  intervalMs: number,
  report: (error: unknown) => void,
): Checkpoints {
  // The size the latest checkpoint covers: an unchanged log needs no new one.
  let covered = storedCheckpoints(ledger).at(-1)?.checkpoint.size ?? -1;
  const write = () => {
    try {
      const size = ledger.log().size();
      if (size === covered) return;
      covered = writeCheckpoint(ledger, key).size;
    } catch (error) {
      report(error);
    }
  };
  const timer = setInterval(write, intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      write();
    },
  };
}
