/**
 * The worker is killed with SIGKILL while lapse deliveries are being retried (the agent answers
 * 500) and while other expectations' timers are still pending. A new worker takes over: every due lapse reaches
 * the agent, and every request the agent saw for one (expectation, lapse, dueAt) carries the same messageId.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { lapseMessageId } from '../../core/message-id.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { spawnWorker, waitUntil, type WorkerProcess } from '../support/faults.js';
import { useClient } from '../support/watcher.js';

const taskQueue = `faults-worker-crash-${randomUUID()}`;
const client = useClient();
let agent: TestAgent;
let bridge: BridgeApp;
let principalsFile: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  agent = await startTestAgent();
  const principals: PrincipalSpec[] = [{ id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl }];
  bridge = await startBridgeApp(client, taskQueue, principals);
  // The worker processes deliver to the bridge's agents.
  principalsFile = writePrincipalsFile(principals);
});

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.kill9()));
  await bridge?.close();
  await agent?.close();
});

const delivered = (record: ExpectationRecord | undefined) =>
  record !== undefined &&
  record.lapses.length > 0 &&
  record.lapses.every((entry) => entry.delivery.status === 'delivered');

describe('worker killed with SIGKILL mid-delivery', () => {
  it('delivers every due lapse after a restart, each under one messageId', async () => {
    agent.failNext(500);
    workers.push(await spawnWorker(inject('temporalAddress'), taskQueue, principalsFile));
    const now = Date.now();
    // Due at once: their deliveries are being retried against the failing agent when the worker dies.
    const inFlight = Array.from({ length: 4 }, (_, i) =>
      dueExpectation(`crash-now-${i}-${unique()}`, new Date(now + 1_000)),
    );
    // Due later: their timers are pending when the worker dies and fire while it is down or after it is back.
    const pending = Array.from({ length: 4 }, (_, i) =>
      dueExpectation(`crash-later-${i}-${unique()}`, new Date(now + 12_000)),
    );
    const all = [...inFlight, ...pending];
    const raised = await send(`${bridge.url}/a2a/events`, {
      token: bridge.tokens['shipping-agent'],
      json: artifactUpdate({ expectations: all }),
    });
    expect(raised.status).toBe(200);
    const messageIds = new Map(all.map((e) => [e.expectationId, lapseMessageId(e.expectationId, 'overdue', e.dueAt)]));
    const attemptsOf = (id: string) => agent.attempts.filter((attempt) => attempt.messageId === messageIds.get(id));

    // Every in-flight lapse has been refused at least twice: it is in its retry backoff when the worker dies.
    await waitUntil(
      'two refused attempts for every due lapse',
      () => inFlight.every((e) => attemptsOf(e.expectationId).length >= 2),
      {
        timeoutMs: 30_000,
      },
    );
    const beforeCrash = await Promise.all(pending.map((e) => getExpectationRecord(client, e.expectationId)));
    await workers[0]!.kill9();
    agent.recover();
    workers.push(await spawnWorker(inject('temporalAddress'), taskQueue, principalsFile));

    const records = await waitUntil(
      'every lapse delivered after the restart',
      async () => {
        const read = await Promise.all(all.map((e) => getExpectationRecord(client, e.expectationId)));
        return read.every(delivered) ? (read as ExpectationRecord[]) : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );

    expect(beforeCrash.map((record) => record?.lapses.length)).toEqual([0, 0, 0, 0]);
    for (const [i, e] of all.entries()) {
      const id = e.expectationId;
      const received = lapsesFor(agent, id);
      expect(received, id).toHaveLength(1);
      expect(new Set([...attemptsOf(id), ...received.map((r) => r.message)].map((m) => m.messageId)), id).toEqual(
        new Set([messageIds.get(id)]),
      );
      expect(records[i]!.state).toBe('lapsed');
      expect(records[i]!.lapses).toHaveLength(1);
      expect(records[i]!.lapses[0]!.delivery.messageId).toBe(messageIds.get(id));
      expect(records[i]!.lapseTaskId).toBe(received[0]!.taskId);
    }
    // Nothing but these lapses reached the agent: no stray messages under other ids.
    expect(agent.received).toHaveLength(all.length);
    expect(agent.attempts.every((attempt) => [...messageIds.values()].includes(attempt.messageId!))).toBe(true);
  });
});
