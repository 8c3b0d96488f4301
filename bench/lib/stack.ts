/**
 * The in-process stack of scenarios 1–3: the bridge (`createApp` on a loopback port), the watcher's worker
 * (`createWatcherWorker`), a real @a2a-js/sdk agent, and the raw baseline's worker on a task queue of its own, all
 * on one Temporal server. Both workers share the process's heap and get the same workflow cache: the watcher's default
 * for that heap (src/config.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { agentDirectory, createPrincipalStore, tokenSha256 } from '../../src/auth/principals.js';
import { defaultMaxCachedWorkflows, heapLimitMiB } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createWatcherWorker, type WatcherWorker } from '../../src/temporal/worker.js';
import { startTestAgent, type TestAgent } from '../../test/support/agent.js';
import { close, listen, urlOf } from '../../test/support/net.js';
import { loopbackFetch } from '../../test/support/outbound.js';
import { createBaselineActivities } from '../baseline/activities.js';
import { runPrefix } from './payloads.js';
import { progress } from './progress.js';
import type { BenchServer } from './server.js';
import { drainedAt } from './backlog.js';
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
  /** The heap limit and workflow cache of both workers (one process, one heap, one cache bound). */
  workerBounds: WorkerBounds;
  /** Notes raises of expectations waiting on `factKeys`, for `waitSettled`: their routers must run. */
  expectRaised(factKeys: readonly string[]): void;
  /**
   * Resolves once every router the raises so far named runs (visibility counts) and the watcher's queue has no task
   * backlog: every raise's first workflow task has been taken up.
   */
  waitSettled(timeoutMs?: number): Promise<void>;
  /**
   * Another bridge on the same client, principals and watcher queue, with other settings (e.g. a short fact
   * retention, so that a lifecycle closes within a run); it closes with the stack. Resolves to its URL.
   */
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
  const principals = createPrincipalStore({
    principals: [
      {
        id: 'bench-agent',
        tokenSha256: tokenSha256(tokens.agent),
        roles: ['agent'],
        agent: { cardUrl: agent.cardUrl },
      },
      // A feed that may read: its facts' answers (wait=true) list the expectations they satisfied.
      { id: 'bench-feed', tokenSha256: tokenSha256(tokens.feed), roles: ['reporter', 'reader'] },
    ],
  });

  // As src/runtime.ts sizes the deployed worker's cache, and the same for the raw worker beside it.
  const maxCachedWorkflows = defaultMaxCachedWorkflows(heapLimitMiB());
  const workerBounds: WorkerBounds = { maxCachedWorkflows, heapLimitMiB: Math.round(heapLimitMiB()) };
  const watcher: WatcherWorker = await createWatcherWorker({
    address: server.address,
    namespace: server.namespace,
    taskQueue: watcherQueue,
    workflowBundlePath: bundles.watcher,
    connectionOptions: server.connectionOptions,
    // The bridge's principals, as a worker in the bridge's process would read them from the same file.
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
  const bridgeConnection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  const bridgeClient = new Client({ connection: bridgeConnection, namespace: server.namespace });
  const benchConnection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  const client = new Client({ connection: benchConnection, namespace: server.namespace });

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
  const http = await listen(bridgeOn(defaults));
  const bridgeUrl = urlOf(http);
  const others: Server[] = [];
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
      const other = await listen(bridgeOn({ ...defaults, ...settings }));
      others.push(other);
      return urlOf(other);
    },
    async close() {
      await Promise.all([http, ...others].map(close));
      await watcher.shutdown();
      await watcherRunning;
      baselineWorker.shutdown();
      await baselineRunning;
      await baselineConnection.close();
      await bridgeConnection.close();
      await benchConnection.close();
      await agent.close();
    },
  };
}
