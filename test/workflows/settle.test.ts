/**
 * The watcher's clock for a fact is when a bridge received it (DESIGN 3.2): an expectation that reaches a deadline
 * waits its settle interval before it lapses, so that a fact a bridge received before the deadline, and that reaches
 * the workflow only after it (Temporal or the worker behind), still counts; a fact received after the deadline comes
 * after the lapse, however soon it arrives. Facts on the subject are read from their router's history when the
 * expectation decides. On the time-skipping server, with facts stamped as a bridge stamps them.
 */
import { describe, expect, it } from 'vitest';
import type { Expectation } from '../../core/schemas/extension.js';
import { defaultSettings, shipmentExpectation } from '../support/fixtures.js';
import { HOUR, reportFact, useHarness } from './support.js';

const h = useHarness();
const SETTLE_MS = 60_000;
const settling = { settings: { ...defaultSettings, settle: 'PT1M' } };
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Raises `<prefix>-…` with the settle interval, due an hour after the server's now (`start`) unless `build` makes it
 * otherwise, and moves the clock `intoSettle` ms past that hour: into the settle interval of a deadline there.
 */
async function raiseIntoSettle(
  prefix: string,
  intoSettle: number,
  build: (id: string, start: number) => Expectation = (id, start) => shipmentExpectation(id, start, HOUR),
) {
  const start = await h.now();
  const id = h.id(prefix);
  const e = build(id, start);
  await h.raise(e, settling);
  await h.advanceTo(start + HOUR + intoSettle);
  return { start, id, e };
}

describe('an overdue deadline with a settle interval', () => {
  it('is met by a fact the bridge received before it, though the fact reaches the workflow after it', async () => {
    const { start, id, e } = await raiseIntoSettle('settle-met', SETTLE_MS / 2);

    await reportFact(h, e.satisfiedBy.factKey, start + HOUR - 5_000, { receivedAt: iso(start + HOUR - 1_000) });
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', late: false, lapses: [] });
  });

  it('lapses overdue before it takes a fact the bridge received after it, which is then late', async () => {
    const { start, id, e } = await raiseIntoSettle('settle-after', SETTLE_MS / 2);

    await reportFact(h, e.satisfiedBy.factKey, start + HOUR + 2_000, { receivedAt: iso(start + HOUR + 10_000) });
    // Held until the settle interval has passed: a fact received before the deadline may still be on its way.
    expect((await h.record(id)).state).toBe('open');
    await h.advanceTo(start + HOUR + 2 * SETTLE_MS);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record.state).toBe('satisfied');
    expect(record.late).toBe(true);
    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['overdue']);
  });

  it("is met by its key's fact though a later fact on the subject, received after the deadline, arrives first", async () => {
    const { start, id, e } = await raiseIntoSettle('settle-subject-first', SETTLE_MS / 4);

    // The scan comes first, the key's fact is still on its way (a busy router).
    await reportFact(h, `shipment/${id}/scanned`, start + HOUR + 1_000, {
      subject: e.subject,
      receivedAt: iso(start + HOUR + 2_000),
    });
    await reportFact(h, e.satisfiedBy.factKey, start + HOUR - 5_000, { receivedAt: iso(start + HOUR - 1_000) });
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', late: false, lapses: [] });
  });

  it('lapses once the settle interval has passed with no fact, not at the deadline', async () => {
    const { start, id } = await raiseIntoSettle('settle-none', SETTLE_MS / 2);
    expect((await h.record(id)).state).toBe('open');

    await h.advanceTo(start + HOUR + 2 * SETTLE_MS);
    const record = await h.until(id, (r) => r.state === 'lapsed');

    expect(Date.parse(record.lapses[0]!.lapse.lapsedAt)).toBeGreaterThanOrEqual(start + HOUR + SETTLE_MS);
  });
});

describe('a horizon with a settle interval', () => {
  const onSubject = (id: string, start: number) =>
    shipmentExpectation(id, start, 10 * HOUR, { horizon: iso(start + HOUR) });

  it('is not stalled by a subject fact the bridge received before it that arrives after it', async () => {
    const { start, id, e } = await raiseIntoSettle('horizon-met', SETTLE_MS / 2, onSubject);

    await reportFact(h, `other/${id}`, start + HOUR - 5_000, {
      subject: e.subject,
      receivedAt: iso(start + HOUR - 1_000),
    });
    await h.advanceTo(start + HOUR + 2 * SETTLE_MS);

    expect((await h.until(id, (r) => r.lastFactAt !== undefined)).lastFactAt).toBe(iso(start + HOUR - 5_000));
    expect((await h.record(id)).lapses).toEqual([]);
  });

  it.each([
    ['before it: not stalled', -1_000, []],
    ['after it: stalled', 5_000, ['stalled']],
  ])("reads its subject's router for a fact the bridge received %s", async (_case, receivedOffset, lapses) => {
    const start = await h.now();
    const id = h.id('horizon-router-behind');
    const e = onSubject(id, start);
    await h.raise(e, settling);

    await reportFact(h, `other/${id}`, start + HOUR - 5_000, {
      subject: e.subject,
      receivedAt: iso(start + HOUR + receivedOffset),
    });
    await h.advanceTo(start + HOUR + 3 * SETTLE_MS);
    const record = await h.until(
      id,
      (r) => r.lapses.length === lapses.length && (lapses.length > 0 || r.lastFactAt !== undefined),
    );

    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(lapses);
    // Received before the decision either way: the record's (and a stall's) last fact on the subject.
    expect(record.lastFactAt).toBe(iso(start + HOUR - 5_000));
  });

  it.each([
    ['with a subject fact received before it: satisfied, no stall', true, []],
    ['with none: stalled, then satisfied', false, ['stalled']],
  ])('decides the stall before a key fact received after the horizon, %s', async (_case, heard, lapses) => {
    const start = await h.now();
    const id = h.id('horizon-then-fact');
    const e = onSubject(id, start);
    await h.raise(e, settling);
    if (heard)
      await reportFact(h, `other/${id}`, start + HOUR - 5_000, {
        subject: e.subject,
        receivedAt: iso(start + HOUR - 1_000),
      });
    await h.advanceTo(start + HOUR + SETTLE_MS / 4);

    // The key's fact, received after the horizon, reaches the workflow before the horizon's own timer has fired.
    await reportFact(h, e.satisfiedBy.factKey, start + HOUR + 5_000, { receivedAt: iso(start + HOUR + 10_000) });
    await h.advanceTo(start + HOUR + 2 * SETTLE_MS);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record.state).toBe('satisfied');
    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(lapses);
  });

  it('is stalled though a subject fact the bridge received after it arrives within the settle interval', async () => {
    const { start, id, e } = await raiseIntoSettle('horizon-after', SETTLE_MS / 2, onSubject);

    await reportFact(h, `other/${id}`, start + HOUR + 1_000, {
      subject: e.subject,
      receivedAt: iso(start + HOUR + 5_000),
    });
    await h.advanceTo(start + HOUR + 2 * SETTLE_MS);
    const record = await h.until(id, (r) => r.state === 'lapsed');

    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['stalled']);
    expect(record.lastFactAt).toBe(iso(start + HOUR + 1_000));
  });
});
