/**
 * The worker reads agents' cards with the bridge's card reader and its one setting, WATCHER_CARD_CACHE_SECONDS: a
 * card that moved the agent's endpoint is followed once the cache time has passed, not before. Real dev server, real
 * worker (our workflows and activities), real @a2a-js/sdk agents; the card cache's clock is a fake one, so that no
 * test waits minutes (the expectations' own timers run on the server's clock: each is due already).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startWorker, type Running } from '../../src/runtime.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import { createWatcherWorker } from '../../src/temporal/worker.js';
import { lapseOf, startTestAgent, type TestAgent } from '../support/agent.js';
import { agentsOf, registerAgent, writePrincipalsFile } from '../support/agents.js';
import { startCardServer, unique, type CardServer } from '../support/bridge.js';
import { deliveryExpectation, expectationInput } from '../support/fixtures.js';
import { LOOPBACK_AGENTS_ENV, loopbackAgents } from '../support/outbound.js';
import { useClient } from '../support/watcher.js';

const client = useClient();
let first: TestAgent;
let second: TestAgent;
let cards: CardServer;

beforeAll(async () => {
  [first, second, cards] = await Promise.all([startTestAgent(), startTestAgent(), startCardServer()]);
});

afterAll(async () => {
  await Promise.all([first?.close(), second?.close(), cards?.close()]);
});

/** Starts an expectation of `agentId` that was due a minute ago: the worker delivers its lapse at once. */
async function raiseLapsed(taskQueue: string, agentId: string): Promise<string> {
  const id = `card-cache-${unique()}`;
  const due = new Date(Date.now() - 60_000);
  due.setUTCMilliseconds(0);
  const expectation = deliveryExpectation(id, due.toISOString(), { grace: 'PT0S' });
  await startExpectation(
    client,
    taskQueue,
    expectationInput(expectation, { id: agentId }, { taskId: `t-${id}`, contextId: `c-${id}` }, taskQueue),
  );
  return id;
}

/** The ids of the expectations whose lapses `agent` received. */
const lapsedAt = (agent: TestAgent) => agent.received.map((received) => lapseOf(received)?.expectationId);

describe('the worker’s card cache', () => {
  it('follows a card that moved the endpoint after cardCacheSeconds, and not before (fake clock)', async () => {
    const taskQueue = `card-cache-${randomUUID()}`;
    let now = Date.parse('2026-12-01T00:00:00Z');
    const watcher = await createWatcherWorker({
      address: inject('temporalAddress'),
      namespace: 'default',
      taskQueue,
      workflowBundlePath: inject('workflowBundlePath'),
      agents: agentsOf(taskQueue),
      outbound: loopbackAgents,
      cardCacheSeconds: 300,
      now: () => now,
    });
    const running = watcher.run();
    try {
      cards.set('moving', first.card());
      const agent = registerAgent(taskQueue, { id: `moving-agent-${unique()}`, cardUrl: cards.url('moving') });
      const before = {
        first: first.received.length,
        second: second.received.length,
        fetches: cards.authorizations.length,
      };

      const a = await raiseLapsed(taskQueue, agent.id);
      await first.waitForMessages(before.first + 1, 45_000);
      cards.set('moving', second.card()); // the agent moved: its card now names the other endpoint
      now += 299_999;
      const b = await raiseLapsed(taskQueue, agent.id);
      await first.waitForMessages(before.first + 2, 45_000);
      now += 1;
      const c = await raiseLapsed(taskQueue, agent.id);
      await second.waitForMessages(before.second + 1, 45_000);

      expect(lapsedAt(first).slice(before.first)).toEqual([a, b]);
      expect(lapsedAt(second).slice(before.second)).toEqual([c]);
      expect(cards.authorizations.length - before.fetches).toBe(2);
    } finally {
      await watcher.shutdown();
      await running;
    }
  });

  it('is WATCHER_CARD_CACHE_SECONDS where the worker is started from the configuration (0: read for every lapse)', async () => {
    const taskQueue = `card-cache-config-${randomUUID()}`;
    const agentId = `config-agent-${unique()}`;
    cards.set('config', first.card());
    const config = loadConfig({
      TEMPORAL_TASK_QUEUE: taskQueue,
      WATCHER_PRINCIPALS_FILE: writePrincipalsFile([{ id: agentId, roles: ['agent'], cardUrl: cards.url('config') }]),
      WATCHER_CARD_CACHE_SECONDS: '0',
      WATCHER_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      ...LOOPBACK_AGENTS_ENV,
    });
    const worker: Running = await startWorker(config, inject('temporalAddress'), createLogger('silent'));
    try {
      const before = { received: first.received.length, fetches: cards.authorizations.length };

      const a = await raiseLapsed(taskQueue, agentId);
      await first.waitForMessages(before.received + 1, 45_000);
      const b = await raiseLapsed(taskQueue, agentId);
      await first.waitForMessages(before.received + 2, 45_000);

      expect(lapsedAt(first).slice(before.received)).toEqual([a, b]);
      // The default (60 s) would have read it once for both.
      expect(cards.authorizations.length - before.fetches).toBe(2);
    } finally {
      await worker.stop();
    }
  });
});
