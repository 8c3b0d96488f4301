/**
 * What an expectation owes the workflows tied to it (workflows/link-messages.ts), without a server: a new dependent,
 * and each way of ending (satisfied, superseded, withdrawn, lapsed), in the order the signals go out.
 */
import { describe, expect, it } from 'vitest';
import { expectationLinks } from '../../../core/ids.js';
import { MAX_DEPENDENTS } from '../../../core/limits.js';
import type { ExpectationRecord } from '../../../core/types.js';
import { owedOnClose, owedToNewDependent, type Ties } from '../../../workflows/link-messages.js';
import { shipmentDelivery } from '../../support/fixtures.js';

const expectation = shipmentDelivery('e1', 'S1', '2026-12-01T00:00:00Z', { after: ['e0'] });
const links = { ...expectationLinks(expectation, 'q'), after: { e0: 'expectation:e0' } };
const observedAt = '2026-11-30T00:00:00.000Z';

function tiesOf(record: Partial<ExpectationRecord>, supersededBy?: string): Ties {
  const base = { expectation, state: 'open', lapses: [] } as unknown as ExpectationRecord;
  return {
    record: { ...base, ...record },
    links,
    dependents: ['expectation:d1', 'expectation:d2'],
    ...(supersededBy ? { supersededBy } : {}),
  };
}

const satisfied = {
  state: 'satisfied',
  observedAt,
  satisfiedBy: { factKey: 'k', observedAt, source: 's', receivedAt: observedAt },
} as const;
const superseded = { state: 'withdrawn', supersededBy: 'e9' } as const;

describe('a new dependent', () => {
  it('is told nothing while the anchor is open', () => {
    expect(owedToNewDependent(tiesOf({}), 'expectation:d3', false)).toBeUndefined();
  });

  it('is told at once that the anchor was satisfied, or whom it follows now', () => {
    expect(owedToNewDependent(tiesOf(satisfied), 'expectation:d3', false)).toEqual({
      to: 'expectation:d3',
      anchorSatisfied: { anchorExpectationId: 'e1', observedAt },
    });
    expect(owedToNewDependent(tiesOf(superseded, 'expectation:e9'), 'expectation:d3', false)).toEqual({
      to: 'expectation:d3',
      anchorMoved: { expectationId: 'e9', workflowId: 'expectation:e9' },
    });
  });

  it(`past ${MAX_DEPENDENTS} is withdrawn with the reason`, () => {
    expect(owedToNewDependent(tiesOf(satisfied), 'expectation:d3', true)).toEqual({
      to: 'expectation:d3',
      withdraw: { reason: expect.stringContaining(`already has ${MAX_DEPENDENTS} dependents, its bound`) },
    });
  });
});

describe('an ending expectation', () => {
  it('satisfied: tells its dependents, then the expectations it comes after, then leaves its router', () => {
    expect(owedOnClose(tiesOf(satisfied), false)).toEqual([
      { to: 'expectation:d1', anchorSatisfied: { anchorExpectationId: 'e1', observedAt } },
      { to: 'expectation:d2', anchorSatisfied: { anchorExpectationId: 'e1', observedAt } },
      { to: 'expectation:e0', skipped: { satisfiedExpectationId: 'e1', receivedAt: observedAt } },
      { to: links.factRouter, unsubscribe: { workflowId: links.self } },
    ]);
  });

  it('satisfied by its router’s forward: does not leave a router that dropped it already', () => {
    expect(owedOnClose(tiesOf(satisfied), true).some((owed) => 'unsubscribe' in owed)).toBe(false);
  });

  it('superseded: sends its dependents to the superseding expectation', () => {
    expect(owedOnClose(tiesOf(superseded, 'expectation:e9'), false)).toEqual([
      { to: 'expectation:d1', anchorMoved: { expectationId: 'e9', workflowId: 'expectation:e9' } },
      { to: 'expectation:d2', anchorMoved: { expectationId: 'e9', workflowId: 'expectation:e9' } },
      { to: links.factRouter, unsubscribe: { workflowId: links.self } },
    ]);
  });

  it.each([
    ['withdrawn', { state: 'withdrawn' }],
    ['lapsed', { state: 'lapsed' }],
  ] as const)('%s: only leaves its router', (_, record) => {
    expect(owedOnClose(tiesOf(record), false)).toEqual([
      { to: links.factRouter, unsubscribe: { workflowId: links.self } },
    ]);
  });
});
