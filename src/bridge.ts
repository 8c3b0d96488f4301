/**
 * `npm run bridge`: the HTTP bridge alone, for deployments that run workers and bridges apart.
 * Needs a cluster: TEMPORAL_ADDRESS or a Temporal profile (README, "Connecting to your Temporal").
 */
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { logConnectionSettings, startBridge, startTracingIfConfigured, stopOnSignals, type Running } from './runtime.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  if (!config.temporal.address) throw new ConfigError(
    'TEMPORAL_ADDRESS: required by `npm run bridge`, or a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); `npm start` runs the embedded server',
  );
  logConnectionSettings(config, log);
  const pieces: Running[] = [];
  stopOnSignals(pieces, log);
  const traced = startTracingIfConfigured(config, 'expectations-watcher-bridge', log);
  const bridge = await startBridge(config, config.temporal.address, log, undefined, { tracing: traced?.tracing });
  pieces.push(bridge);
  if (traced) pieces.push(traced);
  if (bridge.generatedToken) process.stdout.write(`admin token: ${bridge.generatedToken} (shown once)\n`);
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
