/**
 * What `npm run worker` runs (src/worker.ts loads it once its signal handlers are in place): the Temporal worker alone,
 * for deployments that run workers and bridges apart. Needs a cluster: TEMPORAL_ADDRESS or a Temporal profile (README,
 * "Connecting to your Temporal").
 */
import { ConfigError, loadConfig } from '../config.js';
import type { Lifecycle } from '../lifecycle.js';
import { createLogger } from '../logger.js';
import { installTelemetry } from '../observability/telemetry.js';
import { logConnectionSettings, startTracingIfConfigured, startWorker } from '../runtime.js';

export async function startWorkerProcess(lifecycle: Lifecycle): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  lifecycle.useLogger(log);
  const address = config.temporal.address;
  if (!address) {
    throw new ConfigError(
      'TEMPORAL_ADDRESS: required by `npm run worker`, or a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); `npm start` runs the embedded server',
    );
  }
  logConnectionSettings(config, log);
  const telemetry = installTelemetry({ metricsPort: config.workerMetrics.port, metricsRequired: config.workerMetrics.required, log });
  const traced = startTracingIfConfigured(config, 'expectations-watcher-worker', log);
  if (traced) lifecycle.add(traced);
  await lifecycle.start(() => startWorker(config, address, log, { tracing: traced?.tracing }));
  if (telemetry.metricsUrl) log.info({ url: telemetry.metricsUrl }, 'worker metrics (Prometheus)');
}
