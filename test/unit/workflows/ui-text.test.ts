import { describe, expect, it } from 'vitest';
import type { ExpectationRecord, LapseEntry } from '../../../core/types.js';
import type { ExpectationInput } from '../../../workflows/messages.js';
import {
  currentDetails,
  deadlineSummary,
  deliverLapseSummary,
  expectationDetails,
  expectationSummary,
  linkAnchorSummary,
  subscribeSummary,
} from '../../../workflows/ui-text.js';
import { defaultSettings, shipmentDelivery } from '../../support/fixtures.js';

const expectation = shipmentDelivery('e1', 'S1', '2026-12-01T00:00:00Z', { expects: 'the shipment is delivered' });

const input: ExpectationInput = {
  expectation,
  agent: { id: 'shipping-agent' },
  origin: { taskId: 't1', contextId: 'c1' },
  lineage: 0,
  settings: defaultSettings,
  links: {
    self: 'expectation:e1',
    factRouter: 'fact:shipment/S1/delivered',
    subjectRouter: 'facts:expectations:001',
    after: {},
  },
};

const due = '2026-12-01T00:00:00.000Z';
const { lineage, agent, origin } = input;
const record: ExpectationRecord = {
  expectation,
  lineage,
  agent,
  origin,
  state: 'open',
  dueAt: due,
  projectedDueAt: due,
  raisedAt: '2026-11-01T00:00:00.000Z',
  lapses: [],
};

function lapseEntry(lapse: 'overdue' | 'stalled', delivery: LapseEntry['delivery'], lapseTaskId?: string): LapseEntry {
  const at = { dueAt: record.dueAt, projectedDueAt: record.projectedDueAt, lapsedAt: '2026-12-01T00:00:00.000Z' };
  return { lapse: { ...expectation, ...at, lapse, lineage: 0 }, delivery, ...(lapseTaskId ? { lapseTaskId } : {}) };
}

describe('static summary', () => {
  it('is `<kind>: <expects> (due <dueAt>)` with dueAt as raised', () => {
    expect(expectationSummary(expectation)).toBe('delivery: the shipment is delivered (due 2026-12-01T00:00:00Z)');
  });
});

describe('static details', () => {
  it('is a table of the fields that are set, with the subject as given', () => {
    expect(expectationDetails(input, 'shipment/S1')).toBe(
      [
        '| field | value |',
        '|---|---|',
        '| expectationId | e1 |',
        '| kind | delivery |',
        '| subject | shipment/S1 |',
        '| expects | the shipment is delivered |',
        '| satisfiedBy.factKey | shipment/S1/delivered |',
        '| dueAt | 2026-12-01T00:00:00Z |',
        '| basis | contract |',
        '| lineage | 0 |',
        '| agent | shipping-agent |',
        '| origin task | t1 |',
        '| origin context | c1 |',
      ].join('\n'),
    );
  });

  it('shows grace, anchor, after, horizon and supersedes when set', () => {
    const full = {
      ...expectation,
      grace: 'PT6H',
      anchor: { expectationId: 'e0', offset: 'P2D' },
      after: ['e0', 'e00'],
      horizon: '2026-11-15T00:00:00Z',
      supersedes: 'e-old',
    };
    const rows = expectationDetails({ ...input, expectation: full, lineage: 1 }, 'shipment/S1').split('\n');

    expect(rows).toEqual(
      expect.arrayContaining([
        '| grace | PT6H |',
        '| anchor | e0 + P2D |',
        '| after | e0, e00 |',
        '| horizon | 2026-11-15T00:00:00Z |',
        '| supersedes | e-old |',
        '| lineage | 1 |',
      ]),
    );
  });

  it('escapes pipes and flattens newlines, so a value stays in its cell', () => {
    const rows = expectationDetails({ ...input, expectation: { ...expectation, expects: 'a | b\nc' } }, 's').split(
      '\n',
    );

    expect(rows).toContain('| expects | a \\| b c |');
  });
});

describe('current details', () => {
  it('is the state and the due instant of an open expectation', () => {
    expect(currentDetails(record)).toBe('**open** · due 2026-12-01T00:00:00.000Z');
  });

  it('shows the projected dueAt beside a current one that an anchor moved', () => {
    expect(currentDetails({ ...record, dueAt: '2026-12-03T00:00:00.000Z' })).toBe(
      '**open** · due 2026-12-03T00:00:00.000Z (projected 2026-12-01T00:00:00.000Z)',
    );
  });

  it('says when, by which fact and how late it was satisfied', () => {
    const satisfied: ExpectationRecord = {
      ...record,
      state: 'satisfied',
      satisfiedAt: '2026-12-02T00:00:00.000Z',
      observedAt: '2026-12-01T12:00:00.000Z',
      late: true,
      satisfiedBy: { factKey: 'shipment/S1/delivered', observedAt: '2026-12-01T12:00:00Z', source: 'carrier-feed' },
      lastFactAt: '2026-12-01T12:00:00.000Z',
    };

    expect(currentDetails(satisfied)).toBe(
      [
        '**satisfied** · due 2026-12-01T00:00:00.000Z',
        'satisfied at 2026-12-02T00:00:00.000Z by `shipment/S1/delivered` observed 2026-12-01T12:00:00.000Z (late)',
        'last fact on the subject: 2026-12-01T12:00:00.000Z',
      ].join('\n\n'),
    );
  });

  it('gives the reason of a withdrawal', () => {
    expect(currentDetails({ ...record, state: 'withdrawn', withdrawnReason: 'superseded by e2' })).toBe(
      '**withdrawn** · due 2026-12-01T00:00:00.000Z\n\nwithdrawn: superseded by e2',
    );
  });

  it('lists each lapse with its delivery status, error and task', () => {
    const lapsed: ExpectationRecord = {
      ...record,
      state: 'lapsed',
      lapses: [
        lapseEntry('stalled', { status: 'failed', messageId: 'm1', error: 'agent answered 400' }),
        lapseEntry('overdue', { status: 'delivered', messageId: 'm2', warnings: [] }, 'task-9'),
      ],
    };

    expect(currentDetails(lapsed)).toBe(
      [
        '**lapsed** · due 2026-12-01T00:00:00.000Z',
        '- **stalled** at 2026-12-01T00:00:00.000Z (due 2026-12-01T00:00:00.000Z) · failed (agent answered 400)\n' +
          '- **overdue** at 2026-12-01T00:00:00.000Z (due 2026-12-01T00:00:00.000Z) · delivered · task `task-9`',
      ].join('\n\n'),
    );
  });

  it('says when and by whom a lapse was re-sent', () => {
    const delivery = {
      status: 'pending' as const,
      messageId: 'm1',
      resends: 1,
      resentAt: '2026-12-09T10:00:00.000Z',
      resentBy: 'ops',
    };

    expect(currentDetails({ ...record, state: 'lapsed', lapses: [lapseEntry('overdue', delivery)] })).toBe(
      '**lapsed** · due 2026-12-01T00:00:00.000Z\n\n' +
        '- **overdue** at 2026-12-01T00:00:00.000Z (due 2026-12-01T00:00:00.000Z) · pending' +
        ' · resent at 2026-12-09T10:00:00.000Z by ops',
    );
  });
});

describe('timer and activity summaries', () => {
  const atMs = Date.parse('2026-12-01T06:00:00Z');

  it('names the deadline a timer waits for', () => {
    expect(deadlineSummary({ kind: 'overdue', atMs })).toBe('overdue check at 2026-12-01T06:00:00.000Z');
    expect(deadlineSummary({ kind: 'stalled', atMs })).toBe('stalled check at 2026-12-01T06:00:00.000Z');
    expect(deadlineSummary({ kind: 'close', atMs })).toBe('late window ends at 2026-12-01T06:00:00.000Z');
  });

  it('names the router, the anchor and the lapse of each activity', () => {
    expect(subscribeSummary('fact:k')).toBe('subscribe to fact:k');
    expect(linkAnchorSummary('expectation:e0')).toBe('link to anchor expectation:e0');
    expect(deliverLapseSummary('overdue', 'shipping-agent')).toBe('deliver overdue lapse to shipping-agent');
    expect(deliverLapseSummary('overdue', 'shipping-agent', 2)).toBe(
      're-send overdue lapse to shipping-agent (resend 2)',
    );
  });
});
