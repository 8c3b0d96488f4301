/**
 * The watcher's worker and a client on the shared dev server, for the e2e tests: our workflows (the run's bundle)
 * and activities on a task queue of the test file's own.
 */
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { afterAll, beforeAll, inject } from 'vitest';
import type { OutboundRules } from '../../activities/outbound/address-policy.js';
import { createWatcherWorker } from '../../src/temporal/worker.js';
import type { Expectation, Origin } from '../../core/types.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import type { ExpectationInput } from '../../workflows/messages.js';
import { agentsOf, registerAgent } from './agents.js';
import { expectationInput } from './fixtures.js';
import { loopbackAgents } from './outbound.js';

export interface RunningWatcher {
  /** The worker's own client (its activities use the same). */
  client: Client;
  /** Shuts the worker down, waits until it has drained, and closes its connections. */
  stop(): Promise<void>;
}

/**
 * Starts a watcher worker on the shared dev server (or `address`), polling `taskQueue`; it delivers lapses to the
 * agents of the bridges started on the same queue (`startBridgeApp`) or registered with `registerAgent`, on loopback
 * (WATCHER_OUTBOUND_ALLOW=loopback, test/support/outbound.ts) unless `outbound` says otherwise.
 * `dataConverter`: e.g. the encryption codec, for its worker and its client alike.
 */
export async function startWatcherWorker(
  taskQueue: string,
  options: { outbound?: OutboundRules; dataConverter?: DataConverter; address?: string } = {},
): Promise<RunningWatcher> {
  const watcher = await createWatcherWorker({
    address: options.address ?? inject('temporalAddress'),
    namespace: 'default',
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    agents: agentsOf(taskQueue),
    outbound: options.outbound ?? loopbackAgents,
    dataConverter: options.dataConverter,
  });
  const running = watcher.run();
  return {
    client: watcher.client,
    async stop() {
      await watcher.shutdown();
      await running;
    },
  };
}

/**
 * A client of the shared dev server for one test file, closed in `afterAll`. Its connection is lazy (it connects
 * on first use), so the client can be handed out at once, outside the hooks.
 */
export function useClient(): Client {
  const connection = Connection.lazy({ address: inject('temporalAddress') });
  afterAll(() => connection.close());
  return new Client({ connection });
}

export interface WatcherOfFile {
  taskQueue: string;
  /** A client of the same server (not the worker's own), usable in the file's hooks and tests. */
  client: Client;
}

/**
 * A watcher worker for the test file (or the `describe`) that calls it: started in `beforeAll` on `taskQueue`,
 * stopped in `afterAll`. Hooks registered after this call run after the worker has started and, when the file
 * ends, before it stops.
 */
export function useWatcherWorker(taskQueue: string, options: { outbound?: OutboundRules } = {}): WatcherOfFile {
  const client = useClient();
  let watcher: RunningWatcher | undefined;
  beforeAll(async () => {
    watcher = await startWatcherWorker(taskQueue, options);
  });
  afterAll(async () => {
    await watcher?.stop();
  });
  return { taskQueue, client };
}

/**
 * Starts `expectation` on `taskQueue` as the bridge would when `agent` raises it in `origin`, without a bridge: the
 * agent is registered as that queue's, so the worker finds its card. Returns the input and what the start answered.
 */
export async function raiseOn(
  client: Client,
  taskQueue: string,
  expectation: Expectation,
  agent: { id: string; cardUrl: string },
  origin: Origin,
): Promise<{ input: ExpectationInput; started: 'raised' | 'exists' }> {
  const input = expectationInput(expectation, registerAgent(taskQueue, agent), origin, taskQueue);
  return { input, started: await startExpectation(client, taskQueue, input) };
}

/** How many workflow executions the visibility store counts for a query (eventually consistent). */
export async function countWorkflows(client: Client, query: string): Promise<number> {
  const { count } = await client.workflow.count(query);
  return count;
}
