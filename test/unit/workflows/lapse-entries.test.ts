/**
 * How a lapse delivery's entry moves (workflows/lapse-entries.ts), without a server: pending under the lapse's
 * messageId, delivered, failed or abandoned, out of budget, and pending again on a resend with a budget of its own.
 */
import { describe, expect, it } from 'vitest';
import { addDuration } from '../../../core/duration.js';
import { lapseMessageId } from '../../../core/message-id.js';
import type { ExpectationRecord, Lapse } from '../../../core/types.js';
import {
  budgetLeftMs,
  DELIVERY_BUDGET,
  lapseEntryOf,
  markDelivered,
  markOutOfBudget,
  markResent,
  markUndelivered,
} from '../../../workflows/lapse-entries.js';
import { shipmentDelivery } from '../../support/fixtures.js';

const T = Date.parse('2026-12-01T00:00:00Z');
const BUDGET_MS = addDuration(0, DELIVERY_BUDGET);
const iso = (ms: number) => new Date(ms).toISOString();
const expectation = shipmentDelivery('e1', 'S1', iso(T));

function lapseOf(kind: Lapse['lapse'], lapsedMs = T): Lapse {
  const { expectationId, kind: k, subject, expects } = expectation;
  return {
    expectationId,
    kind: k,
    subject,
    expects,
    lapse: kind,
    projectedDueAt: iso(T),
    dueAt: iso(T),
    lapsedAt: iso(lapsedMs),
    lineage: 0,
  };
}

const recordWith = (...lapses: Lapse[]) => ({ lapses: lapses.map(lapseEntryOf) }) as unknown as ExpectationRecord;

describe("a lapse's entry", () => {
  it('starts pending under the messageId of (expectation, lapse, dueAt)', () => {
    expect(lapseEntryOf(lapseOf('overdue')).delivery).toEqual({
      status: 'pending',
      messageId: lapseMessageId('e1', 'overdue', iso(T)),
    });
  });

  it('has its budget from the lapse, and fails without an attempt once it is spent', () => {
    const entry = lapseEntryOf(lapseOf('overdue'));
    expect(budgetLeftMs(entry, T + 1_000)).toBe(BUDGET_MS - 1_000);

    markOutOfBudget(entry);

    expect(entry.delivery).toMatchObject({
      status: 'failed',
      error: `not delivered within ${DELIVERY_BUDGET} of the lapse`,
    });
  });

  it('is delivered with the agent’s task, which the record names only for its latest lapse', () => {
    const record = recordWith(lapseOf('stalled'), lapseOf('overdue'));
    const [stalled, overdue] = record.lapses;

    markDelivered(record, stalled!, { taskId: 'task-1', warnings: ['no echo'] }, T + 5);
    expect(stalled).toMatchObject({
      lapseTaskId: 'task-1',
      delivery: { status: 'delivered', deliveredAt: iso(T + 5), warnings: ['no echo'] },
    });
    expect(record.lapseTaskId).toBeUndefined();

    markDelivered(record, overdue!, { taskId: 'task-2', warnings: [] }, T + 6);
    expect(record.lapseTaskId).toBe('task-2');
  });

  it('settles undelivered as failed or abandoned, with why', () => {
    const entry = lapseEntryOf(lapseOf('overdue'));
    markUndelivered(entry, 'abandoned', 'the expectation was satisfied');
    expect(entry.delivery).toMatchObject({ status: 'abandoned', error: 'the expectation was satisfied' });
  });

  it('is pending again on a resend, same messageId, counted, with a budget from the resend', () => {
    const entry = lapseEntryOf(lapseOf('overdue'));
    markUndelivered(entry, 'failed', 'refused');
    markResent(entry, 'admin', T + BUDGET_MS);
    markResent(entry, 'admin-2', T + BUDGET_MS + 1);

    expect(entry.delivery).toEqual({
      status: 'pending',
      messageId: lapseMessageId('e1', 'overdue', iso(T)),
      resends: 2,
      resentAt: iso(T + BUDGET_MS + 1),
      resentBy: 'admin-2',
    });
    expect(budgetLeftMs(entry, T + BUDGET_MS + 1)).toBe(BUDGET_MS);
    markOutOfBudget(entry);
    expect(entry.delivery.error).toBe(`not delivered within ${DELIVERY_BUDGET} of the resend`);
  });
});
