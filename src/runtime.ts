/**
 * The pieces every entry point composes: the worker, the bridge (the embedded dev server `npm start` adds is dev/'s,
 * dev/temporal/embedded.ts). Each start returns a `stop` that ends it cleanly; nothing here keeps state a restart
 * would lose (Temporal holds it).
 */
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import express from 'express';
import { ConfigError, heapLimitMiB, loadConfig, type Config } from './config.js';
import { loadCodecKeys } from './temporal/codec-keys.js';
import { connectionOptions, connectionSummary, connectClient, isReachable } from './temporal/connection.js';
import { EncryptionCodec } from './temporal/encryption-codec.js';
import { createWatcherWorker } from './temporal/worker.js';
import { ownWorkerReadiness, type WorkerReadiness } from './temporal/worker-readiness.js';
import { describeRules } from '../activities/outbound/address-policy.js';
import { discardedWorkflowSpans, tracingBundleOf } from './temporal/workflow-bundle.js';
import { createApp } from './http/app.js';
import { agentDirectory, ensurePrincipalsFile, loadReloadingPrincipals } from './auth/principals.js';
import { createLogger, type Logger } from './logger.js';
import { createMetrics, type WatcherMetrics } from './metrics.js';
import type { Lifecycle, Running } from './lifecycle.js';
import { requestLog } from './web/request-log.js';
import { startTracing, type Tracing } from './observability/tracing.js';

export type { Running } from './lifecycle.js';

/**
 * Whether `npm start` runs the embedded dev server: only when neither TEMPORAL_ADDRESS nor a profile of the Temporal
 * config file (the one TEMPORAL_PROFILE names, or `default`) gives a cluster, so a team's profile is never silently
 * replaced by a local server.
 */
export function usesEmbeddedTemporal(config: Config): boolean {
  return config.temporal.address === undefined;
}

/** Logs (info) where the Temporal connection settings came from and what they are, never the API key or a TLS key. */
export function logConnectionSettings(config: Config, log: Logger): void {
  const summary = connectionSummary(config.temporal);
  log.info(summary, `Temporal connection settings from ${String(summary.settingsFrom)}`);
}

/**
 * The start of `npm run bridge` and `npm run worker`, which need a cluster: the configuration, the logger (handed to
 * the lifecycle, so that a failure later is logged by it), the address (a ConfigError naming both ways to give one
 * when there is none), and where the connection settings came from.
 */
export function prepareClusterProcess(
  lifecycle: Lifecycle,
  command: string,
): { config: Config; log: Logger; address: string } {
  const config = loadConfig();
  const log = createLogger(config.logLevel, undefined, config.logFormat);
  lifecycle.useLogger(log);
  const address = config.temporal.address;
  if (!address) {
    throw new ConfigError(
      `TEMPORAL_ADDRESS: required by \`${command}\`, or a Temporal profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); \`npm start\` runs the embedded server`,
    );
  }
  logConnectionSettings(config, log);
  return { config, log, address };
}

/** How often the bridge and the worker look for a changed principals file (rotated tokens, moved cards). */
const PRINCIPALS_RELOAD_MS = 5_000;

/**
 * The principals file: WATCHER_PRINCIPALS_FILE, or the embedded default under the data directory, written with a
 * fresh admin token the first time (returned once, to be printed).
 */
export async function preparePrincipals(config: Config): Promise<{ file: string; generatedToken?: string }> {
  if (config.principalsFile) return { file: config.principalsFile };
  return ensurePrincipalsFile(config.dataDir);
}

/** The principals of a file, reloaded when it changes; a broken change is logged and the last good one kept. */
const followPrincipals = (file: string, log: Logger) =>
  loadReloadingPrincipals(file, {
    onError: (error) =>
      log.error({ err: error }, 'the principals file changed but cannot be read; keeping the last good one'),
    onReload: () => log.info({ file }, 'principals file reloaded'),
  });

/** The file the worker reads agents' card URLs and credentials from when it delivers a lapse. */
function workerPrincipalsFile(config: Config): string {
  if (config.principalsFile) return config.principalsFile;
  const file = path.join(config.dataDir, 'principals.json');
  if (!existsSync(file)) {
    throw new ConfigError(
      `WATCHER_PRINCIPALS_FILE: the worker reads each agent's cardUrl and authorization from it when it delivers a lapse; none is set and ${file} does not exist`,
    );
  }
  return file;
}

/**
 * The bundle the worker loads: WATCHER_WORKFLOW_BUNDLE, or with tracing on the tracing bundle `npm run bundle` wrote
 * beside it. A missing one is refused before the worker connects.
 */
function workflowBundleOf(config: Config, tracing: boolean): string | undefined {
  if (!config.workflowBundle) return undefined;
  const file = tracing ? tracingBundleOf(config.workflowBundle) : config.workflowBundle;
  if (existsSync(file)) return file;
  throw new ConfigError(
    tracing
      ? `WATCHER_WORKFLOW_BUNDLE: with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT) the worker loads ${file}, the tracing bundle that npm run bundle writes beside ${config.workflowBundle}; it does not exist`
      : `WATCHER_WORKFLOW_BUNDLE: ${file} does not exist (npm run bundle writes it)`,
  );
}

/**
 * The payload codec of WATCHER_CODEC_KEYS_FILE (a ConfigError for a missing or bad file, before anything connects),
 * logged with the key id it encrypts with; undefined, and payloads written as they are, without the variable.
 */
function payloadCodecOf(config: Config, log: Logger): EncryptionCodec | undefined {
  if (!config.codec) return undefined;
  const keys = loadCodecKeys(config.codec.keysFile);
  log.info(
    { keysFile: config.codec.keysFile, encryptWith: keys.current, keyIds: [...keys.keys.keys()] },
    'payloads are encrypted',
  );
  return new EncryptionCodec(keys);
}

/**
 * Runs the worker until stopped. A worker that dies unexpectedly ends the process with an error. `metrics`: the
 * bridge's registry when the bridge runs in the same process, so its `/metrics` counts lapses too.
 */
export async function startWorker(
  config: Config,
  address: string,
  log: Logger,
  options: { metrics?: WatcherMetrics; tracing?: Tracing } = {},
): Promise<RunningWorker> {
  const bundle = workflowBundleOf(config, options.tracing !== undefined);
  log.info(
    { taskQueue: config.temporal.taskQueue, workflowBundle: bundle ?? 'bundled at start' },
    'starting the worker',
  );
  const codec = payloadCodecOf(config, log);
  const principals = await followPrincipals(workerPrincipalsFile(config), log);
  const watcher = await createWatcherWorker({
    address,
    agents: agentDirectory(principals),
    outbound: config.outbound,
    cardCacheSeconds: config.cardCacheSeconds,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    workflowBundlePath: bundle,
    connectionOptions: connectionOptions(config.temporal),
    ...(codec ? { dataConverter: { payloadCodecs: [codec] } } : {}),
    metrics: options.metrics,
    routerTasksPerSecond: config.routerTasksPerSecond,
    workerOptions: {
      maxCachedWorkflows: config.maxCachedWorkflows,
      // For a tracing bundle loaded without tracing: its interceptors' spans go nowhere (with tracing the plugin's sink wins).
      ...(bundle ? { sinks: discardedWorkflowSpans } : {}),
      ...(options.tracing ? { plugins: [options.tracing.plugin] } : {}),
    },
  });
  const found = watcher.searchAttributes;
  if (found.result === 'unchecked') log.warn({ namespace: config.temporal.namespace }, found.warning);
  else if (found.result === 'registered')
    log.info({ namespace: config.temporal.namespace, added: found.added }, 'search attributes registered');
  else log.info({ namespace: config.temporal.namespace }, 'search attributes present');
  let stopping = false;
  let failure: unknown;
  const running = watcher.run();
  running.then(
    () => {
      // E.g. the Temporal runtime's own SIGUSR2/SIGQUIT handler drained it: a bridge beside it is not ready any more.
      if (!stopping) log.warn({ state: watcher.worker.getState() }, 'the worker stopped');
    },
    (error: unknown) => {
      failure = error;
      log.fatal({ err: error }, 'the worker stopped unexpectedly');
      process.exitCode = 1;
    },
  );
  log.info({ policy: describeRules(config.outbound) }, 'outbound address policy for cards and lapse deliveries');
  log.info(
    {
      taskQueue: config.temporal.taskQueue,
      namespace: config.temporal.namespace,
      workflowBundle: bundle ?? 'bundled at start',
      // What sizes the worker's memory (docs/operations.md, "A worker's memory").
      maxCachedWorkflows: config.maxCachedWorkflows,
      heapLimitMiB: Math.round(heapLimitMiB()),
    },
    'worker running',
  );
  return {
    readiness: () =>
      ownWorkerReadiness(
        config.temporal.taskQueue,
        () => watcher.worker.getState(),
        () => failure,
      ),
    stop: () => {
      stopping = true;
      return watcher.shutdown().finally(() => principals.close());
    },
  };
}

/** A worker of this process, and whether it still runs (for `/readyz` of a bridge beside it). */
export interface RunningWorker extends Running {
  readiness(): WorkerReadiness;
}

/** Serves the bridge on `config.port`, with a JSON request log. */
export async function startBridge(
  config: Config,
  address: string,
  log: Logger,
  uiUrl = config.temporal.uiUrl,
  options: { metrics?: WatcherMetrics; tracing?: Tracing; worker?: RunningWorker } = {},
): Promise<Running & { url: string; generatedToken?: string }> {
  const codec = payloadCodecOf(config, log);
  const client = await connectClient(address, config.temporal, {
    ...(options.tracing ? { plugins: [options.tracing.plugin] } : {}),
    ...(codec ? { dataConverter: { payloadCodecs: [codec] } } : {}),
  });
  const generated = await preparePrincipals(config);
  const principals = await followPrincipals(generated.file, log);
  principals.watch(PRINCIPALS_RELOAD_MS);
  const app = createApp({
    client,
    taskQueue: config.temporal.taskQueue,
    namespace: config.temporal.namespace,
    principals,
    settings: {
      factRetention: config.factRetention,
      lateWindow: config.lateWindow,
      maxLineage: config.maxLineage,
      maxClockSkew: config.maxClockSkew,
      cardCacheSeconds: config.cardCacheSeconds,
      quotas: config.quotas,
      temporalWaitMs: config.temporalWaitMs,
      factWaitMs: config.factWaitMs,
      maxRequestsInFlight: config.maxRequestsInFlight,
      pageTokenSecret: config.pageTokenSecret,
    },
    temporalUiUrl: uiUrl,
    logger: log,
    metrics: options.metrics ?? createMetrics({ defaultMetrics: true }),
    isTemporalReachable: () => isReachable(client),
    // The worker beside it, when there is one (`npm start`); otherwise Temporal says who polls (DescribeTaskQueue).
    ...(options.worker ? { workerReadiness: async () => options.worker!.readiness() } : {}),
    outbound: config.outbound,
    trustProxy: config.trustProxy,
    ...(codec ? { codec: { codec, corsOrigins: config.codec?.corsOrigins ?? [] } } : {}),
  });
  const served = express();
  served.disable('x-powered-by');
  served.use(requestLog(log.child({ component: 'bridge' })));
  served.use(app);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = config.listenHost
      ? served.listen(config.port, config.listenHost, () => resolve(s))
      : served.listen(config.port, () => resolve(s));
    s.once('error', reject);
  });
  const url = `http://localhost:${config.port}`;
  log.info({ url }, 'bridge listening');
  return {
    url,
    generatedToken: generated.generatedToken,
    async stop() {
      principals.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await client.connection.close();
    },
  };
}

/**
 * OpenTelemetry tracing when the configuration asks for it (OTEL_EXPORTER_OTLP_ENDPOINT), as a piece to stop last
 * (its stop flushes the spans); undefined otherwise.
 */
export function startTracingIfConfigured(
  config: Config,
  defaultServiceName: string,
  log: Logger,
): (Running & { tracing: Tracing }) | undefined {
  if (!config.tracing) return undefined;
  const serviceName = config.tracing.serviceName ?? defaultServiceName;
  const tracing = startTracing({ endpoint: config.tracing.endpoint, serviceName });
  log.info({ endpoint: config.tracing.endpoint, serviceName }, 'OpenTelemetry tracing on');
  return { tracing, stop: () => tracing.shutdown() };
}
