/**
 * What `npm run cluster` runs (dev/cluster/main.ts loads it once its signal handlers are in place): the watcher on a
 * real Temporal cluster (server 1.31.2 on PostgreSQL, four services, the UI), with two workers and two bridges,
 * everything under WATCHER_DATA_DIR/cluster. Prints where each piece is; Ctrl-C stops them all in order.
 */
import path from 'node:path';
import { pino } from 'pino';
import { startCluster } from './cluster.js';
import { loadConfig } from '../../src/config.js';
import type { Lifecycle } from '../../src/lifecycle.js';
import { installTelemetry } from '../../src/observability/telemetry.js';

export async function startClusterProcess(lifecycle: Lifecycle): Promise<void> {
  const started = Date.now();
  const config = loadConfig();
  const dir = path.join(config.dataDir, 'cluster');
  const watcherLog = path.join(dir, 'logs', 'watcher.log');
  // The terminal shows the progress and the summary; the four watcher pieces' JSON lines go to their own file
  // (written synchronously: the process ends with process.exit, which would drop buffered lines).
  const log = pino(
    { name: 'expectations-watcher', level: config.logLevel },
    pino.destination({ dest: watcherLog, mkdir: true, sync: true }),
  );
  const telemetry = installTelemetry({
    metricsPort: config.workerMetrics.port,
    metricsRequired: config.workerMetrics.required,
    metricsHost: config.listenHost,
    log,
  });
  lifecycle.useLogger(log);
  const cluster = await lifecycle.start(() =>
    startCluster(config, log, {
      // The frontend and the UI where `npm start` puts the dev server's, so a second clone can move both with one variable.
      ports: { frontend: config.temporal.embeddedPort, ui: config.temporal.embeddedPort + 1000 },
    }),
  );
  const { temporal } = cluster;
  const lines = [
    '',
    `expectations-watcher is running on a Temporal cluster (started in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
    ...cluster.bridges.map(
      (bridge, i) => `  bridge ${i + 1}:    ${bridge.url}  (GET /readyz, POST /a2a/events, GET /v1/expectations)`,
    ),
    `  workers:     ${cluster.workers} on task queue ${config.temporal.taskQueue}${telemetry.metricsUrl ? ` (metrics ${telemetry.metricsUrl})` : ''}`,
    `  Temporal:    ${temporal.address}  (namespace ${temporal.namespace})`,
    ...Object.values(temporal.services).map(
      (service) => `    ${service.name.padEnd(17)} pid ${service.pid}  log ${service.logFile}`,
    ),
    `  Temporal UI: ${temporal.uiUrl}/namespaces/${temporal.namespace}/workflows`,
    `  PostgreSQL:  ${temporal.postgres.host}:${temporal.postgres.port}  user ${temporal.postgres.user}  data ${temporal.postgres.dataDir}`,
    `  logs:        ${temporal.logDir}  (watcher.log: workers and bridges)`,
    `  config:      ${temporal.configFile}`,
    cluster.generatedToken
      ? `  admin token: ${cluster.generatedToken}  (shown once; its sha256 is in ${cluster.principalsFile})`
      : `  principals:  ${cluster.principalsFile}`,
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
