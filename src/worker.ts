/**
 * `npm run worker`: the Temporal worker alone (src/entry/worker.ts), signal handlers first (see src/main.ts).
 */
import { Lifecycle } from './lifecycle.js';

const lifecycle = Lifecycle.onSignals();
await lifecycle.run(async () => (await import('./entry/worker.js')).startWorkerProcess(lifecycle));
