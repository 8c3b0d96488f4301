/**
 * Agents that fail or refuse their lapse task, through the bridge and a real worker: one that answers 5xx (or
 * 408/429) for a while gets its lapse once it recovers, under one messageId; one that refuses it with a 4xx is
 * tried once and the record says the delivery failed; one whose card cannot be had at raise gets 502 and nothing
 * starts.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { WatcherClient } from 'expectations-watcher/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { lapseMessageId } from '../../core/message-id.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { close, freePort, listen, urlOf } from '../support/net.js';
import { routerRecorded } from '../support/routers.js';
import { countWorkflows, useWatcherWorker } from '../support/watcher.js';

const taskQueue = `faults-agent-${randomUUID()}`;
const watcher = useWatcherWorker(taskQueue);
let cards: Server;
let cardsUrl: string;

beforeAll(async () => {
  // Cards that cannot be had: an error status, a body that is not JSON, JSON that is not a card.
  const app = express();
  app.get('/status/:code', (req, res) => void res.status(Number(req.params.code)).json({ error: 'no card here' }));
  app.get('/html', (_req, res) => void res.type('text/html').send('<html><body>Welcome</body></html>'));
  app.get('/not-a-card', (_req, res) => void res.json({ skills: 'none', capabilities: [] }));
  cards = await listen(app);
  cardsUrl = urlOf(cards);
});

afterAll(async () => {
  if (cards) await close(cards);
});

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((thing) => thing.close()));
});

/** A real agent and a bridge whose only agent principal is it. */
async function agentAndBridge(): Promise<{ agent: TestAgent; bridge: BridgeApp }> {
  const agent = await startTestAgent();
  const bridge = await startBridgeApp(watcher.client, taskQueue, [
    { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
  ]);
  open.push(bridge, agent);
  return { agent, bridge };
}

/** Raises one expectation due at once through the bridge. */
async function raiseDue(bridge: BridgeApp) {
  const e = dueExpectation(`agent-fault-${unique()}`, new Date(Date.now() + 500));
  const agent = new WatcherClient({ baseUrl: bridge.url, token: bridge.tokens['shipping-agent']! });
  expect((await agent.sendEvent(artifactUpdate({ expectations: [e] }))).expectations).toEqual([
    { expectationId: e.expectationId, result: 'raised' },
  ]);
  return { e, messageId: lapseMessageId(e.expectationId, 'overdue', e.dueAt) };
}

/** The record, read through the bridge's own Temporal client, once its delivery is no longer pending. */
const settledRecord = (expectationId: string) =>
  waitUntil(
    `the delivery of ${expectationId} to settle`,
    async () => {
      const record = await getExpectationRecord(watcher.client, expectationId);
      return record && record.lapses.length > 0 && record.lapses.every((l) => l.delivery.status !== 'pending')
        ? record
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  ) as Promise<ExpectationRecord>;

describe('an agent that fails, then recovers', () => {
  it('gets the lapse once it recovers from answering 500 for a while, every attempt under one messageId', async () => {
    const { agent, bridge } = await agentAndBridge();
    agent.failNext(500);
    const { e, messageId } = await raiseDue(bridge);

    await waitUntil('three refused attempts', () => agent.attempts.length >= 3, { timeoutMs: 30_000, intervalMs: 100 });
    const refused = agent.attempts.length;
    agent.recover();
    const record = await settledRecord(e.expectationId);

    expect(agent.attempts.slice(0, refused).every((attempt) => attempt.status === 500)).toBe(true);
    expect(agent.attempts.slice(refused).map((attempt) => attempt.status)).toEqual([200]);
    expect(new Set(agent.attempts.map((attempt) => attempt.messageId))).toEqual(new Set([messageId]));
    expect(lapsesFor(agent, e.expectationId)).toHaveLength(1);
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'delivered', messageId });
    expect(record.lapseTaskId).toBe(agent.received[0]!.taskId);
  });

  it.each([502, 503, 408, 429])('retries a %i and delivers on the next attempt', async (status) => {
    const { agent, bridge } = await agentAndBridge();
    agent.failNext(status, 2);
    const { e, messageId } = await raiseDue(bridge);

    const record = await settledRecord(e.expectationId);

    expect(agent.attempts.map((attempt) => attempt.status)).toEqual([status, status, 200]);
    expect(new Set(agent.attempts.map((attempt) => attempt.messageId))).toEqual(new Set([messageId]));
    expect(record.lapses[0]!.delivery.status).toBe('delivered');
  });
});

describe('an agent that refuses the lapse with a 4xx', () => {
  it.each([400, 401, 403, 404, 422])('records a failed delivery after exactly one attempt on %i', async (status) => {
    const { agent, bridge } = await agentAndBridge();
    agent.failNext(status);
    const { e, messageId } = await raiseDue(bridge);

    const record = await settledRecord(e.expectationId);
    // The workflow has moved on past the failure: no retry is scheduled behind the record's back.
    const description = await watcher.client.workflow.getHandle(expectationWorkflowId(e.expectationId)).describe();

    expect(record.state).toBe('lapsed');
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'failed', messageId });
    expect(record.lapses[0]!.delivery.error).toContain(String(status));
    expect(record.lapseTaskId).toBeUndefined();
    expect(description.raw.pendingActivities ?? []).toHaveLength(0);
    expect(agent.attempts).toHaveLength(1);
    expect(agent.received).toHaveLength(0);
  });
});

describe('an agent whose card cannot be had at raise', () => {
  const where: [string, () => Promise<string>][] = [
    ['nothing listens', async () => `http://127.0.0.1:${await freePort()}/.well-known/agent-card.json`],
    ['it answers 500', async () => `${cardsUrl}/status/500`],
    ['it answers 404', async () => `${cardsUrl}/status/404`],
    ['it answers HTML', async () => `${cardsUrl}/html`],
    ['it answers JSON that is not a card', async () => `${cardsUrl}/not-a-card`],
  ];

  it.each(where)('answers 502 and starts nothing when %s', async (_case, cardUrl) => {
    const bridge = await startBridgeApp(watcher.client, taskQueue, [
      { id: 'agent-x', roles: ['agent'], cardUrl: await cardUrl() },
    ]);
    open.push(bridge);
    const e = dueExpectation(`card-${unique()}`, new Date(Date.now() + 3_600_000));
    const factKey = `card-fact-${unique()}`;

    const answer = await send(`${bridge.url}/a2a/events`, {
      token: bridge.tokens['agent-x'],
      json: artifactUpdate({ expectations: [e], facts: [{ factKey, observedAt: new Date().toISOString() }] }),
    });

    expect(answer.status).toBe(502);
    expect(answer.contentType).toContain('application/problem+json');
    expect(answer.body).toMatchObject({ type: 'urn:expectations-watcher:problem:agent-card-unreachable', status: 502 });
    expect(await getExpectationRecord(watcher.client, e.expectationId)).toBeUndefined();
    expect(await routerRecorded(watcher.client, taskQueue, factKey)).toBe(false);
    expect(await countWorkflows(watcher.client, `WorkflowId = '${expectationWorkflowId(e.expectationId)}'`)).toBe(0);
  });
});
