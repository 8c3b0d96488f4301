/**
 * The in-process stack of scenarios 1–3 and 5: the bridge (`createApp` on a loopback port), the watcher's worker, a
 * real @a2a-js/sdk agent, and the raw baseline's worker on a task queue of its own, all on one Temporal server. Both
 * workers share the process's heap and get the same workflow cache: the watcher's default for that heap.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { agentDirectory, createPrincipalStore } from '../../src/auth/principals.js';
import { defaultMaxCachedWorkflows, heapLimitMiB } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createWatcherWorker } from '../../src/temporal/worker.js';
import { startTestAgent, type TestAgent } from '../../test/support/agent.js';
import { principalsFileOf, type PrincipalSpec } from '../../test/support/agents.js';
import { close, listen, urlOf } from '../../test/support/net.js';
import { loopbackFetch } from '../../test/support/outbound.js';
import { createBaselineActivities } from '../baseline/activities.js';
import { drainedAt } from './backlog.js';
import { postJson } from './load.js';
import { artifactUpdate, batchOf, runPrefix } from './payloads.js';
import { progress } from './progress.js';
import { connect, type BenchServer } from './server.js';
import { routersOf, waitRoutersStarted, type WorkerBounds } from './watcher-processes.js';

export interface Stack {
  server: BenchServer;
  /** The benchmark's own client: raw starts, queries, visibility counts, histories. */
  client: Client;
  watcherQueue: string;
  baselineQueue: string;
  bridgeUrl: string;
  tokens: { agent: string; feed: string };
  agent: TestAgent;
  /** Baseline timer firings: workflow id → wall-clock ms. */
  firedAt: Map<string, number>;
  workerBounds: WorkerBounds;
  /** Raises `payloads.ts`'s `batchOf(prefix, batch, size, dueAt, grace)` through the bridge, as the agent. */
  raiseBatch(prefix: string, batch: number, size: number, dueAt: string, grace?: string): Promise<unknown>;
  /** Notes raises of expectations waiting on `factKeys`, for `waitSettled`: their routers must run. */
  expectRaised(factKeys: readonly string[]): void;
  /** Resolves once every router the raises so far named runs and the watcher's queue has no task backlog. */
  waitSettled(timeoutMs?: number): Promise<void>;
  /** Another bridge on the same client, principals and queue with other settings; resolves to its URL. */
  openBridge(settings: Partial<BridgeSettings>): Promise<string>;
  close(): Promise<void>;
}

type BridgeSettings = Parameters<typeof createApp>[0]['settings'];

/** Starts everything on `server`; the bundles are prebuilt files. */
export async function startStack(server: BenchServer, bundles: { watcher: string; baseline: string }): Promise<Stack> {
  const watcherQueue = `${runPrefix}-watcher`;
  const baselineQueue = `${runPrefix}-raw`;
  const agent = await startTestAgent();
  const tokens = { agent: `agent-${randomUUID()}`, feed: `feed-${randomUUID()}` };
  const specs: PrincipalSpec[] = [
    { id: 'bench-agent', roles: ['agent'], cardUrl: agent.cardUrl },
    // A feed that may read: its facts' answers (wait=true) list the expectations they satisfied.
    { id: 'bench-feed', roles: ['reporter', 'reader'] },
  ];
  const principals = createPrincipalStore(
    principalsFileOf(specs, { 'bench-agent': tokens.agent, 'bench-feed': tokens.feed }),
  );

  // As src/runtime.ts sizes the deployed worker's cache, and the same for the raw worker beside it.
  const maxCachedWorkflows = defaultMaxCachedWorkflows(heapLimitMiB());
  const workerBounds: WorkerBounds = { maxCachedWorkflows, heapLimitMiB: Math.round(heapLimitMiB()) };
  const watcher = await createWatcherWorker({
    address: server.address,
    namespace: server.namespace,
    taskQueue: watcherQueue,
    workflowBundlePath: bundles.watcher,
    connectionOptions: server.connectionOptions,
    agents: agentDirectory(principals),
    // The guarded fetch the watcher uses, with loopback allowed (WATCHER_OUTBOUND_ALLOW=loopback): the agent is local.
    fetch: loopbackFetch,
    workerOptions: { maxCachedWorkflows },
  });
  const watcherRunning = watcher.run();

  const firedAt = new Map<string, number>();
  const baselineConnection = await NativeConnection.connect({ address: server.address, ...server.connectionOptions });
  const baselineWorker = await Worker.create({
    connection: baselineConnection,
    namespace: server.namespace,
    taskQueue: baselineQueue,
    workflowBundle: { codePath: bundles.baseline },
    activities: createBaselineActivities(firedAt),
    maxCachedWorkflows,
  });
  const baselineRunning = baselineWorker.run();

  // The bridge and the benchmark each get their own connection, as separate deployments would.
  const bridgeClient = await connect(server);
  const client = await connect(server);
  // The defaults of src/config.ts.
  const defaults: BridgeSettings = { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 60 };
  const bridgeOn = (settings: BridgeSettings) =>
    createApp({
      client: bridgeClient,
      taskQueue: watcherQueue,
      namespace: server.namespace,
      principals,
      settings,
      fetch: loopbackFetch,
    });
  const bridges: Server[] = [await listen(bridgeOn(defaults))];
  const bridgeUrl = urlOf(bridges[0]!);
  progress(
    `stack: bridge ${bridgeUrl}, watcher queue ${watcherQueue}, raw queue ${baselineQueue}, agent ${agent.url}; both workers cache ${maxCachedWorkflows} workflows`,
  );
  const routers = new Set<string>();

  return {
    server,
    client,
    watcherQueue,
    baselineQueue,
    bridgeUrl,
    tokens,
    agent,
    firedAt,
    workerBounds,
    raiseBatch(prefix, batch, size, dueAt, grace) {
      const update = artifactUpdate(batchOf(prefix, batch, size, dueAt, grace), `${prefix}-task-${batch}`);
      return postJson(`${bridgeUrl}/a2a/events`, tokens.agent, update);
    },
    expectRaised(factKeys) {
      for (const router of routersOf(factKeys, watcherQueue)) routers.add(router);
    },
    async waitSettled(timeoutMs = 600_000) {
      const ends = Date.now() + timeoutMs;
      await waitRoutersStarted(client, watcherQueue, routers.size, { label: 'settling', timeoutMs, intervalMs: 500 });
      const drained = await drainedAt(client, server.namespace, watcherQueue, {
        timeoutMs: Math.max(ends - Date.now(), 1_000),
        label: 'settling',
      });
      if (drained.at === undefined) throw new Error(`settling: ${watcherQueue} kept a backlog of ${drained.backlog}`);
    },
    async openBridge(settings) {
      bridges.push(await listen(bridgeOn({ ...defaults, ...settings })));
      return urlOf(bridges.at(-1)!);
    },
    async close() {
      await Promise.all(bridges.map(close));
      await watcher.shutdown();
      await watcherRunning;
      baselineWorker.shutdown();
      await baselineRunning;
      await baselineConnection.close();
      await bridgeClient.connection.close();
      await client.connection.close();
      await agent.close();
    },
  };
}
