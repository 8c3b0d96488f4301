/**
 * What an expectation reads from its routers' histories before it lapses (DESIGN 3.3), on the time-skipping server:
 * facts stored by signal as a bridge stores them, counted by when a bridge received them (`receivedAt`) and by
 * nothing else: not by when the server wrote them, not by whether a worker has processed them yet.
 */
import { describe, expect, it } from 'vitest';
import { shipmentExpectation } from '../support/fixtures.js';
import { HOUR, raiseUnsubscribed, storeFact, useHarness } from './support.js';

const h = useHarness();
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Raises `<prefix>-…` with a horizon an hour after the server's now (`start`), stamped `raisedAt` by a bridge whose
 * clock is `bridgeAheadMs` ahead of the server's; started without its router subscription (nothing is forwarded to it).
 */
async function raiseWithHorizon(prefix: string, bridgeAheadMs = 0) {
  const start = await h.now();
  const id = h.id(prefix);
  const expectation = shipmentExpectation(id, start, 10 * HOUR, { horizon: iso(start + HOUR) });
  await raiseUnsubscribed(h, expectation, start, bridgeAheadMs);
  return { id, expectation, start };
}

describe('a stall read from the subject router', () => {
  it('is ruled out by a fact on the subject stored by signal before the horizon', async () => {
    const { id, expectation, start } = await raiseWithHorizon('stored-heard');
    await storeFact(h, `shipment/${id}/scanned`, start, { subject: expectation.subject });

    await h.advanceTo(start + 2 * HOUR);
    const record = await h.until(id, (r) => r.lastFactAt !== undefined);

    expect(record).toMatchObject({ state: 'open', lapses: [], lastFactAt: iso(start) });
  });

  it('is not ruled out by a fact a bridge received before the raise, however late it is stored', async () => {
    const { id, expectation, start } = await raiseWithHorizon('stored-before-raise');
    // A retry re-sending a fact with its first receipt, a minute before the raise: stored after the raise.
    await storeFact(h, `shipment/${id}/scanned`, start - 120_000, {
      subject: expectation.subject,
      receivedAt: iso(start - 60_000),
    });

    await h.advanceTo(start + 2 * HOUR);
    const record = await h.until(id, (r) => r.state === 'lapsed');

    expect(record.lapses.map((entry) => entry.lapse.lapse)).toEqual(['stalled']);
    expect(record.lapse?.lastFactAt).toBeUndefined();
  });

  it('counts a fact by its receipt on the bridge, though the server wrote it before the raise by its own clock', async () => {
    // The bridge's clock is a minute ahead of the server's: its raisedAt is later than the server's time of the fact.
    const { id, expectation, start } = await raiseWithHorizon('bridge-clock-ahead', 60_000);
    await storeFact(h, `shipment/${id}/scanned`, start, {
      subject: expectation.subject,
      receivedAt: iso(start + 61_000),
    });

    await h.advanceTo(start + 2 * HOUR);
    const record = await h.until(id, (r) => r.lastFactAt !== undefined);

    expect(record).toMatchObject({ state: 'open', lapses: [], lastFactAt: iso(start) });
  });
});

describe('an overdue read from the key router', () => {
  it('is satisfied by a fact stored by signal before the deadline that was forwarded to nobody', async () => {
    const { id, expectation, start } = await raiseWithHorizon('stored-key');
    await storeFact(h, expectation.satisfiedBy.factKey, start, { subject: expectation.subject });

    await h.advanceTo(start + 11 * HOUR);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(record).toMatchObject({ state: 'satisfied', late: false, lapses: [] });
  });

  it('waits while the router cannot be read, rather than lapse without the fact it stored, and reads again', async () => {
    const { id, expectation, start } = await raiseWithHorizon('stored-unreadable');
    await storeFact(h, expectation.satisfiedBy.factKey, start, { subject: expectation.subject });
    await h.advanceTo(start + 2 * HOUR);
    await h.until(id, (r) => r.lastFactAt !== undefined); // the horizon's read is done
    h.readsRefused.remaining = 3;

    // Due at 10 h: each refused read is made again a minute later, and the expectation neither lapses nor closes.
    await h.advanceTo(start + 10 * HOUR + 2 * 60_000);
    expect(await h.record(id)).toMatchObject({ state: 'open', lapses: [] });
    await h.advanceTo(start + 11 * HOUR);
    const record = await h.until(id, (r) => r.closedAt !== undefined);

    expect(h.readsRefused.remaining).toBe(0);
    expect(record).toMatchObject({ state: 'satisfied', lapses: [] });
  });
});
