/**
 * What scenarios 4 and 7 share to run the watcher as deployed, a `src/worker.ts` and a `src/bridge.ts` process on a
 * server, beside the raw baseline's worker: their environment, the wait for every raise's routers, and the bounds each
 * worker reports.
 */
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { FACT_ROUTER_SHARDS } from '../../core/fact-shards.js';
import { factRouterWorkflowId, routerTaskQueue } from '../../core/ids.js';
import { freePort } from '../../test/support/net.js';
import { spawnEntry, type Child, type Stoppable } from './child.js';
import { progress, waitUntil } from './progress.js';
import type { BenchServer } from './server.js';

/** docker-compose.yml's worker runs with this (docs/operations.md, "A worker's memory"); so does the raw worker. */
export const DEPLOYED_WORKER_NODE_OPTIONS = '--max-old-space-size=384 --max-semi-space-size=2';

/** What bounds a worker's memory: its heap limit and its workflow cache, as the process reported them at its start. */
export interface WorkerBounds {
  maxCachedWorkflows: number;
  heapLimitMiB: number;
}

/** The routers raising expectations waiting on `factKeys` signals-with-start on `queue` (core/ids.ts), by workflow id. */
export function routersOf(factKeys: Iterable<string>, queue: string): Set<string> {
  return new Set([...factKeys].map((factKey) => factRouterWorkflowId(factKey, queue)));
}

/**
 * Resolves once `queue` runs at least `expected` fact routers (visibility counts, at most FACT_ROUTER_SHARDS): the
 * long-lived routers the raises so far named have started.
 */
export async function waitRoutersStarted(
  client: Client,
  queue: string,
  expected: number,
  options: { label: string; timeoutMs: number; intervalMs?: number },
): Promise<void> {
  const want = Math.min(expected, FACT_ROUTER_SHARDS);
  const query = `WorkflowType = 'factRouterWorkflow' AND TaskQueue = '${routerTaskQueue(queue)}' AND ExecutionStatus = 'Running'`;
  let running = 0;
  await waitUntil(
    "the raises' routers to start",
    async () => (running = (await client.workflow.count(query)).count) >= want,
    {
      timeoutMs: options.timeoutMs,
      intervalMs: options.intervalMs ?? 1_000,
      onTick: () => progress(`  ${options.label}: routers running ${running}/${want}`),
    },
  );
}

/**
 * The watcher as deployed on `server`, polling `queue`: a `src/worker.ts` loading the prebuilt `bundle` with compose's
 * heap bound, then a `src/bridge.ts`, both reading `principalsFile`, their logs under `dir`; pushed to `children` as
 * each starts, for the caller to stop. The agents are on loopback, and the per-principal quotas are off: they would
 * refuse the benchmark's own load with 429.
 */
export async function startWatcherProcesses(
  server: BenchServer,
  options: { queue: string; dir: string; bundle: string; principalsFile: string; env?: Record<string, string> },
  children: Stoppable[],
): Promise<{ worker: Child; bridge: Child; bridgeUrl: string; bounds: WorkerBounds }> {
  const { queue, dir } = options;
  const env = {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    TEMPORAL_TASK_QUEUE: queue,
    WATCHER_LOG_LEVEL: 'info',
    WATCHER_DATA_DIR: dir,
    WATCHER_OUTBOUND_ALLOW: 'loopback',
    WATCHER_QUOTA_OPEN_EXPECTATIONS: '0',
    WATCHER_QUOTA_RAISES_PER_MINUTE: '0',
    WATCHER_QUOTA_FACTS_PER_MINUTE: '0',
    WATCHER_PRINCIPALS_FILE: options.principalsFile,
    ...options.env,
  };
  const workerEnv = { ...env, WATCHER_WORKFLOW_BUNDLE: options.bundle, NODE_OPTIONS: DEPLOYED_WORKER_NODE_OPTIONS };
  const worker = spawnEntry('src/worker.ts', [], workerEnv, path.join(dir, 'worker.log'));
  children.push(worker);
  await worker.waitFor(/worker running/);
  const port = await freePort();
  const bridge = spawnEntry('src/bridge.ts', [], { ...env, PORT: String(port) }, path.join(dir, 'bridge.log'));
  children.push(bridge);
  await bridge.waitFor(/bridge listening/);
  const bounds = reportedBounds(worker.output(), /worker running/);
  return { worker, bridge, bridgeUrl: `http://127.0.0.1:${port}`, bounds };
}

/** The bounds a worker process reported on the line matching `running` (JSON or pretty). */
function reportedBounds(output: string, running: RegExp): WorkerBounds {
  const line = output.split('\n').find((text) => running.test(text)) ?? '';
  const field = (name: string) => Number(new RegExp(`"?${name}"?\\s*[:=]\\s*(\\d+)`).exec(line)?.[1] ?? Number.NaN);
  const bounds = { maxCachedWorkflows: field('maxCachedWorkflows'), heapLimitMiB: field('heapLimitMiB') };
  if (Number.isNaN(bounds.maxCachedWorkflows) || Number.isNaN(bounds.heapLimitMiB))
    throw new Error(`no cache bound and heap limit on the worker's start line: ${line || '(no such line)'}`);
  return bounds;
}

/**
 * The raw baseline's worker as a process of its own on `queue`, with compose's heap bound and `maxCachedWorkflows`
 * (absent: the watcher's default rule for that heap); with a `firedFile`, each timer's activity appends `<id> <ms>` to
 * it. Pushed to `children` for the caller to stop; resolves once it runs, with the bounds it reported.
 */
export async function startBaselineWorker(
  server: BenchServer,
  options: { queue: string; bundle: string; dir: string; firedFile?: string; maxCachedWorkflows?: number },
  children: Stoppable[],
): Promise<{ worker: Child; bounds: WorkerBounds }> {
  const args = [server.address, server.namespace, options.queue, options.bundle];
  if (options.firedFile) args.push(options.firedFile);
  if (options.maxCachedWorkflows !== undefined) args.push(`--max-cached-workflows=${options.maxCachedWorkflows}`);
  const env = { NODE_OPTIONS: DEPLOYED_WORKER_NODE_OPTIONS };
  const worker = spawnEntry('bench/baseline/worker.ts', args, env, path.join(options.dir, 'raw-worker.log'));
  children.push(worker);
  await worker.waitFor(/baseline worker running/);
  return { worker, bounds: reportedBounds(worker.output(), /baseline worker running/) };
}
