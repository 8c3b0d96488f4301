/**
 * `npm run bridge`: the HTTP bridge alone (src/entry/bridge.ts), signal handlers first (see src/main.ts).
 */
import { Lifecycle } from './lifecycle.js';

const lifecycle = Lifecycle.onSignals();
await lifecycle.run(async () => (await import('./entry/bridge.js')).startBridgeProcess(lifecycle));
