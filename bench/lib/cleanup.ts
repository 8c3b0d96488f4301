/**
 * What must not outlive the benchmark (dev servers, child processes): registered while it runs, stopped on
 * SIGINT/SIGTERM so that an interrupted run leaves nothing behind.
 */
import { progress } from './progress.js';

const pending = new Set<() => Promise<unknown>>();

/** Registers `stop`; the returned function unregisters it (call it once `stop` has run normally). */
export function onInterrupt(stop: () => Promise<unknown>): () => void {
  pending.add(stop);
  return () => pending.delete(stop);
}

/**
 * A signal this soon after the first is the same Ctrl-C relayed (the terminal signals the whole process group, and
 * npm and tsx pass it on again): it must not cut the clean stop short, or a PostgreSQL is left running.
 */
const RELAYED_WITHIN_MS = 3_000;

/**
 * Installs the signal handlers: stop everything registered, then exit 130. A signal within a few seconds of the
 * first is taken for a relay of it and ignored; one after that exits at once, saying what may be left running.
 */
export function stopOnSignals(): void {
  let firstAt: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (Date.now() - firstAt < RELAYED_WITHIN_MS) return;
      progress(
        `${signal} again: exiting without waiting; ${pending.size} process(es) may still run (dev servers, PostgreSQL under the run's data directory)`,
      );
      process.exit(130);
    }
    firstAt = Date.now();
    progress(
      `${signal}: stopping ${pending.size} process(es) (a second Ctrl-C after ${RELAYED_WITHIN_MS / 1000} s exits at once)`,
    );
    void Promise.allSettled([...pending].map((stop) => stop())).then(() => process.exit(130));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
