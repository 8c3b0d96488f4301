/**
 * A lapse's entry on the record and how its delivery moves (DESIGN 3.8): pending under its deterministic messageId,
 * then delivered, failed or abandoned, pending again when an admin resends it. Pure, so each move is unit-tested
 * without a server; LapseDeliveries (lapse-deliveries.ts) runs the activity and records its outcome with these.
 */
import { addDuration } from '../core/duration.js';
import { lapseMessageId } from '../core/message-id.js';
import type { ExpectationRecord, Lapse, LapseEntry } from '../core/types.js';
import type { DeliverLapseResult } from './activity-types.js';

/** How long a lapse may take to reach its agent, from the lapse, across retries and continue-as-new. */
export const DELIVERY_BUDGET = 'P7D';

const iso = (ms: number): string => new Date(ms).toISOString();

/** The entry of a lapse just raised: its delivery pending under the lapse's messageId. */
export function lapseEntryOf(lapse: Lapse): LapseEntry {
  return {
    lapse,
    delivery: { status: 'pending', messageId: lapseMessageId(lapse.expectationId, lapse.lapse, lapse.dueAt) },
  };
}

/** What is left at `nowMs` of the delivery's budget, which runs from the lapse or from the latest resend. */
export function budgetLeftMs(entry: LapseEntry, nowMs: number): number {
  return addDuration(Date.parse(entry.delivery.resentAt ?? entry.lapse.lapsedAt), DELIVERY_BUDGET) - nowMs;
}

/** The delivery failed without an attempt: its budget was spent (a delivery carried over for too long). */
export function markOutOfBudget(entry: LapseEntry): void {
  const since = entry.delivery.resentAt ? 'the resend' : 'the lapse';
  entry.delivery = {
    ...entry.delivery,
    status: 'failed',
    error: `not delivered within ${DELIVERY_BUDGET} of ${since}`,
  };
}

/** Pending once more under the same messageId, counting the resend and naming who asked; its budget runs from now. */
export function markResent(entry: LapseEntry, requestedBy: string, nowMs: number): void {
  const { messageId, resends } = entry.delivery;
  entry.delivery = {
    status: 'pending',
    messageId,
    resends: (resends ?? 0) + 1,
    resentAt: iso(nowMs),
    resentBy: requestedBy,
  };
}

/** The agent took the lapse task; the record names the latest lapse's task. */
export function markDelivered(
  record: ExpectationRecord,
  entry: LapseEntry,
  result: DeliverLapseResult,
  nowMs: number,
): void {
  entry.delivery = { ...entry.delivery, status: 'delivered', deliveredAt: iso(nowMs), warnings: result.warnings };
  if (result.taskId) entry.lapseTaskId = result.taskId;
  if (record.lapses.at(-1) === entry && entry.lapseTaskId) record.lapseTaskId = entry.lapseTaskId;
}

/** The delivery settled without reaching the agent: failed (with the error), or abandoned (with why). */
export function markUndelivered(entry: LapseEntry, status: 'failed' | 'abandoned', error: string): void {
  entry.delivery = { ...entry.delivery, status, error };
}
