/**
 * Polling for the tests that wait on something the server does in its own time: a record that changes state, a
 * workflow that closes, a process that comes up. One loop for all of them, so every wait fails the same way: after
 * its timeout, naming what it waited for and the last thing it saw.
 */
import type { ExpectationRecord } from '../../core/schemas/record.js';

export interface PollOptions<T> {
  /** How long to keep trying (default 30 s). */
  timeoutMs?: number;
  /** The pause between tries (default 200 ms). */
  intervalMs?: number;
  /** A probe that throws counts as "not yet" (its error is given to `describe`); otherwise it fails the wait. */
  retryErrors?: boolean;
  /** The message on timeout, from the last value seen (undefined if every try threw) and the last error. */
  describe?: (last: T | undefined, error: unknown) => string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `probe` until `accept` holds for what it returns and returns that; fails with `describe` after the timeout. */
export async function until<T>(
  probe: () => Promise<T> | T,
  accept: (value: T) => boolean,
  options: PollOptions<T> = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    let last: T | undefined;
    let error: unknown;
    try {
      last = await probe();
      if (accept(last)) return last;
    } catch (thrown) {
      if (!options.retryErrors) throw thrown;
      error = thrown;
    }
    if (Date.now() > deadline) throw new Error(options.describe?.(last, error) ?? 'timed out');
    await sleep(options.intervalMs ?? 200);
  }
}

/** Polls `check` until it answers true (a throw fails the wait unless `retryErrors`). */
export async function untilTrue(check: () => Promise<boolean>, options: PollOptions<boolean> = {}): Promise<void> {
  await until(check, (ok) => ok, options);
}

/** Polls `probe` until it returns something other than undefined/false; fails naming `what` and the last error. */
export function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  return until(probe, (value) => value !== undefined && value !== false, {
    ...options,
    retryErrors: true,
    describe: (_last, error) => `timed out waiting for ${what}${error ? `: ${(error as Error).message}` : ''}`,
  }) as Promise<T>;
}

/**
 * Reads expectation `id`'s record with `read` until it exists and `accept` holds for it; after the timeout fails
 * naming the id and the last record read.
 */
export function untilRecord(
  read: (id: string) => Promise<ExpectationRecord | undefined>,
  id: string,
  accept: (record: ExpectationRecord) => boolean,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<ExpectationRecord> {
  return until(
    () => read(id),
    (record) => record !== undefined && accept(record),
    {
      ...options,
      describe: (record) => `timed out on ${id}: ${JSON.stringify(record)}`,
    },
  ) as Promise<ExpectationRecord>;
}
