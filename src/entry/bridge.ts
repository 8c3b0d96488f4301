/**
 * What `npm run bridge` runs (src/bridge.ts loads it once its signal handlers are in place): the HTTP bridge alone,
 * for deployments that run workers and bridges apart. Needs a cluster: TEMPORAL_ADDRESS or a Temporal profile (README,
 * "Connecting to your Temporal").
 */
import { ConfigError, loadConfig } from '../config.js';
import type { Lifecycle } from '../lifecycle.js';
import { createLogger } from '../logger.js';
import { logConnectionSettings, startBridge, startTracingIfConfigured } from '../runtime.js';

export async function startBridgeProcess(lifecycle: Lifecycle): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  lifecycle.useLogger(log);
  const address = config.temporal.address;
  if (!address) {
    throw new ConfigError(
      'TEMPORAL_ADDRESS: required by `npm run bridge`, or a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); `npm start` runs the embedded server',
    );
  }
  logConnectionSettings(config, log);
  const traced = startTracingIfConfigured(config, 'expectations-watcher-bridge', log);
  if (traced) lifecycle.add(traced);
  const bridge = await lifecycle.start(() => startBridge(config, address, log, undefined, { tracing: traced?.tracing }));
  if (bridge.generatedToken) process.stdout.write(`admin token: ${bridge.generatedToken} (shown once)\n`);
}
