/**
 * Where the traffic scenario runs, as deployed: a `src/worker.ts` (loading the prebuilt bundle, with compose's heap
 * bound), a `src/bridge.ts` and the raw baseline's worker (with the watcher worker's heap bound and workflow cache,
 * checked from what both report at their start), each a process of its own on one server, so that each
 * one's CPU is read apart; several real @a2a-js/sdk agents and a fact feed, the load and the raw client in the
 * benchmark's process. The watcher is reached only through the bridge's HTTP API.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startTestAgent, type TestAgent } from '../../test/support/agent.js';
import { writePrincipalsFile } from '../../test/support/agents.js';
import type { Child } from './child.js';
import { runPrefix } from './payloads.js';
import type { BenchServer } from './server.js';
import {
  BASELINE_RUNNING,
  DEPLOYED_WORKER_NODE_OPTIONS,
  reportedBounds,
  spawnBaselineWorker,
  startWatcherProcesses,
  type WorkerBounds,
} from './watcher-processes.js';

export interface TrafficRig {
  server: BenchServer;
  /** The benchmark's own client: raw starts and signals, visibility, task queues, histories. */
  client: Client;
  bridgeUrl: string;
  agents: TestAgent[];
  /** Bearer token of each agent, in the order of `agents`. */
  agentTokens: string[];
  /** A reporter that may read (records of any agent's expectations). */
  feedToken: string;
  watcherQueue: string;
  rawQueue: string;
  pids: { worker: number; bridge: number; rawWorker: number };
  /** Both workers' NODE_OPTIONS, and the heap limit and workflow cache each reported (the same, or the rig fails). */
  workers: { nodeOptions: string; ours: WorkerBounds; raw: WorkerBounds };
  /** Raw lapses so far: workflow id → epoch ms its activity ran. */
  rawFiredAt(): Map<string, number>;
  close(): Promise<void>;
}

/** The firings the baseline worker appended to its fired file (`<id> <ms>` lines): workflow id → epoch ms. */
function readFired(file: string): Map<string, number> {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
  return new Map(lines.map((line) => [line.split(' ')[0]!, Number(line.split(' ')[1])]));
}

/** Starts the agents and the three processes on `server` under `dir`. */
export async function startTrafficRig(
  server: BenchServer,
  dir: string,
  bundles: { watcher: string; baseline: string },
  agentCount: number,
): Promise<TrafficRig> {
  mkdirSync(dir, { recursive: true });
  const watcherQueue = `${runPrefix}-traffic-watcher`;
  const rawQueue = `${runPrefix}-traffic-raw`;
  const agents: TestAgent[] = [];
  const children: Child[] = [];
  let connection: Connection | undefined;
  const close = async () => {
    for (const child of children.reverse()) await child.stop();
    await connection?.close();
    for (const agent of agents) await agent.close();
  };
  try {
    for (let i = 0; i < agentCount; i++) agents.push(await startTestAgent());
    const agentTokens = agents.map(() => `agent-${randomUUID()}`);
    const feedToken = `feed-${randomUUID()}`;
    const tokens = Object.fromEntries(agentTokens.map((token, i) => [`traffic-agent-${i + 1}`, token]));
    const principalsFile = writePrincipalsFile(
      [
        ...agents.map((agent, i) => ({
          id: `traffic-agent-${i + 1}`,
          roles: ['agent' as const],
          cardUrl: agent.cardUrl,
        })),
        { id: 'traffic-feed', roles: ['reporter' as const, 'reader' as const] },
      ],
      { tokens: { ...tokens, 'traffic-feed': feedToken }, file: path.join(dir, 'principals.json') },
    );
    const watcher = await startWatcherProcesses(
      server,
      { queue: watcherQueue, dir, bundle: bundles.watcher, principalsFile, env: { WATCHER_WORKER_METRICS_PORT: '0' } },
      children,
    );
    const { worker, bridge, bounds: ours } = watcher;
    // The raw worker with the watcher worker's heap bound and workflow cache, as it reports them: a fair comparison.
    const firedFile = path.join(dir, 'raw-fired.txt');
    writeFileSync(firedFile, '');
    const raw = spawnBaselineWorker({
      server,
      queue: rawQueue,
      bundle: bundles.baseline,
      dir,
      firedFile,
      nodeOptions: DEPLOYED_WORKER_NODE_OPTIONS,
      maxCachedWorkflows: ours.maxCachedWorkflows,
    });
    children.push(raw);
    await raw.waitFor(BASELINE_RUNNING);
    const rawBounds = reportedBounds(raw.output(), BASELINE_RUNNING);
    if (rawBounds.maxCachedWorkflows !== ours.maxCachedWorkflows || rawBounds.heapLimitMiB !== ours.heapLimitMiB)
      throw new Error(
        `the raw worker's bounds ${JSON.stringify(rawBounds)} differ from the watcher's ${JSON.stringify(ours)}`,
      );
    connection = await Connection.connect({ address: server.address, ...server.connectionOptions });
    return {
      server,
      client: new Client({ connection, namespace: server.namespace }),
      bridgeUrl: watcher.bridgeUrl,
      agents,
      agentTokens,
      feedToken,
      watcherQueue,
      rawQueue,
      pids: { worker: worker.pid, bridge: bridge.pid, rawWorker: raw.pid },
      workers: { nodeOptions: DEPLOYED_WORKER_NODE_OPTIONS, ours, raw: rawBounds },
      rawFiredAt: () => readFired(firedFile),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
