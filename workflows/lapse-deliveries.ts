/**
 * The expectation's lapse deliveries (DESIGN 3.8), in one place: each lapse gets an entry on the record with its
 * deterministic message id, its task is delivered in the background, and the outcome is recorded on the entry.
 * A delivery runs in its own cancellation scope: it is abandoned when the expectation is satisfied or withdrawn,
 * and one still in retry when the run continues as new is carried over and scheduled again in the next run.
 * An admin may have a lapse that failed delivered again: the same entry and messageId, a budget of its own.
 */
import { ActivityFailure, CancellationScope, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { DeliveryActivities } from './activity-types.js';
import { LAPSE_REJECTED } from '../core/failures.js';
import type { ExpectationRecord, LapseEntry } from '../core/types.js';
import { budgetLeftMs, markDelivered, markOutOfBudget, markResent, markUndelivered } from './lapse-entries.js';
import type { AgentRef } from './messages.js';
import { deliverLapseSummary } from './ui-text.js';

const delivery = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '7 days',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '10m',
    nonRetryableErrorTypes: [LAPSE_REJECTED],
  },
});

function describeFailure(error: unknown): string {
  if (error instanceof ActivityFailure && error.cause) {
    // Out of retries because the budget ran out: say so, or the record reads like one refused attempt.
    const spent = error.retryState === 'TIMEOUT' ? 'the delivery budget was spent; the last attempt failed: ' : '';
    return `${spent}${error.cause.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** The deliveries of one expectation run; `pending` counts those not settled yet. */
export class LapseDeliveries {
  private readonly inFlight = new Map<LapseEntry, CancellationScope>();
  /** Why pending deliveries were given up, once they were (the entries then read `abandoned`). */
  private abandonedBecause: string | undefined;

  constructor(
    private readonly record: ExpectationRecord,
    private readonly agent: AgentRef,
    /** Called after each delivery settles, with its outcome on the record. */
    private readonly onSettled: () => void,
  ) {}

  /** Deliveries started and not settled yet. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Delivers, in the background, the task of a lapse whose entry the machine put on the record. */
  start(entry: LapseEntry): void {
    this.run(entry);
  }

  /**
   * Delivers a lapse again, under the same messageId, with the budget counted from now: the entry is pending once
   * more, counts the resend and names who asked. For an entry whose delivery settled without reaching the agent.
   */
  resend(entry: LapseEntry, requestedBy: string): void {
    markResent(entry, requestedBy, Date.now());
    this.run(entry);
  }

  /**
   * Schedules again the deliveries a previous run left pending when it continued as new. One already on its way (a
   * resend that arrived in the run's first workflow task, before this) is not scheduled twice.
   */
  resume(): void {
    for (const entry of this.record.lapses) {
      if (entry.delivery.status !== 'pending' || this.inFlight.has(entry)) continue;
      this.run(entry);
    }
  }

  /** Gives up every pending delivery: an attempt on the wire finishes, but no further attempt is made. */
  abandon(reason: string): void {
    this.abandonedBecause ??= reason;
    for (const scope of this.inFlight.values()) scope.cancel();
  }

  private run(entry: LapseEntry): void {
    const scope = new CancellationScope();
    this.inFlight.set(entry, scope);
    void scope
      .run(() => this.deliver(entry))
      .finally(() => {
        this.inFlight.delete(entry);
        this.onSettled();
      });
  }

  /** Delivers one lapse task; the outcome is recorded on its entry, never thrown. */
  private async deliver(entry: LapseEntry): Promise<void> {
    const { agent, record } = this;
    const { resends, messageId } = entry.delivery;
    const leftMs = budgetLeftMs(entry, Date.now());
    if (leftMs <= 0) return markOutOfBudget(entry);
    const summary = deliverLapseSummary(entry.lapse.lapse, agent.id, resends);
    const input = {
      lapse: entry.lapse,
      agent: { id: agent.id },
      origin: record.origin,
      messageId,
      ...(resends ? { resend: resends } : {}),
    };
    try {
      const result = await delivery.deliverLapse.executeWithOptions({ summary, scheduleToCloseTimeout: leftMs }, [
        input,
      ]);
      markDelivered(record, entry, result, Date.now());
    } catch (error) {
      if (this.abandonedBecause !== undefined && isCancellation(error)) {
        markUndelivered(entry, 'abandoned', this.abandonedBecause);
      } else {
        markUndelivered(entry, 'failed', describeFailure(error));
      }
    }
  }
}
