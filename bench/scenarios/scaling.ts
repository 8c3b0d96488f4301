/**
 * Scenario 6, scaling: settled raise throughput with one worker and one bridge, then with two workers and two
 * bridges (the shape `npm run cluster` runs), each a process of its own (`src/worker.ts`, `src/bridge.ts`) on one
 * fresh server. Against raw Temporal: the same count of no-op workflows with one, then two baseline worker processes.
 * Each phase has a task queue of its own, and the processes of a phase are stopped before the next one starts.
 *
 * "Settled" as in scenario 1: every router the raises named runs and the queue has no task backlog (ours), every
 * workflow has completed (raw), counted in visibility. The baseline workers run with the watcher's workers' heap (the
 * environment's) and cache rule (bench/baseline/worker.ts).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import { startTestAgent } from '../../test/support/agent.js';
import { spawnEntry, type Child } from '../lib/child.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { progress, waitUntil } from '../lib/progress.js';
import { freePort, startServer, type BenchServer, type ServerKind } from '../lib/server.js';
import { drainedAt } from '../lib/backlog.js';
import {
  routersOf,
  spawnBaselineWorker,
  waitRoutersStarted,
  watcherEnv,
  writeAgentPrincipals,
} from '../lib/watcher-processes.js';

export interface ScalingPhase {
  workers: number;
  bridges: number;
  count: number;
  /** Accepted by the bridges (ours) or by the server (raw), per second. */
  acceptedPerSec: number;
  /** From the first request until every raise had settled. */
  settledPerSec: number;
}

export interface ScalingResult {
  ours: ScalingPhase[];
  raw: ScalingPhase[];
  /** Two over one, settled: ours and raw. */
  gain: { ours: number; raw: number };
}

async function countOf(client: Client, query: string): Promise<number> {
  return (await client.workflow.count(query)).count;
}

async function oursPhase(
  server: BenchServer,
  client: Client,
  dir: string,
  workers: number,
  count: number,
  concurrency: number,
  cardUrl: string,
) {
  const queue = `${runPrefix}-scaling-${workers}`;
  const phaseDir = path.join(dir, `ours-${workers}`);
  mkdirSync(phaseDir, { recursive: true });
  const principalsFile = path.join(phaseDir, 'principals.json');
  const token = writeAgentPrincipals(principalsFile, cardUrl);
  // Two workers in one phase: none serves metrics on the fixed default port.
  const env = {
    ...watcherEnv(server, queue, phaseDir),
    WATCHER_PRINCIPALS_FILE: principalsFile,
    WATCHER_WORKER_METRICS_PORT: '0',
  };
  const children: Child[] = [];
  try {
    progress(`scaling (ours): ${workers} worker(s) and ${workers} bridge(s) on ${queue}`);
    for (let w = 0; w < workers; w++) {
      const worker = spawnEntry('src/worker.ts', [], env, path.join(phaseDir, `worker-${w}.log`));
      children.push(worker);
      await worker.waitFor(/worker running/);
    }
    const ports: number[] = [];
    for (let b = 0; b < workers; b++) {
      const port = await freePort();
      const bridge = spawnEntry(
        'src/bridge.ts',
        [],
        { ...env, PORT: String(port) },
        path.join(phaseDir, `bridge-${b}.log`),
      );
      children.push(bridge);
      await bridge.waitFor(/bridge listening/);
      ports.push(port);
    }
    const batches = Math.ceil(count / 10);
    const dueAt = monthsAhead();
    const prefix = `${runPrefix}-scaling-${workers}`;
    const t0 = performance.now();
    // Batch b goes to bridge b mod the bridges: the load is split evenly, as a load balancer would.
    const pool = await runPool(batches, concurrency, (b) =>
      postJson(
        `http://127.0.0.1:${ports[b % ports.length]}/a2a/events`,
        token,
        artifactUpdate(batchOf(prefix, b, 10, dueAt), `${prefix}-task-${b}`),
      ),
    );
    if (pool.errors.length > 0) throw new Error(`scaling (ours, ${workers}): raising failed: ${pool.errors[0]}`);
    const acceptedMs = performance.now() - t0;
    const label = `scaling (ours, ${workers})`;
    await waitRoutersStarted(client, queue, routersOf(batchKeys(prefix, batches, 10), queue).size, {
      label,
      timeoutMs: 1_800_000,
      intervalMs: 500,
    });
    const drained = await drainedAt(client, server.namespace, queue, { timeoutMs: 1_800_000, label });
    if (drained.at === undefined) throw new Error(`${label}: ${queue} kept a backlog of ${drained.backlog}`);
    const settledMs = performance.now() - t0;
    const phase: ScalingPhase = {
      workers,
      bridges: workers,
      count: batches * 10,
      acceptedPerSec: Number(((batches * 10 * 1000) / acceptedMs).toFixed(1)),
      settledPerSec: Number(((batches * 10 * 1000) / settledMs).toFixed(1)),
    };
    progress(`  scaling (ours, ${workers}): ${phase.acceptedPerSec}/s accepted, ${phase.settledPerSec}/s settled`);
    return phase;
  } finally {
    for (const child of children.reverse()) await child.stop();
  }
}

async function rawPhase(
  server: BenchServer,
  client: Client,
  dir: string,
  workers: number,
  count: number,
  concurrency: number,
  bundle: string,
) {
  const queue = `${runPrefix}-scaling-raw-${workers}`;
  const children: Child[] = [];
  try {
    for (let w = 0; w < workers; w++) {
      // As the watcher's workers here: the environment's heap, the watcher's default cache for it.
      const worker = spawnBaselineWorker({
        server,
        queue,
        bundle,
        logFile: path.join(dir, `raw-${workers}-worker-${w}.log`),
      });
      children.push(worker);
      await worker.waitFor(/baseline worker running/);
    }
    const t0 = performance.now();
    const pool = await runPool(count, concurrency, (i) =>
      client.workflow.start('noopWorkflow', { workflowId: `${queue}-${i}`, taskQueue: queue, args: [] }),
    );
    if (pool.errors.length > 0) throw new Error(`scaling (raw, ${workers}): starts failed: ${pool.errors[0]}`);
    const acceptedMs = performance.now() - t0;
    let completed = 0;
    await waitUntil(
      'every raw workflow to complete',
      async () => {
        completed = await countOf(client, `TaskQueue = '${queue}' AND ExecutionStatus = 'Completed'`);
        return completed >= count;
      },
      {
        timeoutMs: 1_800_000,
        intervalMs: 500,
        onTick: () => progress(`  scaling (raw, ${workers}): completed ${completed}/${count}`),
      },
    );
    const settledMs = performance.now() - t0;
    const phase: ScalingPhase = {
      workers,
      bridges: 0,
      count,
      acceptedPerSec: Number(((count * 1000) / acceptedMs).toFixed(1)),
      settledPerSec: Number(((count * 1000) / settledMs).toFixed(1)),
    };
    progress(`  scaling (raw, ${workers}): ${phase.acceptedPerSec}/s started, ${phase.settledPerSec}/s completed`);
    return phase;
  } finally {
    for (const child of children.reverse()) await child.stop();
  }
}

export async function runScaling(
  config: Config,
  dir: string,
  options: { count: number; concurrency: number; baselineBundle: string; server?: ServerKind },
): Promise<ScalingResult> {
  mkdirSync(dir, { recursive: true });
  const server = await startServer(config, path.join(dir, 'server'), 'scaling', options.server ?? 'dev');
  const connection = await Connection.connect({ address: server.address, ...server.connectionOptions });
  const client = new Client({ connection, namespace: server.namespace });
  const agent = await startTestAgent();
  try {
    const ours: ScalingPhase[] = [];
    const raw: ScalingPhase[] = [];
    for (const workers of [1, 2]) {
      ours.push(await oursPhase(server, client, dir, workers, options.count, options.concurrency, agent.cardUrl));
      raw.push(
        await rawPhase(server, client, dir, workers, options.count, options.concurrency, options.baselineBundle),
      );
    }
    const gain = (phases: ScalingPhase[]) => Number((phases[1]!.settledPerSec / phases[0]!.settledPerSec).toFixed(2));
    return { ours, raw, gain: { ours: gain(ours), raw: gain(raw) } };
  } finally {
    await agent.close();
    await connection.close();
    await server.stop();
  }
}
