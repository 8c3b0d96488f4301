/**
 * Where the traffic scenario runs, as deployed: a `src/worker.ts`, a `src/bridge.ts` and the raw baseline's worker
 * (with the watcher worker's heap bound and workflow cache, checked from what both report), each a process of its own
 * on one server so that each one's CPU is read apart; real @a2a-js/sdk agents, a fact feed, the load and the raw
 * client in the benchmark's process. The watcher is reached only through the bridge's HTTP API.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { startTestAgent, type TestAgent } from '../../test/support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../../test/support/agents.js';
import type { Child } from './child.js';
import { runPrefix } from './payloads.js';
import { connect, type BenchServer } from './server.js';
import {
  DEPLOYED_WORKER_NODE_OPTIONS,
  startBaselineWorker,
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
  workers: { nodeOptions: string; ours: WorkerBounds; raw: WorkerBounds };
  /** Raw lapses so far: workflow id → epoch ms its activity ran. */
  rawFiredAt(): Map<string, number>;
  close(): Promise<void>;
}

/** Starts `agentCount` agents and the three processes on `server` under `dir`. */
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
  let client: Client | undefined;
  const close = async () => {
    for (const child of children.reverse()) await child.stop();
    await client?.connection.close();
    for (const agent of agents) await agent.close();
  };
  try {
    for (let i = 0; i < agentCount; i++) agents.push(await startTestAgent());
    const agentTokens = agents.map(() => `agent-${randomUUID()}`);
    const feedToken = `feed-${randomUUID()}`;
    const tokens: Record<string, string> = { 'traffic-feed': feedToken };
    const principals: PrincipalSpec[] = [{ id: 'traffic-feed', roles: ['reporter', 'reader'] }];
    agents.forEach((agent, i) => {
      tokens[`traffic-agent-${i + 1}`] = agentTokens[i]!;
      principals.push({ id: `traffic-agent-${i + 1}`, roles: ['agent'], cardUrl: agent.cardUrl });
    });
    const principalsFile = writePrincipalsFile(principals, { tokens, file: path.join(dir, 'principals.json') });
    const env = { WATCHER_WORKER_METRICS_PORT: '0' };
    const watcher = await startWatcherProcesses(
      server,
      { queue: watcherQueue, dir, bundle: bundles.watcher, principalsFile, env },
      children,
    );
    const ours = watcher.bounds;
    const firedFile = path.join(dir, 'raw-fired.txt');
    writeFileSync(firedFile, '');
    const rawOptions = { queue: rawQueue, bundle: bundles.baseline, dir, firedFile };
    const raw = await startBaselineWorker(
      server,
      { ...rawOptions, maxCachedWorkflows: ours.maxCachedWorkflows },
      children,
    );
    if (raw.bounds.maxCachedWorkflows !== ours.maxCachedWorkflows || raw.bounds.heapLimitMiB !== ours.heapLimitMiB)
      throw new Error(
        `the raw worker's bounds ${JSON.stringify(raw.bounds)} differ from the watcher's ${JSON.stringify(ours)}`,
      );
    client = await connect(server);
    return {
      server,
      client,
      bridgeUrl: watcher.bridgeUrl,
      agents,
      agentTokens,
      feedToken,
      watcherQueue,
      rawQueue,
      pids: { worker: watcher.worker.pid, bridge: watcher.bridge.pid, rawWorker: raw.worker.pid },
      workers: { nodeOptions: DEPLOYED_WORKER_NODE_OPTIONS, ours, raw: raw.bounds },
      // The baseline worker appends `<id> <ms>` lines to the fired file.
      rawFiredAt: () => {
        const lines = readFileSync(firedFile, 'utf8').split('\n').filter(Boolean);
        return new Map(lines.map((line) => [line.split(' ')[0]!, Number(line.split(' ')[1])]));
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
