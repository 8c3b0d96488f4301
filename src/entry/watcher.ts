/**
 * What `npm start` runs (src/main.ts loads it once its signal handlers are in place): when neither TEMPORAL_ADDRESS
 * nor a Temporal profile names a cluster, the embedded Temporal dev server (SQLite under WATCHER_DATA_DIR, UI on 8233), then the worker, then the bridge; prints
 * where each is.
 */
import { mkdirSync } from 'node:fs';
import { loadConfig } from '../config.js';
import type { Lifecycle } from '../lifecycle.js';
import { createLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { installTelemetry } from '../observability/telemetry.js';
import {
  logConnectionSettings,
  preparePrincipals,
  startBridge,
  startEmbeddedTemporal,
  startTracingIfConfigured,
  startWorker,
  usesEmbeddedTemporal,
} from '../runtime.js';

export async function startWatcher(lifecycle: Lifecycle): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  lifecycle.useLogger(log);
  // First: the embedded server and the worker both run on the Temporal runtime this installs.
  const telemetry = installTelemetry({ metricsPort: config.workerMetrics.port, metricsRequired: config.workerMetrics.required, metricsHost: config.listenHost, log });
  mkdirSync(config.dataDir, { recursive: true });
  const traced = startTracingIfConfigured(config, 'expectations-watcher', log);
  if (traced) lifecycle.add(traced);

  let address = config.temporal.address;
  let uiUrl = config.temporal.uiUrl;
  const embedded = usesEmbeddedTemporal(config);
  if (!embedded) logConnectionSettings(config, log);
  if (!address) {
    const server = await lifecycle.start(() => startEmbeddedTemporal(config, log));
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
  const bridge = await lifecycle.start(() => startBridge(shared, address, log, uiUrl, { metrics, tracing: traced?.tracing, worker }));

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
