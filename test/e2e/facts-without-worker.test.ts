/**
 * Storing a fact needs the Temporal server, never a worker (DESIGN 3.2): through a real bridge on the dev server, on a
 * task queue that no worker polls, a raise is answered `raised` and its facts `accepted`; once a worker starts, the
 * expectations are satisfied by those facts, counted from when the bridge received them (on time, no lapse), and a
 * fact on the subject stored meanwhile is what the other expectation reads at its horizon.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { cardJson, expectation } from '../support/fixtures.js';
import {
  artifactUpdate,
  request,
  startBridgeApp,
  startCardServer,
  unique,
  type BridgeApp,
  type CardServer,
} from '../support/bridge.js';
import { untilRecord } from '../support/poll.js';
import { startWatcherWorker, useClient, type RunningWatcher } from '../support/watcher.js';

const taskQueue = `no-worker-${randomUUID()}`;
const client = useClient();
let cards: CardServer;
let bridge: BridgeApp;
let worker: RunningWatcher | undefined;

beforeAll(async () => {
  cards = await startCardServer();
  cards.set('good', cardJson());
  bridge = await startBridgeApp(client, taskQueue, [
    { id: 'agent-a', roles: ['agent'], cardUrl: cards.url('good') },
    { id: 'feed', roles: ['reporter'] },
  ]);
});

afterAll(async () => {
  await worker?.stop();
  await bridge?.close();
  await cards?.close();
});

it('answers raises and facts with no worker running, and the facts count from their reception once one starts', async () => {
  const subject = { type: 'shipment', id: `S-${unique()}` };
  const soon = new Date(Date.now() + 20_000).toISOString();
  const satisfied = expectation(`no-worker-${unique()}`, { subject, dueAt: soon });
  const watched = expectation(`no-worker-watched-${unique()}`, {
    subject,
    dueAt: new Date(Date.now() + 3_600_000).toISOString(),
    horizon: new Date(Date.now() + 15_000).toISOString(),
  });
  const raised = await request(`${bridge.url}/a2a/events`, {
    token: bridge.tokens['agent-a']!,
    body: artifactUpdate({ expectations: [satisfied, watched] }),
  });
  const observedAt = new Date().toISOString();
  const stored = await request(`${bridge.url}/v1/facts`, {
    token: bridge.tokens.feed!,
    body: { facts: [{ factKey: satisfied.satisfiedBy.factKey, observedAt, subject }] },
  });

  expect([raised.status, raised.body.expectations]).toEqual([
    200,
    [
      { expectationId: satisfied.expectationId, result: 'raised' },
      { expectationId: watched.expectationId, result: 'raised' },
    ],
  ]);
  expect([stored.status, stored.body]).toEqual([
    200,
    { facts: [{ factKey: satisfied.satisfiedBy.factKey, result: 'accepted' }] },
  ]);
  // Nothing has run yet: the records are as the bridge started them.
  expect((await getExpectationRecord(client, satisfied.expectationId))?.state).toBe('open');

  // Past both deadlines before any worker runs: the worker's backlog must not make either lapse.
  await new Promise((resolve) => setTimeout(resolve, 22_000));
  worker = await startWatcherWorker(taskQueue);
  const until = (id: string, accept: Parameters<typeof untilRecord>[2]) =>
    untilRecord((recordId) => getExpectationRecord(client, recordId), id, accept, { timeoutMs: 60_000 });

  expect(await until(satisfied.expectationId, (r) => r.closedAt !== undefined)).toMatchObject({
    state: 'satisfied',
    late: false,
    lapses: [],
  });
  expect(await until(watched.expectationId, (r) => r.lastFactAt !== undefined)).toMatchObject({
    state: 'open',
    lapses: [],
    lastFactAt: observedAt,
  });
}, 150_000);
