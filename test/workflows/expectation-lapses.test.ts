/**
 * The expectation workflow's own clock on the time-skipping server: satisfaction, overdue, late facts, stalls,
 * the late window, withdrawal, lapse delivery records and the operator's view.
 */
import { describe, expect, it } from 'vitest';
import { getExpectationRecord, withdrawExpectation } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { lapseMessageId } from '../../core/message-id.js';
import { historyText } from '../support/history-text.js';
import { ExpectationDueAt, ExpectationState } from '../../workflows/search-attributes.js';
import { shipmentExpectation } from '../support/fixtures.js';
import {
  DAY,
  HOUR,
  raiseOpen,
  raiseUnsubscribed,
  REJECTING_AGENT,
  reportFact,
  untilStatus,
  useHarness,
  workflowStatus,
} from './support.js';

const h = useHarness();

describe('satisfaction', () => {
  it('is by exact fact key: a different key does nothing, the expected key satisfies', async () => {
    const { start, id, expectation } = await raiseOpen(h, 'exact', 10 * DAY);

    await reportFact(h, `${expectation.satisfiedBy.factKey}/extra`, start, { subject: expectation.subject });
    await reportFact(h, expectation.satisfiedBy.factKey.toUpperCase(), start);
    expect((await h.record(id)).state).toBe('open');

    await reportFact(h, expectation.satisfiedBy.factKey, start + HOUR);
    const record = await h.until(id, (r) => r.closedAt !== undefined);
    const { events } = await h.client.workflow.getHandle(expectationWorkflowId(id)).fetchHistory();
    const signals = (events ?? []).flatMap((e) => e.workflowExecutionSignaledEventAttributes?.signalName ?? []);

    expect(record).toMatchObject({
      state: 'satisfied',
      observedAt: new Date(start + HOUR).toISOString(),
      late: false,
      satisfiedBy: { factKey: expectation.satisfiedBy.factKey, source: 'carrier-feed' },
    });
    expect(record.lapses).toEqual([]);
    // The other keys' facts were never sent to it: its one signal is its own key's forward.
    expect(signals).toEqual(['fact']);
    expect(await workflowStatus(h, expectationWorkflowId(id))).toBe('COMPLETED');
  });

  it('ignores a re-delivery of the satisfying fact', async () => {
    const start = await h.now();
    const id = h.id('redeliver');
    const { expectation } = await h.raise(shipmentExpectation(id, start, 10 * DAY));

    expect(await reportFact(h, expectation.satisfiedBy.factKey, start)).toBe('recorded');
    const satisfied = await h.until(id, (r) => r.closedAt !== undefined);
    expect(await reportFact(h, expectation.satisfiedBy.factKey, start)).toBe('duplicate');

    expect(await h.record(id)).toEqual(satisfied);
  });
});

describe('overdue', () => {
  it('lapses a 90-day expectation with 6 hours of grace at day 90 + 6 h and not a second before', async () => {
    const { id, expectation } = await raiseOpen(h, 'overdue', 90 * DAY, { grace: 'PT6H' });
    const overdueAt = Date.parse(expectation.dueAt) + 6 * HOUR;

    await h.advanceTo(overdueAt - 1000);
    expect((await h.record(id)).state).toBe('open');
    expect(h.deliveries.filter((d) => d.lapse.expectationId === id)).toEqual([]);

    await h.advanceTo(overdueAt + 1000);
    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(record.state).toBe('lapsed');
    expect(record.lapse).toMatchObject({
      expectationId: id,
      kind: 'delivery',
      lapse: 'overdue',
      subject: expectation.subject,
      expects: expectation.expects,
      projectedDueAt: expectation.dueAt,
      dueAt: expectation.dueAt,
      lineage: 0,
    });
    expect(record.lapse?.lastFactAt).toBeUndefined();
    expect(Date.parse(record.lapse!.lapsedAt)).toBeGreaterThanOrEqual(overdueAt);
    expect(Date.parse(record.lapse!.lapsedAt)).toBeLessThan(overdueAt + 10_000);
    const messageId = lapseMessageId(id, 'overdue', expectation.dueAt);
    expect(record.lapses[0]?.delivery).toMatchObject({ status: 'delivered', messageId });
    expect(record.lapseTaskId).toBe(`task-${messageId}`);
    expect(h.deliveries.filter((d) => d.lapse.expectationId === id)).toEqual([
      expect.objectContaining({ messageId, origin: { taskId: 'task-1', contextId: 'ctx-1' } }),
    ]);
  });

  it('is satisfied by a late fact on day 95, with late: true', async () => {
    const start = await h.now();
    const id = h.id('late');
    const { expectation } = await h.raise(shipmentExpectation(id, start, 90 * DAY, { grace: 'PT6H' }));
    await h.advanceTo(start + 95 * DAY);
    await h.until(id, (r) => r.state === 'lapsed');

    await reportFact(h, expectation.satisfiedBy.factKey, start + 94 * DAY);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({
      state: 'satisfied',
      late: true,
      observedAt: new Date(start + 94 * DAY).toISOString(),
    });
    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['overdue']);
  });

  it('raises at most one overdue lapse for the same dueAt', async () => {
    const start = await h.now();
    const id = h.id('once');
    await h.raise(shipmentExpectation(id, start, DAY));
    await h.advanceTo(start + DAY + HOUR);
    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    await h.advanceTo(start + 20 * DAY);

    expect((await h.record(id)).lapses).toHaveLength(1);
    expect(h.deliveries.filter((d) => d.lapse.expectationId === id)).toHaveLength(1);
  });

  it('lapses at once when dueAt plus grace is already past at raising', async () => {
    const start = await h.now();
    const id = h.id('past');
    await h.raise(shipmentExpectation(id, start, -2 * DAY, { grace: 'P1D' }));

    const record = await h.until(id, (r) => r.state === 'lapsed');

    expect(record.lapse?.lapse).toBe('overdue');
    expect(Date.parse(record.lapse!.lapsedAt)).toBeLessThan(start + 60_000);
  });
});

describe('overdue, with the fact still on its way', () => {
  /**
   * Started without its subscriptions, as a raise whose router forwards are stuck behind a backlog: the router records
   * the fact but sends it to nobody. What it recorded must count by when the bridge received it.
   */
  async function raiseBehind(prefix: string) {
    const start = await h.now();
    const id = h.id(prefix);
    const expectation = shipmentExpectation(id, start, HOUR);
    await raiseUnsubscribed(h, expectation, start);
    return { id, expectation, start };
  }

  it('is satisfied, not lapsed, by a fact its router recorded before the deadline and had not sent on', async () => {
    const { id, expectation, start } = await raiseBehind('forward-behind');
    const receivedAt = new Date(start + 60_000).toISOString();
    expect(await reportFact(h, expectation.satisfiedBy.factKey, start, { receivedAt })).toBe('recorded');

    await h.advanceTo(start + 2 * HOUR);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', late: false, lapses: [] });
    expect(record.satisfiedBy).toMatchObject({ factKey: expectation.satisfiedBy.factKey, receivedAt });
  });

  it('lapses overdue when the bridge received the fact only after the deadline', async () => {
    const { id, expectation, start } = await raiseBehind('forward-after');
    const receivedAt = new Date(start + HOUR + 60_000).toISOString();
    await reportFact(h, expectation.satisfiedBy.factKey, start, { receivedAt });

    await h.advanceTo(start + 2 * HOUR);
    const record = await h.until(id, (r) => r.lapses.length > 0);

    expect(record.state).toBe('lapsed');
    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['overdue']);
  });
});

describe('stalled', () => {
  it('lapses at a 6-month horizon when no fact on the subject arrived', async () => {
    const start = await h.now();
    const id = h.id('stalled');
    const horizon = start + 182 * DAY;
    await h.raise(shipmentExpectation(id, start, 365 * DAY, { horizon: new Date(horizon).toISOString() }));

    await h.advanceTo(horizon - 1000);
    expect((await h.record(id)).state).toBe('open');
    await h.advanceTo(horizon + 1000);
    const record = await h.until(id, (r) => r.state === 'lapsed');

    expect(record.lapse).toMatchObject({ lapse: 'stalled', dueAt: record.dueAt });
    expect(record.lapse?.lastFactAt).toBeUndefined();
    expect(Date.parse(record.lapse!.lapsedAt)).toBeGreaterThanOrEqual(horizon);
  });

  it('does not lapse at the horizon when a fact of any kind on the subject arrived', async () => {
    const start = await h.now();
    const id = h.id('alive');
    const horizon = start + 182 * DAY;
    const { expectation } = await h.raise(
      shipmentExpectation(id, start, 365 * DAY, { horizon: new Date(horizon).toISOString() }),
    );
    await h.advanceTo(start + 60 * DAY);
    await reportFact(h, 'shipment/customs-cleared', start + 59 * DAY, { subject: expectation.subject });

    await h.advanceTo(horizon + DAY);
    const record = await h.until(id, (r) => r.lastFactAt !== undefined);

    expect(record.state).toBe('open');
    expect(record.lapses).toEqual([]);
    expect(record.lastFactAt).toBe(new Date(start + 59 * DAY).toISOString());
  });
});

describe('closing', () => {
  it('closes lateWindow (30 days) after its last lapse, and not before', async () => {
    const start = await h.now();
    const id = h.id('window');
    await h.raise(shipmentExpectation(id, start, DAY));
    await h.advanceTo(start + DAY + HOUR);
    const lapsed = await h.until(id, (r) => r.state === 'lapsed');
    const closesAt = Date.parse(lapsed.lapse!.lapsedAt) + 30 * DAY;

    await h.advanceTo(closesAt - 1000);
    expect(await workflowStatus(h, expectationWorkflowId(id))).toBe('RUNNING');
    await h.advanceTo(closesAt + 1000);
    await untilStatus(h, expectationWorkflowId(id), 'COMPLETED');

    const record = await h.record(id);
    expect(record.state).toBe('lapsed');
    expect(Date.parse(record.closedAt!)).toBeGreaterThanOrEqual(closesAt);
  });
});

describe('withdraw', () => {
  it('withdraws an open expectation with its reason, then reports not-open, and unknown ids as unknown', async () => {
    const { id } = await raiseOpen(h, 'withdraw', 10 * DAY);

    expect(await withdrawExpectation(h.client, id, { reason: 'order cancelled' })).toBe('withdrawn');
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'withdrawn', withdrawnReason: 'order cancelled' });
    expect(await withdrawExpectation(h.client, id, { reason: 'again' })).toBe('not-open');
    expect(await withdrawExpectation(h.client, h.id('never-raised'), { reason: 'x' })).toBe('unknown');
    expect(await getExpectationRecord(h.client, h.id('never-raised'))).toBeUndefined();
  });

  it('withdraws a lapsed expectation, which is still open', async () => {
    const start = await h.now();
    const id = h.id('withdraw-lapsed');
    await h.raise(shipmentExpectation(id, start, DAY));
    await h.advanceTo(start + 2 * DAY);
    await h.until(id, (r) => r.state === 'lapsed');

    expect(await withdrawExpectation(h.client, id, { reason: 'gave up' })).toBe('withdrawn');

    expect(await h.until(id, (r) => r.closedAt !== undefined)).toMatchObject({
      state: 'withdrawn',
      withdrawnReason: 'gave up',
    });
  });

  it('ignores a withdraw once satisfied', async () => {
    const start = await h.now();
    const id = h.id('withdraw-satisfied');
    const { expectation, links } = await h.raise(shipmentExpectation(id, start, 10 * DAY));
    await reportFact(h, expectation.satisfiedBy.factKey, start);
    await h.until(id, (r) => r.closedAt !== undefined);

    expect(await withdrawExpectation(h.client, id, { reason: 'late' })).toBe('not-open');
    expect((await h.record(id)).state).toBe('satisfied');
    expect(links.self).toBe(expectationWorkflowId(id));
  });
});

describe('lapse delivery records', () => {
  it('hands the delivery activity the agent principal id only, never a card URL or credential', async () => {
    const start = await h.now();
    const id = h.id('by-id');
    const agent = {
      id: 'shipping-agent',
      cardUrl: 'http://127.0.0.1:9/card',
      authorization: 'Bearer never-in-temporal',
    };
    await h.raise(shipmentExpectation(id, start, DAY), { agent });
    await h.advanceTo(start + 2 * DAY);

    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(h.deliveries.filter((d) => d.lapse.expectationId === id).map((d) => d.agent)).toEqual([
      { id: 'shipping-agent' },
    ]);
    const history = await historyText(h.client, expectationWorkflowId(id));
    expect(history).toContain('shipping-agent');
    expect(history).not.toContain('never-in-temporal');
  });

  it('records a delivery the agent rejected as failed, with the error, and does not retry it', async () => {
    const start = await h.now();
    const id = h.id('rejected');
    await h.raise(shipmentExpectation(id, start, DAY), { agent: { id: REJECTING_AGENT } });
    await h.advanceTo(start + 2 * DAY);

    const record = await h.until(id, (r) => r.lapses[0]?.delivery.status === 'failed');

    expect(record.lapses[0]?.delivery.error).toBe('agent answered 400');
    expect(record.lapseTaskId).toBeUndefined();
    expect(h.deliveries.filter((d) => d.lapse.expectationId === id)).toHaveLength(1);
  });
});

describe("operator's view", () => {
  it('upserts ExpectationState and ExpectationDueAt and describes the expectation in the UI', async () => {
    const start = await h.now();
    const id = h.id('ui');
    const { expectation } = await h.raise(shipmentExpectation(id, start, DAY, { grace: 'PT1H' }));
    const handle = h.client.workflow.getHandle(expectationWorkflowId(id));
    await h.advanceTo(start + 2 * DAY);
    await h.until(id, (r) => r.lapses[0]?.delivery.status === 'delivered');

    const description = await handle.describe();
    const metadata = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };

    expect(description.typedSearchAttributes.get(ExpectationState)).toBe('lapsed');
    expect(description.typedSearchAttributes.get(ExpectationDueAt)?.toISOString()).toBe(expectation.dueAt);
    expect(await description.staticSummary()).toBe(`delivery: the shipment is delivered (due ${expectation.dueAt})`);
    expect(await description.staticDetails()).toContain(`| expectationId | ${id} |`);
    expect(metadata.currentDetails).toContain('**lapsed**');
    expect(metadata.currentDetails).toMatch(/- \*\*overdue\*\* at \S+Z \(due \S+Z\) · delivered/);
  });
});
