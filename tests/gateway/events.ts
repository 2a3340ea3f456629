import type { Running } from './processes.ts';

/** Helpers for tests that wait on events instead of on time. */

/** A promise with the function that resolves it, so a callback can hand an event to an await. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/**
 * Rejects unless `promise` settles within `ms`. For notifications and other
 * events that a broken gateway would simply never send: the test then fails
 * naming what it waited for, instead of at its own timeout.
 */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/**
 * Resolves once the process has written something matching `pattern` on
 * stderr, read as it arrives; rejects when the process exits first or after `ms`.
 */
export function printed(running: Running, pattern: RegExp, ms = 10_000): Promise<void> {
  const stream = running.child.stderr;
  let check = () => {};
  let exited = (_code: number | null) => {};
  const seen = new Promise<void>((resolve, reject) => {
    check = () => {
      // The process helper's own listener came first, so stderr() already holds this chunk.
      if (pattern.test(running.stderr())) resolve();
    };
    exited = (code) =>
      reject(new Error(`exited with ${code} before printing ${pattern}: ${running.stderr()}`));
  });
  stream?.on('data', check);
  running.child.once('exit', exited);
  check();
  return within(seen, ms, `line matching ${pattern} on stderr`).finally(() => {
    stream?.off('data', check);
    running.child.off('exit', exited);
  });
}
