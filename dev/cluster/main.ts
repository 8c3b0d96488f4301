/**
 * `npm run cluster`: the watcher on a Temporal cluster of its own (dev/cluster/entry.ts), signal handlers first (see
 * src/main.ts).
 */
import { Lifecycle } from '../../src/lifecycle.js';

const lifecycle = Lifecycle.onSignals();
await lifecycle.run(async () => (await import('./entry.js')).startClusterProcess(lifecycle));
