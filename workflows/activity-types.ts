/**
 * The activities as workflows see them: their inputs, results and interfaces, which the activity implementations
 * (activities/) fulfil. Declared here, on the workflows' floor, so that workflows never import activities/.
 */
import type { Lapse, Origin } from '../core/types.js';
import type { AgentRef, RoutedFact, SubjectFact } from './messages.js';

export interface DeliverLapseInput {
  lapse: Lapse;
  agent: AgentRef;
  origin: Origin;
  /** UUID v5 of `<expectationId>|<lapse>|<dueAt>` (DESIGN 3.8); the same on every retry and every resend. */
  messageId: string;
  /** Set on a delivery an admin asked for again: which resend it is (1 the first). Absent on the first delivery. */
  resend?: number;
}

export interface DeliverLapseResult {
  /** The id of the task the agent created for the lapse, when it answered with a task. */
  taskId?: string;
  /** E.g. the agent did not echo the extension in `A2A-Extensions`. */
  warnings: string[];
}

/** ApplicationFailure type of a delivery the agent refused with a 4xx (defined in core/failures.ts). */
export { LAPSE_REJECTED } from '../core/failures.js';

export interface LinkAnchorInput {
  /** Workflow id of the anchor expectation. */
  anchorWorkflowId: string;
  /** Workflow id of the dependent that registers with it. */
  dependentWorkflowId: string;
  /**
   * The anchor is the one that superseded the dependent's previous anchor: the bridge withdraws the old one just
   * before it starts the new one, so a new anchor not found yet is waited for (MOVED_ANCHOR_ATTEMPTS), not given up.
   */
  moved?: boolean;
}

export interface LinkAnchorResult {
  /** Set when the anchor is already satisfied: its satisfying fact's observedAt. */
  satisfiedObservedAt?: string;
  /** The anchor is closed without being satisfied (withdrawn, or gone). */
  closedUnsatisfied?: boolean;
  /** The anchor was superseded: follow this one instead. */
  movedTo?: { expectationId: string; workflowId: string };
}

export interface SubjectHeardInput {
  /** Workflow id of the subject ledger. */
  ledgerWorkflowId: string;
  /** Workflow id of the expectation that asks (a forward carried over the ledger's continue-as-new counts too). */
  expectationWorkflowId: string;
  /** The window, epoch ms: facts the bridge received from the raise to the horizon. */
  sinceMs: number;
  untilMs: number;
}

export interface FactHeardInput {
  /** Workflow id of the key's fact router. */
  routerWorkflowId: string;
  factKey: string;
  /** Workflow id of the expectation that asks (a forward to it carried over the router's continue-as-new counts). */
  expectationWorkflowId: string;
  /** The window, epoch ms: facts the bridge received from the raise to the deadline. */
  sinceMs: number;
  untilMs: number;
}

/** The activities that reach other workflows through the Temporal client (activities/ledgers.ts), as workflows see them. */
export interface LedgerActivities {
  linkAnchor(input: LinkAnchorInput): Promise<LinkAnchorResult>;
  /**
   * The latest fact on the subject that a bridge received inside the window and handed to the subject ledger, read
   * from the ledger's history (the server's, no worker): what may still be on its way to the expectation.
   */
  subjectHeard(input: SubjectHeardInput): Promise<SubjectFact | undefined>;
  /**
   * The first fact with the key that a bridge received inside the window and its router recorded, read from the
   * router's history (the server's, no worker): what may still be on its way to the expectation before an overdue.
   */
  factHeard(input: FactHeardInput): Promise<RoutedFact | undefined>;
}

/** The lapse delivery activity (activities/deliver-lapse.ts), as workflows see it. */
export interface DeliveryActivities {
  deliverLapse(input: DeliverLapseInput): Promise<DeliverLapseResult>;
}
