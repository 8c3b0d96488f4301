/**
 * What `npm run bridge` runs (src/bridge.ts loads it once its signal handlers are in place): the HTTP bridge alone,
 * for deployments that run workers and bridges apart. Needs a cluster: TEMPORAL_ADDRESS or a Temporal profile (README,
 * "Connecting to your Temporal").
 */
import type { Lifecycle } from '../lifecycle.js';
import { prepareClusterProcess, startBridge, startTracingIfConfigured } from '../runtime.js';

export async function startBridgeProcess(lifecycle: Lifecycle): Promise<void> {
  const { config, log, address } = prepareClusterProcess(lifecycle, 'npm run bridge');
  const traced = startTracingIfConfigured(config, 'expectations-watcher-bridge', log);
  if (traced) lifecycle.add(traced);
  const bridge = await lifecycle.start(() =>
    startBridge(config, address, log, undefined, { tracing: traced?.tracing }),
  );
  if (bridge.generatedToken) process.stdout.write(`admin token: ${bridge.generatedToken} (shown once)\n`);
}
