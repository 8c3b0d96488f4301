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

/** What an expectation asks its routers' histories before it decides at a deadline (activities/history-reads.ts). */
export interface StoredFactsInput {
  /** Workflow id of the expectation that asks (a forward to it carried over a router's continue-as-new counts). */
  expectationWorkflowId: string;
  /** The raise, epoch ms: only facts a bridge received from then on count. */
  sinceMs: number;
  /** Now, epoch ms: the subject's facts received up to here count for `lastFactAt`. */
  untilMs: number;
  /**
   * Asked before an overdue: the first fact with the key received from the raise to `untilMs` (due plus grace), or from
   * `earliestMs` when set: an early fact the router kept for its retention before the raise satisfies too (DESIGN 3.2),
   * however late the router's forward of it comes.
   */
  key?: { routerWorkflowId: string; factKey: string; untilMs: number; earliestMs?: number };
  /** Asked before any lapse: the subject's facts; with `horizonMs`, before a stall, whether one came by then. */
  subject?: { routerWorkflowId: string; subject: { type: string; id: string }; horizonMs?: number };
}

export interface StoredFacts {
  /** The fact with the key that satisfies the expectation after all. */
  fact?: RoutedFact;
  /** The subject's fact observed last (the Lapse's `lastFactAt`), and whether one was received by the horizon. */
  subject?: { latest?: SubjectFact; heardByHorizon?: boolean };
}

/** A fact on a subject that an expectation stores in its subject's router (ExpectationLinks.tellOnClose). */
export interface StoreOnSubjectInput {
  routerWorkflowId: string;
  fact: SubjectFact;
  /** The router's retention, should this call start it. */
  retention: string;
}

/** A router's forwards (fact-router.ts): each subscriber and the fact it is sent. */
export interface ForwardFactsInput {
  forwards: Array<[workflowId: string, fact: RoutedFact]>;
}

/** Which subscribers got their fact, and which are gone (closed: nobody to tell), which the router drops alike. */
export interface ForwardFactsResult {
  sent: string[];
  gone: string[];
}

/** The activities that reach other workflows through the Temporal client (activities/client-calls.ts), as workflows see them. */
export interface ClientActivities {
  linkAnchor(input: LinkAnchorInput): Promise<LinkAnchorResult>;
  /**
   * What the expectation's routers stored for a decision, read from their histories (the server's, no worker): the
   * fact with its key that may still be on its way, and its subject's facts.
   */
  storedFacts(input: StoredFactsInput): Promise<StoredFacts>;
  /**
   * Stores the fact that satisfied an expectation, which named no subject or another, as a fact on the expectation's
   * subject (DESIGN 3.2): a signal-with-start of the subject's router, which may never have been started.
   */
  storeOnSubject(input: StoreOnSubjectInput): Promise<void>;
  /**
   * A router's large batch of forwards, signalled by the client (a local activity of the router): one marker in the
   * router's history, where the workflow's own signals write two events each, one at a time (fact-router.ts).
   */
  forwardFacts(input: ForwardFactsInput): Promise<ForwardFactsResult>;
}

/** The lapse delivery activity (activities/deliver-lapse.ts), as workflows see it. */
export interface DeliveryActivities {
  deliverLapse(input: DeliverLapseInput): Promise<DeliverLapseResult>;
}
