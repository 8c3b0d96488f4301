/**
 * Lapse delivery end to end: the real dev server, the real worker (our workflows and activities) and a real
 * @a2a-js/sdk agent. An expectation due in a few seconds lapses and the agent receives the lapse task.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { lapseMessageId } from '../../core/message-id.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { untilRecord } from '../support/poll.js';
import { nodeUuidv5, URL_NAMESPACE } from '../support/uuid-v5.js';
import { raiseOn, useWatcherWorker } from '../support/watcher.js';
import { deliveryExpectation } from '../support/fixtures.js';

const taskQueue = `lapse-delivery-${randomUUID()}`;
const { client } = useWatcherWorker(taskQueue);

const agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
});

/** The lapse namespace computed with node's SHA-1, to cross-check the workflow's pure-JS implementation. */
const LAPSE_NAMESPACE = nodeUuidv5(EXTENSION_URI, URL_NAMESPACE);

/** Raises an expectation due `dueInMs` from now with no grace, for `agent`; returns its id and inputs. */
async function raiseDueSoon(agent: TestAgent, dueInMs = 3_000) {
  const suffix = randomUUID().slice(0, 8);
  const due = new Date(Date.now() + dueInMs);
  due.setUTCMilliseconds(0);
  const expectation = deliveryExpectation(`lapse-e2e-${suffix}`, due.toISOString(), {
    subject: { type: 'shipment', id: `S-${suffix}` },
    satisfiedBy: { factKey: `shipment:S-${suffix}:delivered` },
    grace: 'PT0S',
  });
  const origin = { taskId: `origin-task-${suffix}`, contextId: `ctx-${suffix}` };
  // Each test's agent under an id of its own: the worker finds its card by that id (never in the input).
  const agentSpec = { id: `shipping-agent-${suffix}`, cardUrl: agent.cardUrl };
  const { input } = await raiseOn(client, taskQueue, expectation, agentSpec, origin);
  return { expectation, input, messageId: lapseMessageId(expectation.expectationId, 'overdue', expectation.dueAt) };
}

/** Polls the record until `done` holds (the record is read through a query; there is nothing to subscribe to). */
const recordWhen = (expectationId: string, done: (record: ExpectationRecord) => boolean, timeoutMs = 45_000) =>
  untilRecord((id) => getExpectationRecord(client, id), expectationId, done, { timeoutMs });

const deliverySettled = (record: ExpectationRecord) =>
  record.lapses.length > 0 && record.lapses.every((entry) => entry.delivery.status !== 'pending');

describe('lapse delivery to a real A2A agent', () => {
  it('delivers one lapse task with the extension headers, the origin context and the derived messageId', async () => {
    const agent = await startTestAgent();
    agents.push(agent);
    const { expectation, input, messageId } = await raiseDueSoon(agent);

    const [received] = await agent.waitForMessages(1, 45_000);
    const record = await recordWhen(expectation.expectationId, deliverySettled);

    expect(messageId).toBe(nodeUuidv5(`${expectation.expectationId}|overdue|${expectation.dueAt}`, LAPSE_NAMESPACE));
    expect(agent.received).toHaveLength(1);
    expect(agent.attempts).toHaveLength(1);
    const { message, headers, taskId } = received!;
    expect(headers['a2a-version']).toBe('1.0');
    expect(headers['a2a-extensions']).toBe(EXTENSION_URI);
    expect(message.messageId).toBe(messageId);
    expect(message.contextId).toBe(input.origin.contextId);
    expect(message.referenceTaskIds).toEqual([input.origin.taskId]);
    expect(message.extensions).toEqual([EXTENSION_URI]);
    expect(message.metadata[EXTENSION_URI].lapse).toMatchObject({
      expectationId: expectation.expectationId,
      lapse: 'overdue',
      dueAt: expectation.dueAt,
      subject: expectation.subject,
    });
    expect(record.state).toBe('lapsed');
    expect(record.lapses).toHaveLength(1);
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'delivered', messageId, warnings: [] });
    expect(record.lapses[0]!.lapseTaskId).toBe(taskId);
    expect(record.lapseTaskId).toBe(taskId);
  });

  it('records on lapses[].delivery.warnings that an agent did not echo the extension, and still delivers', async () => {
    const agent = await startTestAgent({ echoExtension: false });
    agents.push(agent);
    const { expectation, input, messageId } = await raiseDueSoon(agent);

    const [received] = await agent.waitForMessages(1, 45_000);
    const record = await recordWhen(expectation.expectationId, deliverySettled);

    // The request did activate the extension; only the answer lacks the echo.
    expect(received!.headers['a2a-extensions']).toBe(EXTENSION_URI);
    expect(agent.attempts).toHaveLength(1);
    expect(record.lapses[0]!.delivery).toEqual({
      status: 'delivered',
      messageId,
      deliveredAt: expect.stringMatching(/Z$/),
      warnings: [
        `agent ${input.agent.id} did not echo ${EXTENSION_URI} in A2A-Extensions: the extension may not be active`,
      ],
    });
    expect(record.lapses[0]!.lapseTaskId).toBe(received!.taskId);
  });

  it("names the card's lapseSkill in the lapse task's text and next to the lapse under metadata[URI]", async () => {
    const agent = await startTestAgent({ lapseSkill: 'act-on-lapse' });
    agents.push(agent);
    const { expectation } = await raiseDueSoon(agent);

    const [received] = await agent.waitForMessages(1, 45_000);
    const record = await recordWhen(expectation.expectationId, deliverySettled);

    const { message } = received!;
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'delivered', warnings: [] });
    expect(Object.keys(message.metadata[EXTENSION_URI]).sort()).toEqual(['lapse', 'lapseSkill']);
    expect(message.metadata[EXTENSION_URI].lapseSkill).toBe('act-on-lapse');
    expect(message.metadata[EXTENSION_URI].lapse).toMatchObject({
      expectationId: expectation.expectationId,
      lapse: 'overdue',
    });
    expect(message.parts.map((p: any) => p.content.$case)).toEqual(['text', 'data']);
    expect(message.parts[0].content.value).toBe(
      `Expectation ${expectation.expectationId} (delivery) lapsed; the watcher asks you to act on it with your skill ` +
        `act-on-lapse: expects ${expectation.expects} for shipment ${expectation.subject.id} by ${expectation.dueAt}: overdue`,
    );
  });

  it('retries an agent that answers 500 and delivers once it recovers, with the same messageId every time', async () => {
    const agent = await startTestAgent();
    agents.push(agent);
    agent.failNext(500, 3);
    const { expectation, messageId } = await raiseDueSoon(agent);

    const [received] = await agent.waitForMessages(1, 60_000);
    const record = await recordWhen(expectation.expectationId, deliverySettled, 60_000);

    expect(agent.attempts.map((attempt) => attempt.status)).toEqual([500, 500, 500, 200]);
    expect(agent.attempts.map((attempt) => attempt.messageId)).toEqual([messageId, messageId, messageId, messageId]);
    expect(agent.received).toHaveLength(1);
    expect(received!.message.messageId).toBe(messageId);
    expect(record.lapses[0]!.delivery.status).toBe('delivered');
    expect(record.lapseTaskId).toBe(received!.taskId);
  });

  it('records a failed delivery when the agent refuses the lapse with a 4xx, after exactly one attempt', async () => {
    const agent = await startTestAgent();
    agents.push(agent);
    agent.failNext(404);
    const { expectation, messageId } = await raiseDueSoon(agent);

    const record = await recordWhen(expectation.expectationId, deliverySettled);

    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'failed', messageId });
    expect(record.lapses[0]!.delivery.error).toContain('404');
    expect(record.lapseTaskId).toBeUndefined();
    expect(agent.attempts).toHaveLength(1);
    expect(agent.received).toHaveLength(0);
  });
});
