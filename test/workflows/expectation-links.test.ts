/**
 * How expectations talk to each other on the time-skipping server: anchors, anchors superseded, skipped
 * (`after`), supersedes and lineage.
 */
import { describe, expect, it } from 'vitest';
import { withdrawExpectation } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { defaultSettings, shipmentExpectation } from '../support/fixtures.js';
import { DAY, HOUR, reportFact, untilStatus, useHarness } from './support.js';

const h = useHarness();

const iso = (ms: number) => new Date(ms).toISOString();

describe('anchors', () => {
  it('moves the current dueAt to the anchor observedAt plus offset; projectedDueAt stays', async () => {
    const start = await h.now();
    const anchorId = h.id('picked');
    const id = h.id('delivered');
    const anchor = await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    const projected = iso(start + 12 * DAY);
    await h.raise(
      shipmentExpectation(id, start, 12 * DAY, { anchor: { expectationId: anchorId, offset: 'P2D' }, grace: 'PT1H' }),
    );
    await h.until(id, (r) => r.state === 'open');

    await h.advanceTo(start + 3 * DAY);
    await reportFact(h, anchor.expectation.satisfiedBy.factKey, start + 3 * DAY - HOUR);
    const moved = await h.until(id, (r) => r.dueAt !== projected);

    expect(moved.dueAt).toBe(iso(start + 5 * DAY - HOUR));
    expect(moved.projectedDueAt).toBe(projected);
    expect(moved.state).toBe('open');

    await h.advanceTo(start + 5 * DAY + HOUR);
    const lapsed = await h.until(id, (r) => r.state === 'lapsed');
    expect(lapsed.lapse).toMatchObject({
      lapse: 'overdue',
      dueAt: iso(start + 5 * DAY - HOUR),
      projectedDueAt: projected,
    });
  });

  it('bounds a due time its anchor moves past the year 9999 to the end of 9999, and stays answerable', async () => {
    const start = await h.now();
    const anchorId = h.id('anchor');
    const id = h.id('far');
    const anchor = await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    // The bridge refuses such an offset at the raise; the workflow must survive one all the same (an older bridge,
    // or an anchor observed later than the bridge could foresee).
    await h.raise(
      shipmentExpectation(id, start, 12 * DAY, { anchor: { expectationId: anchorId, offset: 'P9998Y' }, grace: 'P1D' }),
    );
    await h.until(id, (r) => r.state === 'open');

    await reportFact(h, anchor.expectation.satisfiedBy.factKey, start + HOUR);
    const moved = await h.until(id, (r) => r.dueAt !== iso(start + 12 * DAY));
    const withdrawn = await withdrawExpectation(h.client, id, { reason: 'no longer needed' });

    expect(moved).toMatchObject({ state: 'open', dueAt: '9999-12-31T23:59:59.999Z' });
    expect(withdrawn).toBe('withdrawn');
    expect((await h.until(id, (r) => r.closedAt !== undefined)).state).toBe('withdrawn');
  });

  it('lapses overdue again when its anchor moves dueAt later than a due time it already lapsed on', async () => {
    const start = await h.now();
    const anchorId = h.id('anchor');
    const id = h.id('again');
    const anchor = await h.raise(shipmentExpectation(anchorId, start, 30 * DAY));
    await h.raise(shipmentExpectation(id, start, 5 * DAY, { anchor: { expectationId: anchorId, offset: 'P2D' } }));
    await h.advanceTo(start + 8 * DAY);
    await h.until(id, (r) => r.state === 'lapsed');

    await reportFact(h, anchor.expectation.satisfiedBy.factKey, start + 8 * DAY);
    await h.until(id, (r) => r.dueAt === iso(start + 10 * DAY));
    await h.advanceTo(start + 10 * DAY + HOUR);
    const record = await h.until(id, (r) => r.lapses.length === 2);

    expect(record.lapses.map((entry) => [entry.lapse.lapse, entry.lapse.dueAt])).toEqual([
      ['overdue', iso(start + 5 * DAY)],
      ['overdue', iso(start + 10 * DAY)],
    ]);
    expect(new Set(record.lapses.map((entry) => entry.delivery.messageId)).size).toBe(2);
  });

  it('reads at start an anchor that was satisfied (and closed) before the dependent was raised', async () => {
    const start = await h.now();
    const anchorId = h.id('early-anchor');
    const anchor = await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    await reportFact(h, anchor.expectation.satisfiedBy.factKey, start + HOUR);
    await untilStatus(h, expectationWorkflowId(anchorId), 'COMPLETED');

    const id = h.id('late-dependent');
    await h.raise(shipmentExpectation(id, start, 20 * DAY, { anchor: { expectationId: anchorId, offset: 'P1D' } }));
    const record = await h.until(id, (r) => r.dueAt !== r.projectedDueAt);

    expect(record.dueAt).toBe(iso(start + HOUR + DAY));
    expect(record.projectedDueAt).toBe(iso(start + 20 * DAY));
  });

  it('makes dependents follow the expectation that superseded their anchor', async () => {
    const start = await h.now();
    const anchorId = h.id('anchor-v1');
    const replacementId = h.id('anchor-v2');
    const id = h.id('follower');
    await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    await h.raise(shipmentExpectation(id, start, 20 * DAY, { anchor: { expectationId: anchorId, offset: 'P3D' } }));
    await h.until(id, (r) => r.state === 'open');

    const replacement = await h.raise(shipmentExpectation(replacementId, start, 12 * DAY, { supersedes: anchorId }), {
      lineage: 1,
    });
    await untilStatus(h, expectationWorkflowId(anchorId), 'COMPLETED');
    await reportFact(h, replacement.expectation.satisfiedBy.factKey, start + 2 * DAY);
    const record = await h.until(id, (r) => r.dueAt !== r.projectedDueAt);

    expect(record.dueAt).toBe(iso(start + 5 * DAY));
  });

  it('follows the replacement at start when its anchor was already superseded and closed', async () => {
    const start = await h.now();
    const anchorId = h.id('old-anchor');
    const replacementId = h.id('new-anchor');
    await h.raise(shipmentExpectation(anchorId, start, 10 * DAY));
    const replacement = await h.raise(shipmentExpectation(replacementId, start, 10 * DAY, { supersedes: anchorId }), {
      lineage: 1,
    });
    await untilStatus(h, expectationWorkflowId(anchorId), 'COMPLETED');

    const id = h.id('joins-late');
    await h.raise(shipmentExpectation(id, start, 20 * DAY, { anchor: { expectationId: anchorId, offset: 'P1D' } }));
    await h.until(id, (r) => r.state === 'open');
    await reportFact(h, replacement.expectation.satisfiedBy.factKey, start + DAY);
    const record = await h.until(id, (r) => r.dueAt !== r.projectedDueAt);

    expect(record.dueAt).toBe(iso(start + 2 * DAY));
  });
});

describe('skipped', () => {
  it('lapses A at once with satisfiedAfter [B] when B (after A) is satisfied while A is open', async () => {
    const start = await h.now();
    const a = h.id('picked-up');
    const b = h.id('delivered');
    const subject = { type: 'shipment', id: h.id('S') };
    await h.raise(shipmentExpectation(a, start, 10 * DAY, { subject }));
    const later = await h.raise(shipmentExpectation(b, start, 20 * DAY, { subject, after: [a] }));
    await h.until(a, (r) => r.state === 'open');

    await reportFact(h, later.expectation.satisfiedBy.factKey, start + HOUR);
    const record = await h.until(a, (r) => r.lapses[0]?.delivery.status === 'delivered');

    expect(record.state).toBe('lapsed');
    expect(record.lapse).toMatchObject({ lapse: 'skipped', satisfiedAfter: [b], dueAt: iso(start + 10 * DAY) });
    expect(Date.parse(record.lapse!.lapsedAt)).toBeLessThan(start + HOUR + 60_000);
    expect(h.deliveries.filter((d) => d.lapse.expectationId === a).map((d) => d.lapse.lapse)).toEqual(['skipped']);
  });

  it('raises one skipped lapse per dueAt even when two later expectations are satisfied', async () => {
    const start = await h.now();
    const a = h.id('first');
    const subject = { type: 'shipment', id: h.id('S') };
    await h.raise(shipmentExpectation(a, start, 10 * DAY, { subject }));
    const b1 = await h.raise(shipmentExpectation(h.id('second'), start, 20 * DAY, { subject, after: [a] }));
    const b2 = await h.raise(shipmentExpectation(h.id('third'), start, 20 * DAY, { subject, after: [a] }));

    await reportFact(h, b1.expectation.satisfiedBy.factKey, start);
    await h.until(b1.expectation.expectationId, (r) => r.closedAt !== undefined);
    await h.until(a, (r) => r.state === 'lapsed');
    await reportFact(h, b2.expectation.satisfiedBy.factKey, start);
    await h.until(b2.expectation.expectationId, (r) => r.closedAt !== undefined);

    expect((await h.record(a)).lapses.map((entry) => entry.lapse.satisfiedAfter)).toEqual([
      [b1.expectation.expectationId],
    ]);
  });

  it('lists in satisfiedAfter every later expectation one fact satisfied, gathered over the settle interval', async () => {
    const start = await h.now();
    const a = h.id('gathered');
    const subject = { type: 'shipment', id: h.id('S') };
    const settling = { settings: { ...defaultSettings, settle: 'PT10S' } };
    await h.raise(shipmentExpectation(a, start, 10 * DAY, { subject }), settling);
    const factKey = `shipment/${subject.id}/delivered`;
    const later = [h.id('later-1'), h.id('later-2'), h.id('later-3')];
    for (const id of later) {
      await h.raise(shipmentExpectation(id, start, 20 * DAY, { subject, after: [a], satisfiedBy: { factKey } }));
    }

    await reportFact(h, factKey, start + HOUR, { receivedAt: iso(start + HOUR) });
    for (const id of later) await h.until(id, (r) => r.closedAt !== undefined);
    await h.advanceTo((await h.now()) + 11_000);
    const record = await h.until(a, (r) => r.state === 'lapsed');

    expect(record.lapses).toHaveLength(1);
    expect([...record.lapse!.satisfiedAfter!].sort()).toEqual([...later].sort());
  });

  it('does not lapse A when a bridge received A’s fact before B’s, though A hears of it after B', async () => {
    const start = await h.now();
    const a = h.id('first-received');
    const subject = { type: 'shipment', id: h.id('S') };
    const first = await h.raise(shipmentExpectation(a, start, 10 * DAY, { subject }), {
      settings: { ...defaultSettings, settle: 'PT10S' },
    });
    const b = await h.raise(shipmentExpectation(h.id('second-received'), start, 20 * DAY, { subject, after: [a] }));

    await reportFact(h, b.expectation.satisfiedBy.factKey, start + HOUR, { receivedAt: iso(start + 2_000) });
    await h.until(b.expectation.expectationId, (r) => r.closedAt !== undefined);
    await reportFact(h, first.expectation.satisfiedBy.factKey, start + HOUR, { receivedAt: iso(start + 1_000) });

    const record = await h.until(a, (r) => r.closedAt !== undefined);
    expect(record.state).toBe('satisfied');
    expect(record.lapses).toEqual([]);
  });

  it('does not lapse A when A was satisfied first', async () => {
    const start = await h.now();
    const a = h.id('in-order-1');
    const b = h.id('in-order-2');
    const subject = { type: 'shipment', id: h.id('S') };
    const first = await h.raise(shipmentExpectation(a, start, 10 * DAY, { subject }));
    const second = await h.raise(shipmentExpectation(b, start, 20 * DAY, { subject, after: [a] }));
    await reportFact(h, first.expectation.satisfiedBy.factKey, start);
    await h.until(a, (r) => r.closedAt !== undefined);

    await reportFact(h, second.expectation.satisfiedBy.factKey, start + HOUR);

    expect((await h.until(b, (r) => r.closedAt !== undefined)).state).toBe('satisfied');
    expect((await h.record(a)).lapses).toEqual([]);
  });
});

describe('supersedes and lineage', () => {
  it('withdraws each superseded expectation and counts lineage along a chain', async () => {
    const start = await h.now();
    const ids = [h.id('eta-1'), h.id('eta-2'), h.id('eta-3')];
    await h.raise(shipmentExpectation(ids[0]!, start, 5 * DAY));
    for (const [i, id] of ids.slice(1).entries()) {
      const previous = await h.record(ids[i]!);
      // What the bridge does: lineage is the superseded one's lineage + 1.
      await h.raise(shipmentExpectation(id, start, (6 + i) * DAY, { supersedes: ids[i] }), {
        lineage: previous.lineage + 1,
      });
      await h.until(ids[i]!, (r) => r.closedAt !== undefined);
    }

    const records = await Promise.all(ids.map((id) => h.record(id)));
    expect(records.map((r) => [r.state, r.lineage, r.withdrawnReason, r.supersededBy])).toEqual([
      ['withdrawn', 0, `superseded by ${ids[1]}`, ids[1]],
      ['withdrawn', 1, `superseded by ${ids[2]}`, ids[2]],
      ['open', 2, undefined, undefined],
    ]);

    await h.advanceTo(start + 8 * DAY + HOUR);
    const lapsed = await h.until(ids[2]!, (r) => r.state === 'lapsed');
    expect(lapsed.lapse?.lineage).toBe(2);
  });
});
