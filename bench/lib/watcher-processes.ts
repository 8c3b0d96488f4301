/**
 * What scenarios 4 and 6 share to run the watcher as deployed, a `src/worker.ts` and a `src/bridge.ts` process on a
 * server: their environment, the principals file of the bench's agent, the wait for every raise's routers, and the
 * raw baseline's worker beside them with the same heap limit and cache bound.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { FACT_ROUTER_SHARDS } from '../../core/fact-shards.js';
import { factRouterWorkflowId } from '../../core/ids.js';
import { tokenSha256 } from '../../src/auth/principals.js';
import { spawnEntry, type Child } from './child.js';
import { progress, waitUntil } from './progress.js';
import { freePort, type BenchServer } from './server.js';

/**
 * The environment of the watcher's processes on `server`, polling `queue`. The benchmark's agent runs on this machine
 * (loopback, which a worker on a cluster reaches only when allowed), and it measures the watcher, not a principal's
 * allowance: the per-principal quotas (600 raises a minute, 10,000 open by default) would refuse its own load with 429.
 */
export function watcherEnv(server: BenchServer, queue: string, dataDir: string): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace,
    TEMPORAL_TASK_QUEUE: queue,
    WATCHER_LOG_LEVEL: 'info',
    WATCHER_DATA_DIR: dataDir,
    WATCHER_OUTBOUND_ALLOW: 'loopback',
    WATCHER_QUOTA_OPEN_EXPECTATIONS: '0',
    WATCHER_QUOTA_RAISES_PER_MINUTE: '0',
    WATCHER_QUOTA_FACTS_PER_MINUTE: '0',
  };
}

/**
 * Writes the principals file of the bench's agent (`bench-agent`, card at `cardUrl`), which the worker reads too
 * when it delivers a lapse; returns the agent's bearer token.
 */
export function writeAgentPrincipals(file: string, cardUrl: string): string {
  const token = `agent-${randomUUID()}`;
  writeFileSync(
    file,
    JSON.stringify({
      principals: [{ id: 'bench-agent', tokenSha256: tokenSha256(token), roles: ['agent'], agent: { cardUrl } }],
    }),
  );
  return token;
}

/** The routers raising expectations waiting on `factKeys` signals-with-start on `queue` (core/ids.ts), by workflow id. */
export function routersOf(factKeys: Iterable<string>, queue: string): Set<string> {
  return new Set([...factKeys].map((factKey) => factRouterWorkflowId(factKey, queue)));
}

/**
 * Resolves once `queue` runs at least `expected` fact routers (visibility counts): the routers the raises so far
 * named have started. They are long-lived and a fixed set (core/fact-shards.ts), started by the first raise or fact of
 * their shard, so the count only grows, up to FACT_ROUTER_SHARDS; a raise starts no other workflow than its own.
 */
export async function waitRoutersStarted(
  client: Client,
  queue: string,
  expected: number,
  options: { label: string; timeoutMs: number; intervalMs?: number },
): Promise<void> {
  const want = Math.min(expected, FACT_ROUTER_SHARDS);
  let running = 0;
  await waitUntil(
    "the raises' routers to start",
    async () => {
      running = (
        await client.workflow.count(
          `WorkflowType = 'factRouterWorkflow' AND TaskQueue = '${queue}' AND ExecutionStatus = 'Running'`,
        )
      ).count;
      return running >= want;
    },
    {
      timeoutMs: options.timeoutMs,
      intervalMs: options.intervalMs ?? 1_000,
      onTick: () => progress(`  ${options.label}: routers running ${running}/${want}`),
    },
  );
}

/** What bounds a worker's memory: its heap limit and its workflow cache, as the process reported them at its start. */
export interface WorkerBounds {
  maxCachedWorkflows: number;
  heapLimitMiB: number;
}

/**
 * The bounds a worker process reported on the line matching `running` (src/worker.ts logs them with "worker running",
 * bench/baseline/worker.ts with "baseline worker running"), JSON or pretty.
 */
export function reportedBounds(output: string, running: RegExp): WorkerBounds {
  const line = output.split('\n').find((text) => running.test(text)) ?? '';
  const field = (name: string) => Number(new RegExp(`"?${name}"?\\s*[:=]\\s*(\\d+)`).exec(line)?.[1] ?? Number.NaN);
  const bounds = { maxCachedWorkflows: field('maxCachedWorkflows'), heapLimitMiB: field('heapLimitMiB') };
  if (Number.isNaN(bounds.maxCachedWorkflows) || Number.isNaN(bounds.heapLimitMiB))
    throw new Error(`no cache bound and heap limit on the worker's start line: ${line || '(no such line)'}`);
  return bounds;
}

/** Throws unless the raw worker runs with the watcher worker's heap limit and cache bound (a fair comparison). */
export function assertSameBounds(ours: WorkerBounds, raw: WorkerBounds): void {
  if (ours.maxCachedWorkflows !== raw.maxCachedWorkflows || ours.heapLimitMiB !== raw.heapLimitMiB) {
    throw new Error(
      `the raw worker's bounds ${JSON.stringify(raw)} differ from the watcher worker's ${JSON.stringify(ours)}`,
    );
  }
}

/**
 * The bridge (on a free port, with the watcher's `env`) and the raw baseline's worker (on `rawQueue`, writing its timer
 * firings to `<dir>/raw-fired.txt`) as processes of their own, each pushed to `children` as soon as it is spawned so
 * that a failure further on still stops it. The raw worker gets the watcher worker's heap limit (`nodeOptions`, the
 * watcher's NODE_OPTIONS) and cache bound (`watcherBounds`, what the watcher's worker reported), and the bounds it
 * reports must match. Resolves once both say they run.
 */
export async function spawnBridgeAndRawWorker(options: {
  server: BenchServer;
  env: Record<string, string>;
  dir: string;
  rawQueue: string;
  baselineBundle: string;
  children: Child[];
  /** The watcher worker's NODE_OPTIONS (absent: none, as the watcher's). */
  nodeOptions?: string;
  watcherBounds: WorkerBounds;
}): Promise<{ bridge: Child; raw: Child; port: number; firedFile: string; rawBounds: WorkerBounds }> {
  const { server, env, dir, children } = options;
  const port = await freePort();
  const bridge = spawnEntry('src/bridge.ts', [], { ...env, PORT: String(port) }, path.join(dir, 'bridge.log'));
  children.push(bridge);
  await bridge.waitFor(/bridge listening/);
  const firedFile = path.join(dir, 'raw-fired.txt');
  writeFileSync(firedFile, '');
  const raw = spawnBaselineWorker({
    server,
    queue: options.rawQueue,
    bundle: options.baselineBundle,
    logFile: path.join(dir, 'raw-worker.log'),
    firedFile,
    nodeOptions: options.nodeOptions,
    maxCachedWorkflows: options.watcherBounds.maxCachedWorkflows,
  });
  children.push(raw);
  await raw.waitFor(BASELINE_RUNNING);
  const rawBounds = reportedBounds(raw.output(), BASELINE_RUNNING);
  assertSameBounds(options.watcherBounds, rawBounds);
  return { bridge, raw, port, firedFile, rawBounds };
}

/** The line bench/baseline/worker.ts prints once it runs, with its bounds. */
export const BASELINE_RUNNING = /baseline worker running/;

/** The line src/worker.ts logs once it runs, with its bounds. */
export const WATCHER_RUNNING = /worker running/;

/**
 * The raw baseline's worker as a process of its own on `queue`: with `nodeOptions` as its NODE_OPTIONS (the
 * watcher worker's heap limit; absent, the environment's, as the watcher's) and `maxCachedWorkflows` (absent: the
 * watcher's default rule for its heap, src/config.ts).
 */
export function spawnBaselineWorker(options: {
  server: BenchServer;
  queue: string;
  bundle: string;
  logFile: string;
  firedFile?: string;
  nodeOptions?: string;
  maxCachedWorkflows?: number;
}): Child {
  const { server } = options;
  const args = [server.address, server.namespace, options.queue, options.bundle];
  if (options.firedFile) args.push(options.firedFile);
  if (options.maxCachedWorkflows !== undefined) args.push(`--max-cached-workflows=${options.maxCachedWorkflows}`);
  const env: Record<string, string> = options.nodeOptions === undefined ? {} : { NODE_OPTIONS: options.nodeOptions };
  return spawnEntry('bench/baseline/worker.ts', args, env, options.logFile);
}
