/**
 * Parts of the lapse rules (DESIGN 3.3, 3.5, 6) that only replayed histories covered before, on the time-skipping
 * server: what a lapse says about facts on the subject (`lastFactAt`), a stalled and then an overdue lapse on one
 * expectation, superseding an expectation that has lapsed, the summaries the Temporal UI shows on the timers and
 * activities of an expectation's history, and the `ExpectationLate` search attribute the list's `late` filter reads.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { lapseMessageId } from '../../core/message-id.js';
import { withdrawExpectation } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { ExpectationLate, ExpectationState } from '../../workflows/search-attributes.js';
import type { Expectation } from '../../core/schemas/extension.js';
import { shipmentExpectation } from '../support/fixtures.js';
import { DAY, HOUR, raiseOpen, reportFact, untilStatus, useHarness } from './support.js';

const h = useHarness();

const iso = (ms: number) => new Date(ms).toISOString();

/** The summaries of the timers and of the activities in a workflow's history, in order, as the UI lists them. */
async function historySummaries(workflowId: string): Promise<{ timers: string[]; activities: string[] }> {
  const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
  const timers: string[] = [];
  const activities: string[] = [];
  for (const event of history.events ?? []) {
    const payload = event.userMetadata?.summary;
    const summary = payload ? defaultPayloadConverter.fromPayload<string>(payload) : undefined;
    if (event.timerStartedEventAttributes) timers.push(summary ?? '(none)');
    if (event.activityTaskScheduledEventAttributes) activities.push(summary ?? '(none)');
  }
  return { timers, activities };
}

/**
 * Raises a shipment expectation `<prefix>-…` with `extra`, due `dueIn` ms after the server's now (`start`) and with
 * its horizon `horizonIn` ms after it.
 */
async function raiseWithHorizon(
  prefix: string,
  { dueIn, horizonIn }: { dueIn: number; horizonIn: number },
  extra: Partial<Expectation> = {},
) {
  const start = await h.now();
  const id = h.id(prefix);
  const horizon = start + horizonIn;
  const { expectation } = await h.raise(shipmentExpectation(id, start, dueIn, { ...extra, horizon: iso(horizon) }));
  return { start, id, horizon, expectation };
}

/** Each distinct item once, in the order it first appears (a timer is started again each time the loop wakes). */
const distinct = (items: string[]) => [...new Set(items)];

describe('lastFactAt on a lapse', () => {
  it('carries the latest observedAt of the facts on the subject since raising, not the last to arrive', async () => {
    const { start, id, expectation } = await raiseOpen(h, 'last-fact', 10 * DAY);

    await h.advanceTo(start + 4 * DAY);
    await reportFact(h, `shipment/${id}/scanned`, start + 3 * DAY, { subject: expectation.subject });
    // Arrives later but was observed earlier: it does not move lastFactAt back.
    await reportFact(h, `shipment/${id}/labelled`, start + DAY, { subject: expectation.subject });
    // Another subject's fact does not count.
    await reportFact(h, `shipment/${id}/other`, start + 4 * DAY - HOUR, {
      subject: { type: 'shipment', id: `${id}-other` },
    });
    await h.advanceTo(start + 10 * DAY + HOUR);
    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(record.lapse).toMatchObject({ lapse: 'overdue', lastFactAt: iso(start + 3 * DAY) });
    expect(record.lastFactAt).toBe(iso(start + 3 * DAY));
    // The agent's lapse task says the same.
    const delivered = h.deliveries.filter((d) => d.lapse.expectationId === id);
    expect(delivered.map((d) => d.lapse.lastFactAt)).toEqual([iso(start + 3 * DAY)]);
  });
});

describe('stalled, then overdue', () => {
  it('raises both lapses on the same dueAt, each at its own instant, each delivered under its own messageId', async () => {
    const { id, horizon, expectation } = await raiseWithHorizon(
      'stalled-overdue',
      { dueIn: 10 * DAY, horizonIn: 5 * DAY },
      { grace: 'PT6H' },
    );
    const overdueAt = Date.parse(expectation.dueAt) + 6 * HOUR;

    await h.advanceTo(horizon + 1000);
    const stalled = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');
    await h.advanceTo(overdueAt - 1000);
    expect((await h.record(id)).lapses).toHaveLength(1);
    await h.advanceTo(overdueAt + 1000);
    const record = await h.until(id, (r) => r.lapses[1]?.delivery.status === 'delivered');

    expect(stalled.state).toBe('lapsed');
    const [first, second] = record.lapses;
    expect(first!.lapse).toEqual(stalled.lapses[0]!.lapse);
    expect(first!.lapse).toMatchObject({
      lapse: 'stalled',
      dueAt: expectation.dueAt,
      projectedDueAt: expectation.dueAt,
    });
    expect(first!.lapse.lastFactAt).toBeUndefined();
    expect(Date.parse(first!.lapse.lapsedAt)).toBeGreaterThanOrEqual(horizon);
    expect(Date.parse(first!.lapse.lapsedAt)).toBeLessThan(horizon + 10_000);
    expect(second!.lapse).toMatchObject({
      lapse: 'overdue',
      dueAt: expectation.dueAt,
      projectedDueAt: expectation.dueAt,
    });
    expect(Date.parse(second!.lapse.lapsedAt)).toBeGreaterThanOrEqual(overdueAt);
    expect(Date.parse(second!.lapse.lapsedAt)).toBeLessThan(overdueAt + 10_000);
    const messageIds = [
      lapseMessageId(id, 'stalled', expectation.dueAt),
      lapseMessageId(id, 'overdue', expectation.dueAt),
    ];
    expect(record.lapses.map((entry) => [entry.delivery.status, entry.delivery.messageId, entry.lapseTaskId])).toEqual(
      messageIds.map((messageId) => ['delivered', messageId, `task-${messageId}`]),
    );
    // The top-level lapse is the latest one.
    expect(record.state).toBe('lapsed');
    expect(record.lapse).toEqual(second!.lapse);
    expect(record.lapseTaskId).toBe(`task-${messageIds[1]}`);
    expect(h.deliveries.filter((d) => d.lapse.expectationId === id).map((d) => d.messageId)).toEqual(messageIds);
  });

  it('closes the late window after the overdue lapse, the last one, not after the stalled one', async () => {
    const { start, id } = await raiseWithHorizon('window-after-last', { dueIn: 20 * DAY, horizonIn: 2 * DAY });
    await h.advanceTo(start + 20 * DAY + HOUR);
    const lapsed = await h.until(id, (r) => r.lapses.length === 2);
    const [stalled, overdue] = lapsed.lapses.map((entry) => Date.parse(entry.lapse.lapsedAt));

    await h.advanceTo(stalled! + 30 * DAY + HOUR);
    expect((await h.record(id)).closedAt).toBeUndefined();
    await h.advanceTo(overdue! + 30 * DAY + HOUR);
    await untilStatus(h, expectationWorkflowId(id), 'COMPLETED');

    const record = await h.record(id);
    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['stalled', 'overdue']);
    expect(Date.parse(record.closedAt!)).toBeGreaterThanOrEqual(overdue! + 30 * DAY);
  });
});

describe('superseding a lapsed expectation', () => {
  it('withdraws the lapsed one, which keeps its lapse; the new one starts open, one lineage further', async () => {
    const start = await h.now();
    const oldId = h.id('lapsed-eta');
    const newId = h.id('new-eta');
    const old = await h.raise(shipmentExpectation(oldId, start, DAY));
    await h.advanceTo(start + DAY + HOUR);
    const lapsed = await h.until(oldId, (r) => r.lapses[0]?.delivery.status === 'delivered');

    await h.raise(shipmentExpectation(newId, start, 5 * DAY, { supersedes: oldId }), { lineage: lapsed.lineage + 1 });
    const superseded = await h.until(oldId, (r) => r.closedAt !== undefined);
    const replacement = await h.record(newId);

    expect(superseded).toMatchObject({
      state: 'withdrawn',
      withdrawnReason: `superseded by ${newId}`,
      supersededBy: newId,
      lineage: 0,
      lapse: lapsed.lapse,
    });
    expect(superseded.lapses).toEqual(lapsed.lapses);
    expect(superseded.satisfiedBy).toBeUndefined();
    expect(replacement).toMatchObject({ state: 'open', lineage: 1, lapses: [] });
    expect(replacement.expectation.supersedes).toBe(oldId);
    expect(replacement.closedAt).toBeUndefined();

    // The old one's fact key satisfies nothing any more; the new one lapses on its own dueAt, with its lineage.
    await reportFact(h, old.expectation.satisfiedBy.factKey, start + 2 * DAY);
    await h.advanceTo(start + 5 * DAY + HOUR);
    const newLapsed = await h.until(newId, (r) => r.state === 'lapsed');
    expect(newLapsed.lapse).toMatchObject({ expectationId: newId, lapse: 'overdue', lineage: 1 });
    expect(await h.record(oldId)).toEqual(superseded);
  });

  it('abandons the lapsed one’s delivery still in retry, saying why', async () => {
    const start = await h.now();
    const oldId = h.id('retrying-eta');
    const newId = h.id('new-eta');
    const agentId = h.id('down-agent');
    h.faults.set(agentId, 'unavailable');
    await h.raise(shipmentExpectation(oldId, start, DAY), { agent: { id: agentId } });
    await h.advanceTo(start + DAY + HOUR);
    await h.until(oldId, (r) => r.state === 'lapsed' && h.deliveries.some((d) => d.lapse.expectationId === oldId));

    await h.raise(shipmentExpectation(newId, start, 5 * DAY, { supersedes: oldId }), {
      agent: { id: agentId },
      lineage: 1,
    });
    const superseded = await h.until(oldId, (r) => r.closedAt !== undefined);

    expect(superseded.state).toBe('withdrawn');
    expect(superseded.lapses.map((entry) => [entry.delivery.status, entry.delivery.error])).toEqual([
      ['abandoned', 'the expectation was withdrawn before the lapse task was delivered'],
    ]);
    expect(superseded.lapseTaskId).toBeUndefined();
    h.faults.delete(agentId);
  });
});

describe('summaries on timers and activities (the Temporal UI)', () => {
  it('names each deadline a timer waits for and each lapse a delivery activity sends', async () => {
    const { start, id, horizon, expectation } = await raiseWithHorizon(
      'summaries',
      { dueIn: 5 * DAY, horizonIn: 2 * DAY },
      { grace: 'PT1H' },
    );
    await h.advanceTo(start + 5 * DAY + 2 * HOUR);
    const lapsed = await h.until(
      id,
      (r) => r.lapses.length === 2 && r.lapses.every((e) => e.delivery.status === 'delivered'),
    );
    const closesAt = Date.parse(lapsed.lapses[1]!.lapse.lapsedAt) + 30 * DAY;
    await h.advanceTo(closesAt + HOUR);
    await untilStatus(h, expectationWorkflowId(id), 'COMPLETED');

    const { timers, activities } = await historySummaries(expectationWorkflowId(id));

    expect(distinct(timers)).toEqual([
      `stalled check at ${iso(horizon)}`,
      `overdue check at ${iso(Date.parse(expectation.dueAt) + HOUR)}`,
      `late window ends at ${iso(closesAt)}`,
    ]);
    expect(activities).toEqual(['deliver stalled lapse to shipping-agent', 'deliver overdue lapse to shipping-agent']);
  });

  it('names the anchor a dependent links to', async () => {
    const start = await h.now();
    const anchorId = h.id('summary-anchor');
    const id = h.id('summary-dependent');
    await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    await h.raise(shipmentExpectation(id, start, 12 * DAY, { anchor: { expectationId: anchorId, offset: 'P2D' } }));
    // The record is there from the start (the memo); the link is made in the dependent's first workflow task.
    const deadline = Date.now() + 15_000;
    let activities = (await historySummaries(expectationWorkflowId(id))).activities;
    while (activities.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      activities = (await historySummaries(expectationWorkflowId(id))).activities;
    }

    expect(activities).toEqual([`link to anchor ${expectationWorkflowId(anchorId)}`]);
  });
});

describe("ExpectationLate (the list's late filter)", () => {
  const attributesOf = async (id: string) =>
    (await h.client.workflow.getHandle(expectationWorkflowId(id)).describe()).typedSearchAttributes;

  it('is set with the satisfaction: true for a fact observed after dueAt, false for one on time; absent before', async () => {
    const start = await h.now();
    const lateId = h.id('late-attr');
    const onTimeId = h.id('on-time-attr');
    const late = await h.raise(shipmentExpectation(lateId, start, DAY));
    const onTime = await h.raise(shipmentExpectation(onTimeId, start, 3 * DAY));
    await h.advanceTo(start + 2 * DAY);
    await h.until(lateId, (r) => r.state === 'lapsed');
    const whileLapsed = await attributesOf(lateId);

    await reportFact(h, late.expectation.satisfiedBy.factKey, start + DAY + HOUR);
    await reportFact(h, onTime.expectation.satisfiedBy.factKey, start + 2 * DAY);
    await untilStatus(h, expectationWorkflowId(lateId), 'COMPLETED');
    await untilStatus(h, expectationWorkflowId(onTimeId), 'COMPLETED');

    expect([whileLapsed.get(ExpectationState), whileLapsed.get(ExpectationLate)]).toEqual(['lapsed', undefined]);
    const [lateAttributes, onTimeAttributes] = [await attributesOf(lateId), await attributesOf(onTimeId)];
    expect([lateAttributes.get(ExpectationState), lateAttributes.get(ExpectationLate)]).toEqual(['satisfied', true]);
    expect([onTimeAttributes.get(ExpectationState), onTimeAttributes.get(ExpectationLate)]).toEqual([
      'satisfied',
      false,
    ]);
    expect([(await h.record(lateId)).late, (await h.record(onTimeId)).late]).toEqual([true, false]);
  });

  it('is never set on an expectation that is withdrawn', async () => {
    const { id } = await raiseOpen(h, 'withdrawn-attr', DAY);
    expect(await withdrawExpectation(h.client, id, { reason: 'cancelled' })).toBe('withdrawn');
    await untilStatus(h, expectationWorkflowId(id), 'COMPLETED');

    const attributes = await attributesOf(id);

    expect([attributes.get(ExpectationState), attributes.get(ExpectationLate)]).toEqual(['withdrawn', undefined]);
  });
});
