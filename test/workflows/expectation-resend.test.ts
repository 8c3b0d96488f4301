/**
 * Re-sending a lapse task (the `resendLapse` update) on the time-skipping server: a delivery that spent its 7-day
 * budget goes out again under the same messageId with a budget of its own; a lapse delivered or still in retry is
 * not sent twice; unknown lapses and ended expectations are refused; a continued run re-sends what it carried.
 */
import { describe, expect, it } from 'vitest';
import { lapseMessageId } from '../../core/message-id.js';
import { resendLapse } from '../../src/temporal/resend-lapse.js';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { expectationWorkflow } from '../../workflows/expectation.js';
import { resendLapseUpdate } from '../../workflows/messages.js';
import { shipmentExpectation } from '../support/fixtures.js';
import { DAY, HOUR, reportFact, untilStatus, useHarness } from './support.js';

const h = useHarness();

const attemptsOf = (messageId: string) => h.deliveries.filter((delivery) => delivery.messageId === messageId);

/** How many deliverLapse activities the workflow's current run has scheduled, from its history. */
async function deliveriesScheduled(workflowId: string): Promise<number> {
  const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
  const deliveries = history.events?.filter(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverLapse',
  );
  return deliveries?.length ?? 0;
}

/** Raises an expectation due in a day for an agent of its own, whose deliveries fail as `fault` says. */
async function raiseFor(prefix: string, fault?: 'unavailable' | 'rejected') {
  const start = await h.now();
  const id = h.id(prefix);
  const agentId = h.id(`${prefix}-agent`);
  if (fault) h.faults.set(agentId, fault);
  const input = await h.raise(shipmentExpectation(id, start, DAY), { agent: { id: agentId } });
  return { start, id, agentId, input, messageId: lapseMessageId(id, 'overdue', input.expectation.dueAt) };
}

/**
 * A lapse refused for good, then its run terminated: what the next run gets carried (continue-as-new by hand, since
 * the time-skipping server never suggests it), with the agent back up.
 */
async function refusedAndEnded(prefix: string) {
  const raised = await raiseFor(prefix, 'rejected');
  await h.advanceTo(raised.start + 2 * DAY);
  const failed = await h.until(raised.id, (r) => r.lapses[0]?.delivery.status === 'failed');
  await h.client.workflow.getHandle(raised.input.links.self).terminate('replaced by a run carrying its state');
  await untilStatus(h, raised.input.links.self, 'TERMINATED');
  h.faults.delete(raised.agentId);
  const nextInput = { ...raised.input, carried: { record: failed, horizonChecked: false, dependents: [] } };
  return { ...raised, nextInput };
}

describe('resendLapse', () => {
  it('re-sends a lapse whose delivery spent its 7-day budget, under the same messageId and with a budget of its own', async () => {
    const { start, id, agentId, messageId } = await raiseFor('budget', 'unavailable');
    await h.advanceTo(start + 8 * DAY + HOUR);
    const failed = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'failed');
    const refused = attemptsOf(messageId).length;

    h.faults.delete(agentId);
    const askedAt = await h.now();
    const answer = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });
    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    const spent = 'the delivery budget was spent; the last attempt failed: connection refused';
    expect(failed.lapses[0]!.delivery.error).toBe(spent);
    expect(refused).toBeGreaterThan(100);
    expect(answer).toMatchObject({
      result: 'resent',
      entry: { delivery: { status: 'pending', messageId, resends: 1, resentBy: 'ops-admin' } },
    });
    expect(record.lapses.map((entry) => entry.delivery)).toMatchObject([
      { status: 'delivered', messageId, resends: 1, resentBy: 'ops-admin' },
    ]);
    expect(record.lapses[0]!.delivery.error).toBeUndefined();
    // Past the lapse's own budget (8 days after it): delivered only because the resend has a budget of its own.
    expect(Date.parse(record.lapses[0]!.delivery.resentAt!)).toBeGreaterThanOrEqual(askedAt);
    expect(record.lapseTaskId).toBe(`task-${messageId}`);
    expect(attemptsOf(messageId).slice(refused)).toEqual([expect.objectContaining({ messageId, resend: 1 })]);
  });

  it('answers a resend of a delivered lapse with its delivery and schedules no second one', async () => {
    const { start, id, input, messageId } = await raiseFor('delivered');
    await h.advanceTo(start + 2 * DAY);
    const delivered = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    const first = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });
    const second = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });

    expect(first).toEqual({ result: 'delivered', entry: delivered.lapses[0] });
    expect(second).toEqual(first);
    expect(await deliveriesScheduled(input.links.self)).toBe(1);
    expect(attemptsOf(messageId)).toHaveLength(1);
    expect((await h.record(id)).lapses[0]!.delivery.resends).toBeUndefined();
  });

  it('answers a resend of a lapse still in retry with pending, and the agent gets it once when it comes back', async () => {
    const { start, id, agentId, input, messageId } = await raiseFor('in-retry', 'unavailable');
    await h.advanceTo(start + DAY + 6 * HOUR);
    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'pending');

    const answer = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });
    h.faults.delete(agentId);
    await h.advanceTo(start + 2 * DAY);
    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(answer).toMatchObject({ result: 'pending', entry: { delivery: { status: 'pending', messageId } } });
    expect(record.lapses[0]!.delivery.resends).toBeUndefined();
    expect(await deliveriesScheduled(input.links.self)).toBe(1);
    expect(attemptsOf(messageId).filter((attempt) => attempt.resend !== undefined)).toEqual([]);
  });

  it('refuses a messageId that names no lapse of the expectation, and an expectation never raised', async () => {
    const { start, id, messageId } = await raiseFor('unknown');
    await h.until(id, (r) => r.state === 'open');
    const beforeLapse = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });
    await h.advanceTo(start + 2 * DAY);
    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');
    const otherId = lapseMessageId(id, 'stalled', new Date(start).toISOString());

    const unknownLapse = await resendLapse(h.client, id, { messageId: otherId, requestedBy: 'ops-admin' });
    const unknownExpectation = await resendLapse(h.client, h.id('never-raised'), {
      messageId,
      requestedBy: 'ops-admin',
    });

    expect(beforeLapse).toEqual({
      result: 'unknown-lapse',
      reason: `expectation '${id}' has no lapse whose delivery has messageId '${messageId}'`,
    });
    expect(unknownLapse).toEqual({
      result: 'unknown-lapse',
      reason: `expectation '${id}' has no lapse whose delivery has messageId '${otherId}'`,
    });
    expect(unknownExpectation).toEqual({ result: 'unknown-expectation' });
  });

  it('refuses to re-send a failed lapse once the expectation is satisfied and closed, naming why', async () => {
    const { start, id, input, messageId } = await raiseFor('closed', 'rejected');
    await h.advanceTo(start + 2 * DAY);
    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'failed');
    await reportFact(h, input.expectation.satisfiedBy.factKey, start + 2 * DAY);
    const closed = await h.until(id, (r) => r.closedAt !== undefined);

    const answer = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });

    expect(answer).toEqual({
      result: 'ended',
      reason:
        `expectation '${id}' is closed (satisfied at ${closed.closedAt}): ` +
        'its workflow has completed, so its lapse tasks are delivered no more',
    });
    expect(attemptsOf(messageId)).toHaveLength(1);
  });

  it('answers delivered for a delivered lapse of a closed expectation, as while it ran', async () => {
    const { start, id, input, messageId } = await raiseFor('closed-delivered');
    await h.advanceTo(start + 2 * DAY);
    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');
    await reportFact(h, input.expectation.satisfiedBy.factKey, start + 2 * DAY);
    const closed = await h.until(id, (r) => r.closedAt !== undefined);

    const answer = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });

    expect(answer).toEqual({ result: 'delivered', entry: closed.lapses[0] });
  });

  it('re-sends a failed lapse from a run that carried it over, as continue-as-new hands it on', async () => {
    const { id, input, messageId, nextInput } = await refusedAndEnded('carried');
    const next = await h.client.workflow.start<typeof expectationWorkflow>('expectationWorkflow', {
      workflowId: input.links.self,
      taskQueue: h.taskQueue,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      args: [nextInput],
    });

    const answer = await resendLapse(h.client, id, { messageId, requestedBy: 'ops-admin' });
    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(answer.result).toBe('resent');
    expect((await next.describe()).status.name).toBe('RUNNING');
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'delivered', messageId, resends: 1 });
    expect(attemptsOf(messageId)).toEqual([
      expect.objectContaining({ messageId }),
      expect.objectContaining({ messageId, resend: 1 }),
    ]);
  });

  it("re-sends once when the resend comes in the continued run's first workflow task, before it resumes deliveries", async () => {
    const { id, input, messageId, nextInput } = await refusedAndEnded('first-task');

    // Start and update in one request: the run's first workflow task holds both, whatever the worker's timing.
    const next = new WithStartWorkflowOperation<typeof expectationWorkflow>('expectationWorkflow', {
      workflowId: input.links.self,
      taskQueue: h.taskQueue,
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      args: [nextInput],
    });
    const answer = await h.client.workflow.executeUpdateWithStart(resendLapseUpdate, {
      args: [{ messageId, requestedBy: 'ops-admin' }],
      startWorkflowOperation: next,
    });
    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');
    const history = await (await next.workflowHandle()).fetchHistory();
    const firstTask = history.events!.findIndex((event) => event.workflowTaskCompletedEventAttributes);

    expect(answer.result).toBe('resent');
    expect(history.events![firstTask + 1]?.workflowExecutionUpdateAcceptedEventAttributes).toBeTruthy();
    expect(record.lapses[0]!.delivery).toMatchObject({ status: 'delivered', messageId, resends: 1 });
    expect(await deliveriesScheduled(input.links.self)).toBe(1);
    expect(attemptsOf(messageId)).toEqual([
      expect.objectContaining({ messageId }),
      expect.objectContaining({ messageId, resend: 1 }),
    ]);
  });
});
