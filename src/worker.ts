/**
 * `npm run worker`: the Temporal worker alone, for deployments that run workers and bridges apart.
 * Needs a cluster: TEMPORAL_ADDRESS or a Temporal profile (README, "Connecting to your Temporal").
 */
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { installTelemetry } from './observability/telemetry.js';
import { logConnectionSettings, startTracingIfConfigured, startWorker, stopOnSignals, type Running } from './runtime.js';
import { SearchAttributesError } from './temporal/search-attributes.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  if (!config.temporal.address) throw new ConfigError(
    'TEMPORAL_ADDRESS: required by `npm run worker`, or a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); `npm start` runs the embedded server',
  );
  logConnectionSettings(config, log);
  const telemetry = installTelemetry({ metricsPort: config.workerMetrics.port, metricsRequired: config.workerMetrics.required, log });
  const pieces: Running[] = [];
  stopOnSignals(pieces, log);
  const traced = startTracingIfConfigured(config, 'expectations-watcher-worker', log);
  pieces.push(await startWorker(config, config.temporal.address, log, { tracing: traced?.tracing }));
  if (traced) pieces.push(traced);
  if (telemetry.metricsUrl) log.info({ url: telemetry.metricsUrl }, 'worker metrics (Prometheus)');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError || error instanceof SearchAttributesError ? error.message : error);
  process.exit(1);
});
