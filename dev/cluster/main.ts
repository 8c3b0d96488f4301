/**
 * `npm run cluster`: the watcher on a Temporal cluster of its own (src/entry/cluster.ts), signal handlers first (see
 * src/main.ts).
 */
import { Lifecycle } from '../lifecycle.js';

const lifecycle = Lifecycle.onSignals();
await lifecycle.run(async () => (await import('../entry/cluster.js')).startClusterProcess(lifecycle));
