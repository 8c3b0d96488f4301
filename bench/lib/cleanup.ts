/** What must not outlive the benchmark (dev servers, child processes), stopped on SIGINT/SIGTERM. */
import { progress } from './progress.js';

const pending = new Set<() => Promise<unknown>>();

/** Registers `stop`; the returned function unregisters it (call it once `stop` has run normally). */
export function onInterrupt(stop: () => Promise<unknown>): () => void {
  pending.add(stop);
  return () => pending.delete(stop);
}

/** The same Ctrl-C relayed again by npm and tsx must not cut the clean stop short, or a PostgreSQL is left running. */
const RELAYED_WITHIN_MS = 3_000;

/** Installs the signal handlers: stop everything registered, then exit 130; a later second signal exits at once. */
export function stopOnSignals(): void {
  let firstAt: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (Date.now() - firstAt < RELAYED_WITHIN_MS) return;
      progress(`${signal} again: exiting without waiting; ${pending.size} process(es) may still run`);
      process.exit(130);
    }
    firstAt = Date.now();
    progress(`${signal}: stopping ${pending.size} process(es) (a second Ctrl-C after 3 s exits at once)`);
    void Promise.allSettled([...pending].map((stop) => stop())).then(() => process.exit(130));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
