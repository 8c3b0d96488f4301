/**
 * The expectation's lapse deliveries (DESIGN 3.8), in one place: each lapse gets an entry on the record with its
 * deterministic message id, its task is delivered in the background, and the outcome is recorded on the entry.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { DeliveryActivities } from '../activities/types.js';
import { LAPSE_REJECTED } from '../core/failures.js';
import { lapseMessageId } from '../core/message-id.js';
import type { ExpectationRecord, Lapse, LapseEntry } from '../core/types.js';
import type { AgentRef } from './messages.js';
import { deliverLapseSummary } from './ui-text.js';

const delivery = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '7 days',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10m', nonRetryableErrorTypes: [LAPSE_REJECTED] },
});

const nowIso = (): string => new Date(Date.now()).toISOString();

function describeFailure(error: unknown): string {
  if (error instanceof ActivityFailure && error.cause) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** The deliveries of one expectation run; `pending` counts those not settled yet (none may be lost to continue-as-new). */
export class LapseDeliveries {
  private inFlight = 0;

  constructor(
    private readonly record: ExpectationRecord,
    private readonly agent: AgentRef,
    /** Called after each delivery settles, with its outcome on the record. */
    private readonly onSettled: () => void,
  ) {}

  /** Deliveries started and not settled yet. */
  get pending(): number {
    return this.inFlight;
  }

  /** Adds the lapse's entry to the record and delivers its task in the background. */
  start(lapse: Lapse): void {
    const entry: LapseEntry = {
      lapse,
      delivery: { status: 'pending', messageId: lapseMessageId(lapse.expectationId, lapse.lapse, lapse.dueAt) },
    };
    this.record.lapses.push(entry);
    this.inFlight++;
    void this.deliver(entry).finally(() => {
      this.inFlight--;
      this.onSettled();
    });
  }

  /** Delivers one lapse task; the outcome is recorded on its entry, never thrown. */
  private async deliver(entry: LapseEntry): Promise<void> {
    const { agent, record } = this;
    if (!agent.cardUrl) {
      entry.delivery = { ...entry.delivery, status: 'failed', error: `agent ${agent.id} has no cardUrl to deliver to` };
      return;
    }
    try {
      const result = await delivery.deliverLapse.executeWithOptions(
        { summary: deliverLapseSummary(entry.lapse.lapse, agent.id) },
        [{ lapse: entry.lapse, agent, origin: record.origin, messageId: entry.delivery.messageId }],
      );
      entry.delivery = { ...entry.delivery, status: 'delivered', deliveredAt: nowIso(), warnings: result.warnings };
      if (result.taskId) entry.lapseTaskId = result.taskId;
    } catch (error) {
      entry.delivery = { ...entry.delivery, status: 'failed', error: describeFailure(error) };
    }
    if (record.lapses.at(-1) === entry && entry.lapseTaskId) record.lapseTaskId = entry.lapseTaskId;
  }
}
