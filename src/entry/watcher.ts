/**
 * The worker and the bridge in one process, loaded once the signal handlers are in place: by src/main.ts, on the
 * cluster of TEMPORAL_ADDRESS or a Temporal profile, and by `npm start` (dev/start.ts), which hands in the embedded
 * Temporal dev server (SQLite under WATCHER_DATA_DIR, UI on 8233) for when neither names a cluster; prints where each is.
 */
import { mkdirSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../config.js';
import type { Lifecycle, Running } from '../lifecycle.js';
import { createLogger, type Logger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { installTelemetry } from '../observability/telemetry.js';
import {
  logConnectionSettings,
  preparePrincipals,
  startBridge,
  startTracingIfConfigured,
  startWorker,
  usesEmbeddedTemporal,
} from '../runtime.js';

/** Starts a Temporal server of this process's own, for when the configuration names none (dev/temporal/embedded.ts). */
export type StartEmbeddedTemporal = (
  config: Config,
  log: Logger,
) => Promise<Running & { address: string; uiUrl?: string }>;

/**
 * Starts the worker, then the bridge, on the configured cluster, or with `startEmbedded` on the server it starts
 * first; without either, a ConfigError naming both ways to give a cluster.
 */
export async function startWatcher(lifecycle: Lifecycle, startEmbedded?: StartEmbeddedTemporal): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  lifecycle.useLogger(log);
  if (!config.temporal.address && !startEmbedded) {
    throw new ConfigError(
      'TEMPORAL_ADDRESS: required by src/main.ts, or a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); `npm start` runs the embedded server',
    );
  }
  // First: the embedded server and the worker both run on the Temporal runtime this installs.
  const telemetry = installTelemetry({
    metricsPort: config.workerMetrics.port,
    metricsRequired: config.workerMetrics.required,
    metricsHost: config.listenHost,
    log,
  });
  mkdirSync(config.dataDir, { recursive: true });
  const traced = startTracingIfConfigured(config, 'expectations-watcher', log);
  if (traced) lifecycle.add(traced);

  let address = config.temporal.address;
  let uiUrl = config.temporal.uiUrl;
  const embedded = usesEmbeddedTemporal(config);
  if (!embedded) logConnectionSettings(config, log);
  if (!address) {
    // There is one: checked before anything started.
    const server = await lifecycle.start(() => startEmbedded!(config, log));
    address = server.address;
    uiUrl ??= server.uiUrl;
  }
  // One file for both: the bridge authenticates by it, the worker finds the agents' cards and credentials in it.
  const principals = await preparePrincipals(config);
  const shared = { ...config, principalsFile: principals.file };
  // One registry for both, so the bridge's /metrics also counts the lapses this process delivers.
  const metrics = createMetrics({ defaultMetrics: true });
  const worker = await lifecycle.start(() => startWorker(shared, address, log, { metrics, tracing: traced?.tracing }));
  // The bridge's /readyz fails once this worker is no longer running: nothing else would run what it accepts.
  const bridge = await lifecycle.start(() =>
    startBridge(shared, address, log, uiUrl, { metrics, tracing: traced?.tracing, worker }),
  );

  const lines = [
    '',
    'expectations-watcher is running',
    `  bridge:      ${bridge.url}  (GET /readyz, POST /a2a/events, GET /v1/expectations)`,
    `  Temporal:    ${address}${embedded ? ' (embedded dev server)' : ''}  (namespace ${config.temporal.namespace})`,
    uiUrl ? `  Temporal UI: ${uiUrl}/namespaces/${config.temporal.namespace}/workflows` : undefined,
    `  metrics:     ${bridge.url}/metrics${telemetry.metricsUrl ? `, ${telemetry.metricsUrl} (Temporal SDK worker metrics)` : ''}`,
    `  A2A agent:   ${bridge.url}/.well-known/agent-card.json`,
    `  data:        ${config.dataDir}`,
    principals.generatedToken
      ? `  admin token: ${principals.generatedToken}  (shown once; its sha256 is in ${principals.file})`
      : undefined,
    'Ctrl-C stops everything.',
    '',
  ].filter((line) => line !== undefined);
  process.stdout.write(`${lines.join('\n')}\n`);
}
