/**
 * Inputs and results of the activities, shared by workflows (as types) and the activity implementations.
 */
import type { Lapse } from '../src/schemas/extension.js';
import type { Origin } from '../src/schemas/record.js';
import type { AgentRef } from '../workflows/messages.js';

export interface DeliverLapseInput {
  lapse: Lapse;
  agent: AgentRef;
  origin: Origin;
  /** UUID v5 of `<expectationId>|<lapse>|<dueAt>` (DESIGN 3.8); the same on every retry. */
  messageId: string;
}

export interface DeliverLapseResult {
  /** The id of the task the agent created for the lapse, when it answered with a task. */
  taskId?: string;
  /** E.g. the agent did not echo the extension in `A2A-Extensions`. */
  warnings: string[];
}

/** ApplicationFailure type of a delivery the agent refused with a 4xx: not retried, recorded as failed. */
export const LAPSE_REJECTED = 'LapseDeliveryRejected';

export interface SubscribeLedgerInput {
  /** Workflow id of the ledger (`fact:<key>` or `subject:<type>:<id>`). */
  ledgerWorkflowId: string;
  /** Workflow id of the expectation that subscribes. */
  subscriberWorkflowId: string;
}

export interface LinkAnchorResult {
  /** Set when the anchor is already satisfied: its satisfying fact's observedAt. */
  satisfiedObservedAt?: string;
  /** The anchor is closed without being satisfied (withdrawn, or gone). */
  closedUnsatisfied?: boolean;
  /** The anchor was superseded: follow this one instead. */
  movedTo?: { expectationId: string; workflowId: string };
}
