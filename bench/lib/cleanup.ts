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

/** Installs the signal handlers: stop everything registered, then exit (a second signal exits at once). */
export function stopOnSignals(): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    progress(`${signal}: stopping ${pending.size} process(es)`);
    void Promise.allSettled([...pending].map((stop) => stop())).then(() => process.exit(130));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}
