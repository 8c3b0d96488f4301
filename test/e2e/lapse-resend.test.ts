/**
 * Re-sending a lapse task through the bridge (`POST /v1/expectations/{id}/lapses/{messageId}/resend`), on the real
 * dev server with the real worker and a real @a2a-js/sdk agent: a delivery that failed for good goes out again once
 * the agent is back, and the agent receives exactly one message under the original messageId; a second resend sends
 * nothing; a run that continued as new re-sends what it carried; and the errors (403, 404, 400, 409) are exact.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lapseMessageId } from '../../core/message-id.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { registerDependentSignal } from '../../workflows/messages.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, invalidRequest, problemBody, send, startBridgeApp, unique } from '../support/bridge.js';
import type { BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { useWatcherWorker } from '../support/watcher.js';

const taskQueue = `lapse-resend-${randomUUID()}`;
const watcher = useWatcherWorker(taskQueue);
let agent: TestAgent;
let bridge: BridgeApp;

beforeAll(async () => {
  agent = await startTestAgent();
  bridge = await startBridgeApp(watcher.client, taskQueue, [
    { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'ops-admin', roles: ['reader', 'admin'] },
    { id: 'ops-reader', roles: ['reader'] },
  ]);
});

afterAll(async () => {
  await bridge?.close();
  await agent?.close();
});

/**
 * Raises an expectation due at once whose lapse the agent refuses with a 404 (as while it is being redeployed): a
 * failure that is not retried, the fast way to a delivery that failed for good. Resolves once the record says so.
 */
async function raiseFailedLapse(subjectId = `S-${unique()}`) {
  agent.failNext(404, 1);
  const subject = { type: 'shipment', id: subjectId };
  const e = dueExpectation(`resend-${unique()}`, new Date(Date.now() + 500), { subject });
  const raised = await send(`${bridge.url}/a2a/events`, {
    token: bridge.tokens['shipping-agent'],
    json: artifactUpdate({ expectations: [e] }),
  });
  expect(raised.status, JSON.stringify(raised.body)).toBe(200);
  const failed = await recordWhen(e.expectationId, (r) => r.lapses[0]?.delivery.status === 'failed');
  return { e, failed, messageId: lapseMessageId(e.expectationId, 'overdue', e.dueAt) };
}

const recordWhen = (expectationId: string, accept: (record: ExpectationRecord) => boolean) =>
  waitUntil(
    `the record of ${expectationId}`,
    async () => {
      const record = await getExpectationRecord(watcher.client, expectationId);
      return record && accept(record) ? record : undefined;
    },
    { timeoutMs: 45_000, intervalMs: 200 },
  );

const resend = (expectationId: string, messageId: string, principal = 'ops-admin') =>
  send(`${bridge.url}/v1/expectations/${encodeURIComponent(expectationId)}/lapses/${messageId}/resend`, {
    method: 'POST',
    token: bridge.tokens[principal],
  });

/** How many deliverLapse activities the expectation's current run has scheduled, from its history. */
async function deliveriesScheduled(expectationId: string): Promise<number> {
  const history = await watcher.client.workflow.getHandle(expectationWorkflowId(expectationId)).fetchHistory();
  const deliveries = history.events?.filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverLapse',
  );
  return deliveries?.length ?? 0;
}

describe('re-sending a lapse that failed for good', () => {
  it('delivers it once the agent is back: exactly one message, with the original messageId', async () => {
    const { e, failed, messageId } = await raiseFailedLapse();
    const refused = agent.attempts.filter((attempt) => attempt.messageId === messageId);

    const answer = await resend(e.expectationId, messageId);
    const [received] = await waitUntil('the lapse at the agent', () => {
      const got = lapsesFor(agent, e.expectationId);
      return got.length > 0 && got;
    });
    const record = await recordWhen(e.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(failed.lapses[0]!.delivery.error).toContain('404');
    expect(refused.map((attempt) => attempt.status)).toEqual([404]);
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect(answer.body).toEqual({
      expectationId: e.expectationId,
      result: 'resent',
      delivery: { status: 'pending', messageId, resends: 1, resentAt: expect.any(String), resentBy: 'ops-admin' },
    });
    expect(received!.message.messageId).toBe(messageId);
    expect(received!.message.metadata).toMatchObject({ [EXTENSION_URI]: { lapse: failed.lapse } });
    expect(lapsesFor(agent, e.expectationId)).toHaveLength(1);
    expect(record.lapses).toHaveLength(1);
    expect(record.lapses[0]!.delivery).toMatchObject({
      status: 'delivered',
      messageId,
      resends: 1,
      resentBy: 'ops-admin',
    });
    expect(record.lapses[0]!.lapseTaskId).toBe(received!.taskId);
    expect(record.lapseTaskId).toBe(received!.taskId);
  });

  it('sends nothing on a second resend: 200 with the delivery as it is', async () => {
    const { e, messageId } = await raiseFailedLapse();
    expect((await resend(e.expectationId, messageId)).status).toBe(202);
    const delivered = await recordWhen(e.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');

    const again = await resend(e.expectationId, messageId);

    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toEqual({
      expectationId: e.expectationId,
      result: 'delivered',
      delivery: delivered.lapses[0]!.delivery,
      lapseTaskId: delivered.lapses[0]!.lapseTaskId,
    });
    expect(await deliveriesScheduled(e.expectationId)).toBe(2);
    expect(lapsesFor(agent, e.expectationId)).toHaveLength(1);
    const attempts = agent.attempts.filter((attempt) => attempt.messageId === messageId);
    expect(attempts.map((attempt) => attempt.status)).toEqual([404, 200]);
    expect((await getExpectationRecord(watcher.client, e.expectationId))!.lapses[0]!.delivery.resends).toBe(1);
  });

  it('re-sends from the run an expectation continued as new into, which carried the failed lapse', async () => {
    const subject = { type: 'shipment', id: `S-busy-${unique()}` };
    const { e, messageId } = await raiseFailedLapse(subject.id);
    const handle = watcher.client.workflow.getHandle(expectationWorkflowId(e.expectationId));
    const firstRunId = (await handle.describe()).runId;
    // Dependents registering (each a signal and a memo write) until the dev server (suggestContinueAsNew at 300
    // events) has the expectation continue; facts on its subject no longer reach it.
    for (let i = 0; (await handle.describe()).runId === firstRunId; i++) {
      if (i >= 2000) throw new Error(`${e.expectationId} never continued as new`);
      await handle.signal(registerDependentSignal, { workflowId: `expectation:nobody-${subject.id}-${i}` });
    }

    const answer = await resend(e.expectationId, messageId);
    const record = await recordWhen(e.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    expect((await handle.describe()).runId).not.toBe(firstRunId);
    expect(await deliveriesScheduled(e.expectationId)).toBe(1);
    expect(record.lapses).toHaveLength(1);
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'delivered', messageId, resends: 1 });
    expect(lapsesFor(agent, e.expectationId).map((received) => received.message.messageId)).toEqual([messageId]);
  });
});

describe('what a resend refuses', () => {
  let failed: Awaited<ReturnType<typeof raiseFailedLapse>>;
  beforeAll(async () => {
    failed = await raiseFailedLapse();
  });

  it.each([
    ['the agent that raised it', 'shipping-agent'],
    ['a reader', 'ops-reader'],
  ])('is 403 for %s: admins only', async (_who, principal) => {
    const answer = await resend(failed.e.expectationId, failed.messageId, principal);

    expect(answer.status).toBe(403);
    expect(answer.body).toEqual(
      problemBody('forbidden', `principal '${principal}' may not re-send lapse tasks (needs admin)`),
    );
    expect(await deliveriesScheduled(failed.e.expectationId)).toBe(1);
  });

  it('is 404 for an expectation never raised', async () => {
    const id = `never-raised-${unique()}`;

    const answer = await resend(id, failed.messageId);

    expect(answer.status).toBe(404);
    expect(answer.body).toEqual(problemBody('not-found', `no expectation '${id}'`));
  });

  it('is 404 for a messageId that names none of its lapses', async () => {
    const other = lapseMessageId(failed.e.expectationId, 'stalled', failed.e.dueAt);

    const answer = await resend(failed.e.expectationId, other);

    expect(answer.status).toBe(404);
    expect(answer.body).toEqual(
      problemBody(
        'not-found',
        `expectation '${failed.e.expectationId}' has no lapse whose delivery has messageId '${other}'`,
      ),
    );
  });

  it('is 400 for a messageId that is no UUID', async () => {
    const answer = await resend(failed.e.expectationId, '0');

    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(
      invalidRequest(['messageId', "messageId must be a lapse's delivery.messageId from its record (a UUID)"]),
    );
  });

  it('is 409 once the expectation is withdrawn and closed, naming why', async () => {
    const { e, messageId } = await raiseFailedLapse();
    const withdrawn = await send(`${bridge.url}/v1/expectations/${e.expectationId}/withdraw`, {
      token: bridge.tokens['ops-admin'],
      json: { reason: 'the shipment was cancelled' },
    });
    expect(withdrawn.status).toBe(200);
    const closed = await recordWhen(e.expectationId, (r) => r.closedAt !== undefined);

    const answer = await resend(e.expectationId, messageId);

    expect(answer.status).toBe(409);
    const detail =
      `expectation '${e.expectationId}' is closed (withdrawn at ${closed.closedAt}): ` +
      'its workflow has completed, so its lapse tasks are delivered no more';
    expect(answer.body).toEqual(problemBody('expectation-ended', detail));
    expect(lapsesFor(agent, e.expectationId)).toHaveLength(0);
  });
});
