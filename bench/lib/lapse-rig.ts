/**
 * Where scenario 3 runs its two sides: the shared stack of scenarios 1–3 (the watcher's worker, the bridge and the
 * raw baseline's worker all in the benchmark's process), or, with `--lapse-workers=processes`, as deployed: a
 * `src/worker.ts` (loading a prebuilt bundle, as the image does), a `src/bridge.ts` and a baseline worker (with the
 * watcher worker's heap limit and workflow cache), each a process of its own on the same server, while the agent and
 * the load stay in the benchmark's process.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { bundleWorkflows } from '../../src/temporal/workflow-bundle.js';
import { startTestAgent, type TestAgent } from '../../test/support/agent.js';
import { spawnEntry, type Child } from './child.js';
import { runPrefix } from './payloads.js';
import type { BenchServer } from './server.js';
import type { Stack } from './stack.js';
import { drainedAt } from './backlog.js';
import {
  reportedBounds,
  routersOf,
  spawnBridgeAndRawWorker,
  waitRoutersStarted,
  WATCHER_RUNNING,
  watcherEnv,
  writeAgentPrincipals,
} from './watcher-processes.js';

export interface LapseRig {
  /** How the workers run, for the report. */
  workers: 'in the benchmark process' | 'processes of their own';
  client: Client;
  bridgeUrl: string;
  agentToken: string;
  agent: TestAgent;
  baselineQueue: string;
  /** When each raw timer's activity ran so far: workflow id → epoch ms. */
  firedAt(): Map<string, number>;
  /** Resolves once the raises of expectations waiting on `factKeys` have settled: their routers run, no task waits. */
  expectRaised(factKeys: readonly string[]): Promise<void>;
  /** The watcher worker's card fetches so far; undefined when it runs in a process of its own. */
  workerCardFetches(): number | undefined;
}

/** The firings a baseline worker process appended to its fired file (`<id> <ms>` lines): workflow id → epoch ms. */
export function readFired(file: string): Map<string, number> {
  return new Map(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        const [id, ms] = line.split(' ');
        return [id!, Number(ms)] as const;
      }),
  );
}

/** The shared stack as a rig (closed with the stack). */
export function stackRig(stack: Stack): LapseRig {
  return {
    workers: 'in the benchmark process',
    client: stack.client,
    bridgeUrl: stack.bridgeUrl,
    agentToken: stack.tokens.agent,
    agent: stack.agent,
    baselineQueue: stack.baselineQueue,
    firedAt: () => stack.firedAt,
    async expectRaised(factKeys) {
      stack.expectRaised(factKeys);
      await stack.waitSettled();
    },
    workerCardFetches: () => stack.counters.workerCardFetches,
  };
}

/** Starts the three processes on `server`, on queues of their own, and a new agent; `close` stops them all. */
export async function startProcessRig(
  server: BenchServer,
  client: Client,
  dir: string,
  baselineBundle: string,
): Promise<LapseRig & { close(): Promise<void> }> {
  mkdirSync(dir, { recursive: true });
  const queue = `${runPrefix}-lapse-watcher`;
  const baselineQueue = `${runPrefix}-lapse-raw`;
  const agent = await startTestAgent();
  const children: Child[] = [];
  const close = async () => {
    for (const child of children.reverse()) await child.stop();
    await agent.close();
  };
  try {
    const principalsFile = path.join(dir, 'principals.json');
    const agentToken = writeAgentPrincipals(principalsFile, agent.cardUrl);
    const bundleFile = path.join(dir, 'workflow-bundle.js');
    writeFileSync(bundleFile, await bundleWorkflows());
    const env = {
      ...watcherEnv(server, queue, dir),
      WATCHER_PRINCIPALS_FILE: principalsFile,
      WATCHER_WORKFLOW_BUNDLE: bundleFile,
      WATCHER_WORKER_METRICS_PORT: '0',
    };
    const worker = spawnEntry('src/worker.ts', [], env, path.join(dir, 'worker.log'));
    children.push(worker);
    await worker.waitFor(WATCHER_RUNNING);
    const { port, firedFile } = await spawnBridgeAndRawWorker({
      server,
      env,
      dir,
      rawQueue: baselineQueue,
      baselineBundle,
      children,
      watcherBounds: reportedBounds(worker.output(), WATCHER_RUNNING),
    });
    const routers = new Set<string>();
    return {
      workers: 'processes of their own',
      client,
      bridgeUrl: `http://127.0.0.1:${port}`,
      agentToken,
      agent,
      baselineQueue,
      firedAt: () => readFired(firedFile),
      async expectRaised(factKeys) {
        for (const router of routersOf(factKeys, queue)) routers.add(router);
        await waitRoutersStarted(client, queue, routers.size, {
          label: 'lapse lateness',
          timeoutMs: 600_000,
          intervalMs: 500,
        });
        const drained = await drainedAt(client, server.namespace, queue, {
          timeoutMs: 600_000,
          label: 'lapse lateness',
        });
        if (drained.at === undefined) throw new Error(`lapse lateness: ${queue} kept a backlog of ${drained.backlog}`);
      },
      workerCardFetches: () => undefined,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
