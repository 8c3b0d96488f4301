/**
 * What `npm run worker` runs (src/worker.ts loads it once its signal handlers are in place): the Temporal worker alone,
 * for deployments that run workers and bridges apart. Needs a cluster: TEMPORAL_ADDRESS or a Temporal profile (README,
 * "Connecting to your Temporal").
 */
import type { Lifecycle } from '../lifecycle.js';
import { installTelemetry } from '../observability/telemetry.js';
import { prepareClusterProcess, startTracingIfConfigured, startWorker } from '../runtime.js';

export async function startWorkerProcess(lifecycle: Lifecycle): Promise<void> {
  const { config, log, address } = prepareClusterProcess(lifecycle, 'npm run worker');
  const telemetry = installTelemetry({
    metricsPort: config.workerMetrics.port,
    metricsRequired: config.workerMetrics.required,
    metricsHost: config.listenHost,
    log,
  });
  const traced = startTracingIfConfigured(config, 'expectations-watcher-worker', log);
  if (traced) lifecycle.add(traced);
  await lifecycle.start(() => startWorker(config, address, log, { tracing: traced?.tracing }));
  if (telemetry.metricsUrl) log.info({ url: telemetry.metricsUrl }, 'worker metrics (Prometheus)');
}
