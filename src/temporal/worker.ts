/**
 * Builds the watcher's Temporal worker: our workflows, our activities, registered search attributes.
 */
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { AgentDirectory } from '../../activities/deliver-lapse.js';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { createCardResolver, DEFAULT_CARD_CACHE_SECONDS } from '../../activities/agent-card/card.js';
import { forwardFacts } from '../../activities/client-calls.js';
import type { ForwardFactsInput } from '../../workflows/activity-types.js';
import type { OutboundRules } from '../../activities/outbound/address-policy.js';
import { createGuardedFetch } from '../../activities/outbound/guarded-fetch.js';
import type { WatcherMetrics } from '../metrics.js';
import { activityObservability } from '../observability/activity-interceptor.js';
import { statisticsSinks } from '../observability/statistics-sink.js';
import type { ConnectionExtras } from './connection.js';
import { FACT_ROUTER_SHARDS } from '../../core/fact-shards.js';
import { routerTaskQueue } from '../../core/ids.js';
import { registerSearchAttributes, type SearchAttributesOutcome } from './search-attributes.js';
import { workflowsPath } from './workflows-path.js';
import { DEFAULT_ROUTER_TASKS_PER_SECOND, pacedRouterSlots, ROUTER_FORWARDS_AT_ONCE } from './router-pacing.js';

export { workflowsPath };

export interface WatcherWorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  /** A prebuilt bundle (tests build one per run); unset bundles `workflowsPath`. */
  workflowBundlePath?: string;
  /** For cards and lapse delivery alike; default the guarded fetch of `outbound` (activities/outbound/guarded-fetch.ts). */
  fetch?: ActivityDeps['fetch'];
  /**
   * WATCHER_OUTBOUND_ALLOW / _DENY: where an agent's card may send the worker. Default no allow list: loopback, link-local
   * and private addresses are denied, so an agent cannot aim its lapses at the worker's own network.
   */
  outbound?: OutboundRules;
  /**
   * Where lapses go: each agent's card URL and credential, looked up by principal id when a lapse is delivered
   * (in production the principals file, `agentDirectory(loadReloadingPrincipals(file))`). Required: a worker
   * without it could deliver no lapse of an expectation raised by principal id.
   */
  agents: AgentDirectory;
  /** How long an agent's card is reused between lapse deliveries (WATCHER_CARD_CACHE_SECONDS, as the bridge's). */
  cardCacheSeconds?: number;
  /** The card cache's clock, in milliseconds since the epoch (tests hand in a fake one). */
  now?: () => number;
  /** Client and native connection options: TLS, API key, gRPC metadata. */
  connectionOptions?: ConnectionExtras;
  /**
   * The payload codecs of both the worker and its activities' client (the encryption codec when
   * WATCHER_CODEC_KEYS_FILE is set): what the workflows write is sealed as the bridge's client seals it.
   */
  dataConverter?: DataConverter;
  workerOptions?: Partial<WorkerOptions>;
  /** Router tasks the routers' worker begins a second, at most (router-pacing.ts). */
  routerTasksPerSecond?: number;
  /** Also count lapses on these (the bridge's registry, when worker and bridge share a process). */
  metrics?: WatcherMetrics;
}

export interface WatcherWorker {
  worker: Worker;
  client: Client;
  /** What the worker found or did about the search attributes at boot (for the log). */
  searchAttributes: SearchAttributesOutcome;
  /** Runs until shutdown; resolves when the worker has drained. */
  run(): Promise<void>;
  /** Graceful shutdown and closing of both connections. */
  shutdown(): Promise<void>;
}

/**
 * Connects, checks the search attributes and registers the missing ones (a SearchAttributesError when they are
 * missing and may not be registered), and creates (but does not run) the worker.
 */
export async function createWatcherWorker(options: WatcherWorkerOptions): Promise<WatcherWorker> {
  const connection = await Connection.connect({ address: options.address, ...options.connectionOptions });
  let searchAttributes: SearchAttributesOutcome;
  try {
    searchAttributes = await registerSearchAttributes(connection, options.namespace);
  } catch (error) {
    await connection.close();
    throw error;
  }
  const dataConverter = options.dataConverter ? { dataConverter: options.dataConverter } : {};
  const client = new Client({ connection, namespace: options.namespace, ...dataConverter });
  const nativeConnection = await NativeConnection.connect({ address: options.address, ...options.connectionOptions });
  // One fetch for the card and for the SDK's transport, so both go through the outbound policy.
  const fetch = options.fetch ?? createGuardedFetch({ rules: options.outbound });
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...dataConverter,
    ...(options.workflowBundlePath ? { workflowBundle: { codePath: options.workflowBundlePath } } : { workflowsPath }),
    activities: createActivities({
      client,
      fetch,
      agents: options.agents,
      cards: createCardResolver({
        fetch,
        cacheSeconds: options.cardCacheSeconds ?? DEFAULT_CARD_CACHE_SECONDS,
        now: options.now,
      }),
    }),
    // expectationId on every activity log line; lapse counters on the worker's metrics.
    interceptors: { activity: [activityObservability({ metrics: options.metrics })] },
    ...options.workerOptions,
    // How each expectation ended, as metrics; beside the sinks the caller gives (a tracing bundle's).
    sinks: { ...options.workerOptions?.sinks, ...statisticsSinks({ metrics: options.metrics }) },
  });
  const routerWorker = await createRouterWorker(options, nativeConnection, client, dataConverter);
  let running: Promise<void> | undefined;
  const closeConnections = async () => {
    await nativeConnection.close();
    await connection.close();
  };
  const stop = (w: Worker) => {
    if (w.getState() === 'RUNNING') w.shutdown();
  };
  return {
    worker,
    client,
    searchAttributes,
    run() {
      running ??= Promise.all([
        worker.run().finally(() => stop(routerWorker)),
        routerWorker.run().finally(() => stop(worker)),
      ])
        .then(() => undefined)
        .finally(closeConnections);
      return running;
    },
    async shutdown() {
      stop(worker);
      stop(routerWorker);
      if (running) await running;
      else await closeConnections();
    },
  };
}

/**
 * The routers' worker, on their own queue (core/ids.ts routerTaskQueue) with a cache of their own, so that the 64
 * routers stay hot, and paced (router-pacing.ts), so that under a busy feed each router task takes every fact
 * signalled since its last instead of one task per fact. Its one activity is the forwards' local activity.
 */
function createRouterWorker(
  options: WatcherWorkerOptions,
  connection: NativeConnection,
  client: Client,
  dataConverter: { dataConverter?: DataConverter },
): Promise<Worker> {
  return Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: routerTaskQueue(options.taskQueue),
    ...dataConverter,
    ...(options.workflowBundlePath ? { workflowBundle: { codePath: options.workflowBundlePath } } : { workflowsPath }),
    ...options.workerOptions,
    maxCachedWorkflows: FACT_ROUTER_SHARDS + 8,
    maxConcurrentWorkflowTaskPolls: 8,
    nonStickyToStickyPollRatio: 0.5,
    activities: { forwardFacts: (input: ForwardFactsInput) => forwardFacts(client, input) },
    enableNonLocalActivities: false,
    tuner: {
      workflowTaskSlotSupplier: pacedRouterSlots(options.routerTasksPerSecond ?? DEFAULT_ROUTER_TASKS_PER_SECOND),
      activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      // Forwards of up to ROUTER_FORWARDS_AT_ONCE routers at once, each FORWARD_CONCURRENCY signals at a time.
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: ROUTER_FORWARDS_AT_ONCE },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
    },
    sinks: { ...options.workerOptions?.sinks, ...statisticsSinks({ metrics: options.metrics }) },
  });
}
