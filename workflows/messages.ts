/**
 * Signals, queries and updates of the three workflow types, defined once and imported by workflows and clients.
 * Workflow ids are never built here: callers pass them in (see core/ids.ts).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Expectation, ExpectationRecord, Fact, LapseEntry, Origin } from '../core/types.js';
import type { ExpectationLinks } from '../core/ids.js';

// ── expectation workflow (`expectation:<id>`) ─────────────────────────────────────────────────────────────

/** Settings a deployment chooses (DESIGN 5), as ISO 8601 durations. */
export interface ExpectationSettings {
  lateWindow: string;
  factRetention: string;
  /**
   * How long past a deadline the expectation waits before it lapses, for facts a bridge received before the deadline
   * and Temporal may still be storing (DESIGN 3.3): the bridges' fact wait and a second. Absent, zero.
   */
  settle?: string;
}

/**
 * Who raised the expectation: its principal id only. The worker finds the agent's card URL and credential in the
 * principals file when it delivers a lapse (DESIGN 3.8); no credential enters Temporal.
 */
export interface AgentRef {
  id: string;
}

/** Workflow ids of everything the expectation talks to: declared with the ids that compute them (core/ids.ts). */
export type { ExpectationLinks };

/**
 * The expectation as the bridge raises it: it has subscribed it to its routers before it answered `raised`
 * (docs/raise-path.md), so the workflow does not.
 */
export interface ExpectationInput {
  expectation: Expectation;
  agent: AgentRef;
  origin: Origin;
  lineage: number;
  links: ExpectationLinks;
  settings: ExpectationSettings;
  /** When the bridge raised it (its record's `raisedAt`, also in the start's memo); absent, the first task's time. */
  raisedAt?: string;
  /** Set only by continue-as-new: the record and pending work to carry over. */
  carried?: CarriedExpectationState;
}

/** Everything an expectation keeps across continue-as-new: its record, its horizon check and its links. */
export interface CarriedExpectationState {
  record: ExpectationRecord;
  horizonChecked: boolean;
  dependents: string[];
  /** Workflow id of the anchor the expectation is currently linked to (it changes when the anchor is superseded). */
  anchorLink?: string;
}

/** A fact forwarded by a fact router to an expectation waiting on its key. */
export interface RoutedFact extends Fact {
  /** The router held it from before the subscription (an early fact), rather than recording it after. */
  held?: true;
}
export const factSignal = defineSignal<[RoutedFact]>('fact');

/** The expectation after it took a fact (`takeFact`): what `POST /v1/facts?wait=true` answers about it. */
export interface FactTaken {
  expectationId: string;
  /** The principal that raised it: the bridge shows the expectation only to those who may read it. */
  agentId: string;
  state: ExpectationRecord['state'];
  satisfiedAt?: string;
  late?: boolean;
}

/** What an expectation's record says about it after a fact, as `takeFact` answers (and a closed one's result reads). */
export function factTakenOf(record: ExpectationRecord): FactTaken {
  return {
    expectationId: record.expectation.expectationId,
    agentId: record.agent.id,
    state: record.state,
    ...(record.satisfiedAt ? { satisfiedAt: record.satisfiedAt } : {}),
    ...(record.late !== undefined ? { late: record.late } : {}),
  };
}

/**
 * The fact signal's twin for a caller that waits (the bridge, after the router has sent the same fact on): applies
 * the fact exactly as the signal does, whichever comes first, and answers with the expectation's state.
 */
export const takeFactUpdate = defineUpdate<FactTaken, [Fact]>('takeFact');

export interface WithdrawRequest {
  reason: string;
  /** Set when withdrawn because another expectation supersedes this one. */
  supersededBy?: { expectationId: string; workflowId: string };
}
export const withdrawSignal = defineSignal<[WithdrawRequest]>('withdraw');
/** The same as an update, for callers that must know the outcome: 'withdrawn', or 'not-open' when already closed. */
export const withdrawUpdate = defineUpdate<'withdrawn' | 'not-open', [WithdrawRequest]>('withdraw');

/** Sent by an anchor to its dependents when it is satisfied. */
export interface AnchorSatisfied {
  anchorExpectationId: string;
  observedAt: string;
}
export const anchorSatisfiedSignal = defineSignal<[AnchorSatisfied]>('anchorSatisfied');

/** Sent by an anchor that was superseded: its dependents follow the superseding expectation. */
export interface AnchorMoved {
  expectationId: string;
  workflowId: string;
}
export const anchorMovedSignal = defineSignal<[AnchorMoved]>('anchorMoved');

/** Sent by a dependent to its anchor so that the anchor knows whom to notify. */
export const registerDependentSignal = defineSignal<[{ workflowId: string }]>('registerDependent');

/**
 * Sent by a later expectation B (with `after: [A]`) to A when B is satisfied, with when a bridge received the fact
 * that satisfied B (absent for a fact no bridge stamped): A's own fact, received earlier, means A was satisfied first.
 */
export interface Skipped {
  satisfiedExpectationId: string;
  receivedAt?: string;
}
export const skippedSignal = defineSignal<[Skipped]>('skipped');

/**
 * A fact on a subject as its router stores it (DESIGN 3.2): for stalls and `lastFactAt`, read from the router's history
 * when an expectation decides, never forwarded.
 */
export interface SubjectFact {
  subject: { type: string; id: string };
  factKey: string;
  observedAt: string;
  /** When a bridge received it: it counts for the expectations raised before that instant. */
  receivedAt: string;
}

/** An admin asks for a lapse task to be delivered again; the lapse is named by its delivery's messageId. */
export interface ResendLapseRequest {
  messageId: string;
  /** The admin principal's id, recorded as `delivery.resentBy`. */
  requestedBy: string;
}

/**
 * `resent`: a new delivery of the lapse started, under the same messageId and with a fresh budget. `pending` and
 * `delivered` sent nothing: a delivery is on its way, or the agent has the task. `entry` is the lapse as recorded now.
 */
export interface ResendLapseResult {
  result: 'resent' | 'pending' | 'delivered';
  entry: LapseEntry;
}

/**
 * Delivers a failed lapse task again (docs/api.md). Rejected by its validator, and so never recorded, when no lapse
 * has the messageId (`LapseNotFound`) or when the expectation has ended and the lapse was not delivered
 * (`ExpectationEnded`).
 */
export const resendLapseUpdate = defineUpdate<ResendLapseResult, [ResendLapseRequest]>('resendLapse');

/** The full record, while the workflow runs. A closed workflow's result is the same record. */
export const recordQuery = defineQuery<ExpectationRecord>('record');

/** How many expectations are anchored on this one, and how many it takes (core/limits.ts MAX_DEPENDENTS). */
export interface Dependents {
  dependents: number;
  bound: number;
}
export const dependentsQuery = defineQuery<Dependents>('dependents');

// ── fact routers (`facts:<shard>`, core/fact-shards.ts) ──────────────────────────────────────────────────────

/** One key's state in its router, as continue-as-new carries it. */
export interface RoutedKey {
  factKey: string;
  subscribers: string[];
  latest?: Fact;
  /** Workflow time at which the last observation reached the router: the retention runs from it. */
  lastReceivedAt?: string;
  seen: string[];
  /** When each observation of `seen` was first received (epoch ms, the bridge's stamp), in the same order. */
  seenAt?: number[];
  /** An expectation waited on the key while it was kept: it remembers DEDUPE_WINDOW observations, not fewer. */
  awaited?: boolean;
}

/** What a router remembers of one subject's facts across continue-as-new (the history reads start from it). */
export interface CarriedSubject {
  subject: { type: string; id: string };
  /** The fact on the subject observed last, and the one received last (often the same). */
  latest: SubjectFact;
  lastReceived: SubjectFact;
}

export interface FactRouterInput {
  /** Which router this is (0 to FACT_ROUTER_SHARDS - 1): it serves the keys and subjects that hash to it. */
  shard: number;
  /** ISO 8601 duration: how long a key's latest fact is kept for expectations raised after it. */
  retention: string;
  /**
   * `outbox`: the facts received but not yet forwarded, one per subscriber. `subjects`: the subjects with facts lately;
   * `subjectsForgottenThrough`: the latest receipt among the subjects the router let go of for want of room, so a
   * history read knows when it cannot tell.
   */
  carried?: {
    keys: RoutedKey[];
    outbox?: Array<{ workflowId: string; fact: RoutedFact }>;
    subjects?: CarriedSubject[];
    subjectsForgottenThrough?: string;
  };
}

/**
 * Facts as a bridge stores them (DESIGN 3.2): one signal per router and request, answered once the server has stored
 * it, with no worker. `facts`: those whose key this router serves (deduplicated, kept early, forwarded to whoever waits);
 * `subjects`: those on subjects this router stores. A fact whose key and subject share a router is in both lists.
 */
export interface FactBatch {
  facts?: Fact[];
  subjects?: SubjectFact[];
  /** The bridge's fact retention now (as RecordFactOptions.retention). */
  retention?: string;
}
export const factsSignal = defineSignal<[FactBatch]>('facts');

/**
 * A router's memo, read by the bridge before a raise (DescribeWorkflowExecution: no worker, no action): the keys with
 * at least ROUTER_CROWDED_KEY expectations waiting, and how many. A key not listed has fewer.
 */
export interface FactRouterMemo {
  crowded: Record<string, number>;
}

/** What the caller of recordFact wants to learn besides whether the fact was new. */
export interface RecordFactOptions {
  /** Answer `unawaited` instead of `recorded` when no expectation waits on the key (callers before it never ask). */
  tellUnawaited?: boolean;
  /**
   * Answer a new fact that expectations wait on with their workflow ids (`forwarded`), for a caller that then waits
   * for them to take it (`POST /v1/facts?wait=true`). Routers of workers before it answer `recorded` as before.
   */
  listForwarded?: boolean;
  /**
   * With `listForwarded`: the caller sends the fact to those expectations itself (`takeFact`), so the router holds
   * its own forwards back for a while (fact-router-state.ts, FORWARD_DEFERRAL_MS) and sends only to those that did not
   * take it. The answer comes before this fact is sent to anyone.
   */
  callerDelivers?: boolean;
  /**
   * The bridge's fact retention (WATCHER_FACT_RETENTION) now: a router runs for ever, so it keeps its keys' facts for
   * what the bridges say today rather than what the first of them said when it started it.
   */
  retention?: string;
  /** Answer a re-delivery with when the observation was first received (`DuplicateFact`) instead of `duplicate`. */
  tellFirstReceipt?: boolean;
}

/** A re-delivery, with when a bridge first received the observation (asked with `tellFirstReceipt`). */
export interface DuplicateFact {
  result: 'duplicate';
  firstReceivedAt: string;
}

/** A new fact sent on to the expectations waiting on its key (asked with `listForwarded`). */
export interface ForwardedFact {
  result: 'recorded';
  forwardedTo: string[];
}

/**
 * Record one observation; answers whether it was new, and, when asked, `unawaited` for a new one that no
 * expectation waits on (kept for later subscribers only), or who it was sent on to. Sent with update-with-start by
 * the bridge.
 */
export type RecordFactAnswer = 'recorded' | 'duplicate' | 'unawaited' | ForwardedFact | DuplicateFact;

export const recordFactUpdate = defineUpdate<RecordFactAnswer, [Fact, RecordFactOptions?]>('recordFact');

/**
 * Expectations waiting on keys of one router (`factKeys[i]` is the key of `workflowIds[i]`), sent by the bridge before
 * it answers `raised`: one signal-with-start per router, however many of a request's expectations it serves. The
 * router forwards a key's retained fact to each.
 */
export interface Subscribe {
  workflowIds: string[];
  factKeys?: Array<string | null>;
}
export const subscribeSignal = defineSignal<[Subscribe]>('subscribe');
/** An expectation leaves its fact router (it ended, or it took its fact from a caller). */
export interface Unsubscribe {
  workflowId: string;
}
export const unsubscribeSignal = defineSignal<[Unsubscribe]>('unsubscribe');

/**
 * How full a key is in its router: its subscribers and the bound past which it withdraws a newcomer, the facts
 * waiting to be forwarded (at most one per subscriber) and its dedupe window.
 */
export interface KeyLoad {
  subscribers: number;
  bound: number;
  outbox: number;
  seen?: number;
}
/** One key's load in its fact router: for operators and tests, never on a request's path. */
export const keyLoadQuery = defineQuery<KeyLoad, [string]>('keyLoad');

// ── memos (read by the bridge from DescribeWorkflowExecution: no worker, no billable action) ───────────────

/**
 * An expectation workflow's memo: set by the bridge at the start (`expectationId`, the new `record`, no dependents),
 * then kept by the workflow whenever its record or its dependents change. `GET /v1/expectations/{id}` and the
 * raise path's lookups read it, so they need no worker and cost Temporal nothing billable (a memo upsert is not an
 * action; a query is).
 */
export interface ExpectationMemo {
  expectationId: string;
  record: ExpectationRecord;
  dependents: number;
}
