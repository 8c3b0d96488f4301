import { describe, expect, it } from 'vitest';
import type { ExpectationRecord, LapseEntry } from '../../../core/schemas/record.js';
import {
  anchoredDueAt,
  dueChecks,
  isLate,
  mayClose,
  maySkip,
  nextDeadline,
  settleIntervalOf,
  type DeadlineInputs,
} from '../../../workflows/decisions.js';
import { shipmentDelivery } from '../../support/fixtures.js';

const at = (iso: string) => Date.parse(iso);

const expectation = shipmentDelivery('e1', 'S1', '2026-12-01T00:00:00.000Z', { expects: 'delivered', grace: 'PT6H' });

function lapseEntry(lapse: 'overdue' | 'stalled' | 'skipped', dueAt: string, lapsedAt: string): LapseEntry {
  return {
    lapse: { ...expectation, lapse, projectedDueAt: expectation.dueAt, dueAt, lapsedAt, lineage: 0 },
    delivery: { status: 'pending', messageId: 'm' },
  };
}

function inputs(record: Partial<ExpectationRecord> = {}, rest: Partial<DeadlineInputs> = {}): DeadlineInputs {
  return {
    record: {
      expectation,
      state: 'open',
      dueAt: expectation.dueAt,
      lapses: [],
      raisedAt: '2026-01-01T00:00:00Z',
      ...record,
    },
    horizonChecked: false,
    lateWindow: 'P30D',
    ...rest,
  };
}

describe('next deadline', () => {
  it('is dueAt plus grace for an open expectation', () => {
    expect(nextDeadline(inputs())).toEqual({ kind: 'overdue', atMs: at('2026-12-01T06:00:00Z') });
  });

  it('is the horizon when it comes before due plus grace, and only until it was checked', () => {
    const withHorizon = { ...expectation, horizon: '2026-11-01T00:00:00Z' };
    expect(nextDeadline(inputs({ expectation: withHorizon }))).toEqual({
      kind: 'stalled',
      atMs: at('2026-11-01T00:00:00Z'),
    });
    expect(nextDeadline(inputs({ expectation: withHorizon }, { horizonChecked: true }))?.kind).toBe('overdue');
  });

  it('is the end of the late window after the last lapse once nothing else is pending', () => {
    const record = {
      state: 'lapsed' as const,
      lapses: [lapseEntry('overdue', expectation.dueAt, '2026-12-01T06:00:00Z')],
    };
    expect(nextDeadline(inputs(record))).toEqual({ kind: 'close', atMs: at('2026-12-31T06:00:00Z') });
  });

  it('is a new overdue check when an anchor moved dueAt after an overdue lapse', () => {
    const record = {
      state: 'lapsed' as const,
      dueAt: '2026-12-10T00:00:00.000Z',
      lapses: [lapseEntry('overdue', expectation.dueAt, '2026-12-01T06:00:00Z')],
    };
    expect(nextDeadline(inputs(record))).toEqual({ kind: 'overdue', atMs: at('2026-12-10T06:00:00Z') });
  });

  it('is none for a satisfied or withdrawn expectation', () => {
    expect(nextDeadline(inputs({ state: 'satisfied' }))).toBeUndefined();
    expect(nextDeadline(inputs({ state: 'withdrawn' }))).toBeUndefined();
  });
});

describe('which lapse at an instant', () => {
  it('raises no overdue a millisecond before due plus grace, and overdue at it', () => {
    expect(dueChecks(inputs(), at('2026-12-01T06:00:00Z') - 1).lapses).toEqual([]);
    expect(dueChecks(inputs(), at('2026-12-01T06:00:00Z')).lapses).toEqual(['overdue']);
  });

  it('raises overdue at most once per dueAt', () => {
    const record = {
      state: 'lapsed' as const,
      lapses: [lapseEntry('overdue', '2026-12-01T00:00:00Z', '2026-12-01T06:00:00Z')],
    };
    expect(dueChecks(inputs(record), at('2026-12-05T00:00:00Z')).lapses).toEqual([]);
  });

  it('has the stall decided at the horizon, whatever the record last heard (the routers are read then)', () => {
    const withHorizon = { ...expectation, horizon: '2026-06-01T00:00:00Z' };
    expect(dueChecks(inputs({ expectation: withHorizon }), at('2026-05-31T23:59:59Z'))).toEqual({
      lapses: [],
      horizonReached: false,
    });
    expect(
      dueChecks(inputs({ expectation: withHorizon, lastFactAt: '2026-03-01T00:00:00Z' }), at('2026-06-01T00:00:00Z')),
    ).toEqual({ lapses: ['stalled'], horizonReached: true });
  });

  it('checks the horizon only once', () => {
    const withHorizon = { ...expectation, horizon: '2026-06-01T00:00:00Z' };
    expect(
      dueChecks(inputs({ expectation: withHorizon }, { horizonChecked: true }), at('2026-07-01T00:00:00Z')),
    ).toEqual({
      lapses: [],
      horizonReached: false,
    });
  });

  it('raises nothing on a satisfied expectation', () => {
    expect(dueChecks(inputs({ state: 'satisfied' }), at('2027-01-01T00:00:00Z')).lapses).toEqual([]);
  });

  it('allows one skipped lapse per dueAt, while open or lapsed', () => {
    expect(maySkip(inputs().record)).toBe(true);
    expect(maySkip(inputs({ state: 'withdrawn' }).record)).toBe(false);
    const skipped = {
      state: 'lapsed' as const,
      lapses: [lapseEntry('skipped', expectation.dueAt, '2026-11-01T00:00:00Z')],
    };
    expect(maySkip(inputs(skipped).record)).toBe(false);
  });
});

describe('lateness and anchors', () => {
  it('calls a fact late when observed after the current dueAt (grace does not count)', () => {
    expect(isLate('2026-12-01T00:00:00Z', '2026-12-01T00:00:00.000Z')).toBe(false);
    expect(isLate('2026-12-01T00:00:01Z', '2026-12-01T00:00:00.000Z')).toBe(true);
  });

  it('moves dueAt to the anchor observedAt plus offset', () => {
    expect(anchoredDueAt('2026-10-03T12:00:00Z', 'P2D')).toBe('2026-10-05T12:00:00.000Z');
    expect(anchoredDueAt('2026-01-31T00:00:00Z', 'P1M')).toBe('2026-02-28T00:00:00.000Z');
  });
});

describe('may the workflow close', () => {
  it('closes at once when satisfied or withdrawn', () => {
    expect(mayClose(inputs({ state: 'satisfied' }), 0)).toBe(true);
    expect(mayClose(inputs({ state: 'withdrawn' }), 0)).toBe(true);
  });

  it('never closes while open', () => {
    expect(mayClose(inputs(), at('2030-01-01T00:00:00Z'))).toBe(false);
  });

  it('closes a lapsed one lateWindow after its last lapse, not a millisecond before', () => {
    const record = {
      state: 'lapsed' as const,
      lapses: [lapseEntry('overdue', expectation.dueAt, '2026-12-01T06:00:00Z')],
    };
    expect(mayClose(inputs(record), at('2026-12-31T06:00:00Z') - 1)).toBe(false);
    expect(mayClose(inputs(record), at('2026-12-31T06:00:00Z'))).toBe(true);
  });

  it('keeps a lapsed one alive while an overdue check is still pending', () => {
    const record = {
      state: 'lapsed' as const,
      lapses: [lapseEntry('skipped', expectation.dueAt, '2026-10-01T00:00:00Z')],
    };
    expect(mayClose(inputs(record), at('2026-11-30T00:00:00Z'))).toBe(false);
    expect(nextDeadline(inputs(record))?.kind).toBe('overdue');
  });
});

describe('settleIntervalOf', () => {
  it('is the fact wait and a second: 3 s by default (WATCHER_FACT_WAIT PT2S), 1.5 s at its least', () => {
    expect(settleIntervalOf(2_000)).toBe('PT3S');
    expect(settleIntervalOf(500)).toBe('PT1.5S');
  });
});
