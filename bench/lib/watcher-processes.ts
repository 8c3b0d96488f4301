/**
 * What scenarios 4 and 6 share to run the watcher as deployed, a `src/worker.ts` and a `src/bridge.ts` process on a
 * server: their environment, the principals file of the bench's agent, and the wait for every raise's ledgers.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
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

/**
 * Resolves once `queue` runs at least `expected.subjects` subject ledgers (visibility counts): every raise so far has
 * started its ledgers. The fact routers are a fixed few, not one per key: `expected.facts` is only reported.
 */
export async function waitLedgersStarted(
  client: Client,
  queue: string,
  expected: { facts: number; subjects: number },
  options: { label: string; timeoutMs: number; intervalMs?: number },
): Promise<void> {
  const countOf = async (type: string) =>
    (await client.workflow.count(`WorkflowType = '${type}' AND TaskQueue = '${queue}'`)).count;
  let facts = 0;
  let subjects = 0;
  await waitUntil(
    'every raise to start its ledgers',
    async () => {
      // The fact routers are a fixed few (core/fact-shards.ts), started by the first raises: none to count per raise.
      facts = expected.facts;
      subjects = await countOf('subjectLedgerWorkflow');
      return facts >= expected.facts && subjects >= expected.subjects;
    },
    {
      timeoutMs: options.timeoutMs,
      intervalMs: options.intervalMs ?? 1_000,
      onTick: () =>
        progress(
          `  ${options.label}: ledgers started: fact ${facts}/${expected.facts}, subject ${subjects}/${expected.subjects}`,
        ),
    },
  );
}

/**
 * The bridge (on a free port, with the watcher's `env`) and the raw baseline's worker (on `rawQueue`, writing its timer
 * firings to `<dir>/raw-fired.txt`) as processes of their own, each pushed to `children` as soon as it is spawned so
 * that a failure further on still stops it. Resolves once both say they run.
 */
export async function spawnBridgeAndRawWorker(options: {
  server: BenchServer;
  env: Record<string, string>;
  dir: string;
  rawQueue: string;
  baselineBundle: string;
  children: Child[];
}): Promise<{ bridge: Child; raw: Child; port: number; firedFile: string }> {
  const { server, env, dir, children } = options;
  const port = await freePort();
  const bridge = spawnEntry('src/bridge.ts', [], { ...env, PORT: String(port) }, path.join(dir, 'bridge.log'));
  children.push(bridge);
  await bridge.waitFor(/bridge listening/);
  const firedFile = path.join(dir, 'raw-fired.txt');
  writeFileSync(firedFile, '');
  const args = [server.address, server.namespace, options.rawQueue, options.baselineBundle, firedFile];
  const raw = spawnEntry('bench/baseline/worker.ts', args, {}, path.join(dir, 'raw-worker.log'));
  children.push(raw);
  await raw.waitFor(/baseline worker running/);
  return { bridge, raw, port, firedFile };
}
