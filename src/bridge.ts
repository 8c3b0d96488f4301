/**
 * `npm run bridge`: the HTTP bridge alone, for deployments that run workers and bridges apart.
 * Needs TEMPORAL_ADDRESS (an existing cluster).
 */
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startBridge, startTracingIfConfigured, stopOnSignals, type Running } from './runtime.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  if (!config.temporal.address) throw new ConfigError('TEMPORAL_ADDRESS: required by `npm run bridge` (use `npm start` for the embedded server)');
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
