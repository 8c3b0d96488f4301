/**
 * The whole watcher, worker and bridge in one process (src/entry/watcher.ts), on the cluster of TEMPORAL_ADDRESS or a
 * Temporal profile; `npm start` (dev/start.ts) runs the same on the embedded dev server. The signal handlers come
 * first, before the rest is loaded, so that a SIGTERM or Ctrl-C at any moment, start-up included, stops what is up
 * and exits 0.
 */
import { Lifecycle } from './lifecycle.js';

const lifecycle = Lifecycle.onSignals();
await lifecycle.run(async () => (await import('./entry/watcher.js')).startWatcher(lifecycle));
