/**
 * `npm start`: the whole watcher of src/entry/watcher.ts, on the embedded Temporal dev server (dev/temporal/embedded.ts)
 * when neither TEMPORAL_ADDRESS nor a Temporal profile names a cluster. The product's own entry, src/main.ts, needs a
 * cluster: the dev server is dev/'s, and src/ never imports dev/. Signal handlers first, as in src/main.ts.
 */
import { Lifecycle } from '../src/lifecycle.js';

const lifecycle = Lifecycle.onSignals();
await lifecycle.run(async () => {
  const [{ startWatcher }, { startEmbeddedTemporal }] = await Promise.all([
    import('../src/entry/watcher.js'),
    import('./temporal/embedded.js'),
  ]);
  return startWatcher(lifecycle, startEmbeddedTemporal);
});
