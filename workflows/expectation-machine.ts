/**
 * The expectation as a state machine (DESIGN 3.3–3.7): one state value and every transition of it, without a Temporal
 * API, so that each transition, lapse decision and refusal is unit-tested without a server. What a transition asks of
 * the world (deliver, abandon, publish) goes through ExpectationPorts, called where it falls, so the workflow's
 * commands come out in the order of the transitions.
 */
import { ApplicationFailure } from '@temporalio/common';
import { addDuration } from '../core/duration.js';
import { EXPECTATION_ENDED, INVALID_EXPECTATION, LAPSE_NOT_FOUND } from '../core/failures.js';
import { MAX_SATISFIED_AFTER } from '../core/limits.js';
import type { ExpectationRecord, Lapse, LapseEntry, LapseKind } from '../core/types.js';
import type { StoredFacts, StoredFactsInput } from './activity-types.js';
import {
  anchoredDueAt,
  dueBefore,
  dueChecks,
  isLate,
  isOpen,
  mayClose,
  maySkip,
  nextDeadline,
  overdueAtMs,
  type Deadline,
  type DeadlineInputs,
  type DueChecks,
} from './decisions.js';
import { lapseEntryOf } from './lapse-entries.js';
import type {
  ExpectationInput,
  ResendLapseRequest,
  ResendLapseResult,
  RoutedFact,
  Skipped,
  SubjectFact,
  WithdrawRequest,
} from './messages.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const normalized = (instant: string): string => iso(Date.parse(instant));

/** The first reception an early fact may have to satisfy an expectation raised at `raisedAt`: the retention before. */
function earliestEarlyFactMs(raisedAt: string, retention: string): number {
  const raisedMs = Date.parse(raisedAt);
  return raisedMs - (addDuration(raisedMs, retention) - raisedMs);
}

/** The record of a newly raised expectation; an input the workflow cannot run with fails it, not its task. */
export function initialRecord(input: ExpectationInput, nowMs = Date.now()): ExpectationRecord {
  const dueMs = Date.parse(input.expectation.dueAt);
  if (Number.isNaN(dueMs)) {
    throw ApplicationFailure.create({
      type: INVALID_EXPECTATION,
      message: 'dueAt is not an instant',
      nonRetryable: true,
    });
  }
  // The bridge refuses these (core/schemas/extension.ts); a caller that skips it gets a failure, not a RangeError loop.
  const { grace, anchor } = input.expectation;
  for (const [field, duration] of [
    ['grace', grace],
    ['anchor.offset', anchor?.offset],
  ] as const) {
    if (duration !== undefined && !Number.isFinite(new Date(addDuration(dueMs, duration)).getTime())) {
      throw ApplicationFailure.create({
        type: INVALID_EXPECTATION,
        message: `dueAt plus ${field} (${duration}) is not an instant`,
        nonRetryable: true,
      });
    }
  }
  return {
    expectation: input.expectation,
    projectedDueAt: iso(dueMs),
    dueAt: iso(dueMs),
    state: 'open',
    raisedAt: input.raisedAt ?? iso(nowMs),
    lapses: [],
    lineage: input.lineage,
    agent: { id: input.agent.id },
    origin: input.origin,
  };
}

/** Where a fact came from: its router's forward, or a caller (the takeFact update, a read of the routers). */
export type FactFrom = 'router' | 'caller';

/** Later expectations satisfied while this one was open, gathered for one skipped lapse decided at `decideAtMs`. */
export interface PendingSkip {
  by: Array<{ id: string; receivedMs: number | undefined }>;
  decideAtMs: number;
  /** The routers' histories were read for it. */
  read?: true;
}

/** What this run settles between a deadline and its decision (DESIGN 3.3); continue-as-new carries none of it. */
export interface Settling {
  /** What the routers' histories were read for: the dueAt of an overdue, and the stall. */
  read: { overdueOf?: string; stall: boolean };
  /** Facts a bridge received after a deadline whose read is still to come, in their order: applied after it. */
  held: Array<{ fact: RoutedFact; from: FactFrom }>;
  /** A skipped lapse being gathered. */
  skip?: PendingSkip;
}

/** Everything the expectation decides on, in one value. */
export interface MachineState {
  readonly record: ExpectationRecord;
  /** The horizon's stall was decided (carried across continue-as-new). */
  horizonChecked: boolean;
  settling: Settling;
  /** Where the satisfying fact came from; from its router, the router dropped it then and need not be left. */
  satisfiedFrom?: FactFrom;
  /** Bumped by every change that moves a deadline or the state: the loop decides again when it moves. */
  changes: number;
}

/** What the transitions ask of the workflow around the machine; each is called at the point of its transition. */
export interface ExpectationPorts {
  /** The watcher's clock (workflow time), epoch ms. */
  now(): number;
  /** A lapse's entry is on the record: deliver its task. */
  deliver(entry: LapseEntry): void;
  /** Give up the pending deliveries, if any (DESIGN 3.8). */
  abandon(reason: string): void;
  /** Deliver a settled lapse again, under its messageId. */
  resend(entry: LapseEntry, requestedBy: string): void;
  /** The record moved: show it. */
  publish(): void;
  /** Withdrawn for the expectation of this workflow id, which its dependents follow. */
  supersededBy(workflowId: string): void;
}

/** A read of the routers' histories to make before deciding: its input, and whether it decides the stall. */
export interface StoredRead {
  input: StoredFactsInput;
  stalled: boolean;
}

/** What an ending expectation tells its routers besides leaving. */
export interface Leaving {
  /** Its router dropped it already, having sent it its fact. */
  routerDroppedIt: boolean;
  /** The satisfying fact, for its subject's router to store as a fact on the subject. */
  heard?: SubjectFact;
}

/**
 * One expectation's state and its transitions (DESIGN 3.7): `open` becomes `satisfied` (applyFact), `withdrawn`
 * (withdraw) or `lapsed` (raiseDueLapses, a skip); `lapsed` becomes `satisfied` or `withdrawn`; mayClose ends it.
 */
export class ExpectationMachine {
  readonly state: MachineState;
  /** How long past a deadline the expectation waits for facts a bridge received before it (DESIGN 3.3). */
  private readonly settleMs: number;

  constructor(
    readonly input: ExpectationInput,
    private readonly ports: ExpectationPorts,
  ) {
    const { carried } = input;
    this.state = {
      record: carried?.record ?? initialRecord(input, ports.now()),
      horizonChecked: carried?.horizonChecked ?? false,
      settling: { read: { stall: false }, held: [] },
      changes: 0,
    };
    this.settleMs = input.settings.settle ? addDuration(0, input.settings.settle) : 0;
  }

  get record(): ExpectationRecord {
    return this.state.record;
  }

  private changed(): void {
    this.state.changes++;
    this.ports.publish();
  }

  private deadlineInputs(): DeadlineInputs {
    const { record, horizonChecked } = this.state;
    return { record, horizonChecked, lateWindow: this.input.settings.lateWindow, settleMs: this.settleMs };
  }

  /**
   * Exact key match only (DESIGN 3.2); the first matching fact wins, any later one is a no-op. A fact the bridge
   * received after a deadline still being settled is held until that deadline's read, and comes after its lapse. The
   * fact that satisfies is also a fact on the subject (`lastFactAt`), whatever subject it names.
   */
  applyFact(routed: RoutedFact, from: FactFrom = 'caller'): void {
    const { state } = this;
    const { record } = state;
    if (!isOpen(record.state) || routed.factKey !== this.input.expectation.satisfiedBy.factKey) return;
    if (this.readPendingBefore(routed.receivedAt)) {
      state.settling.held.push({ fact: routed, from });
      state.changes++;
      return;
    }
    const { held: _heldByRouter, ...fact } = routed;
    this.raiseLapsesBefore(fact.receivedAt);
    this.decideSkip(fact.receivedAt);
    record.state = 'satisfied';
    record.satisfiedAt = iso(this.ports.now());
    record.observedAt = normalized(fact.observedAt);
    record.satisfiedBy = fact;
    record.late = isLate(fact.observedAt, record.dueAt);
    if (record.lastFactAt === undefined || Date.parse(record.observedAt) > Date.parse(record.lastFactAt))
      record.lastFactAt = record.observedAt;
    state.satisfiedFrom = from;
    this.ports.abandon('the expectation was satisfied before the lapse task was delivered');
    this.changed();
  }

  /** Whether this fact is held, waiting for a read (the takeFact update answers once it is not). */
  holds(fact: RoutedFact): boolean {
    return this.state.settling.held.some((entry) => entry.fact === fact);
  }

  /** Withdraws an open (or lapsed) expectation; 'not-open' when it is satisfied or withdrawn already. */
  withdraw(request: WithdrawRequest): 'withdrawn' | 'not-open' {
    const { record } = this.state;
    if (!isOpen(record.state)) return 'not-open';
    this.decideSkip();
    record.state = 'withdrawn';
    record.withdrawnReason = request.reason;
    if (request.supersededBy) {
      record.supersededBy = request.supersededBy.expectationId;
      this.ports.supersededBy(request.supersededBy.workflowId);
    }
    this.ports.abandon('the expectation was withdrawn before the lapse task was delivered');
    this.changed();
    return 'withdrawn';
  }

  /**
   * The resend update's validator (nothing is recorded when it throws): the lapse must exist, and a lapse not yet
   * delivered may go out again only while the expectation lives on (DESIGN 3.8: no lapse task once it has ended).
   */
  validateResend({ messageId }: ResendLapseRequest): LapseEntry {
    const { record } = this.state;
    const self = this.input.expectation.expectationId;
    const entry = record.lapses.find((candidate) => candidate.delivery.messageId === messageId);
    if (!entry) {
      throw ApplicationFailure.create({
        type: LAPSE_NOT_FOUND,
        message: `expectation '${self}' has no lapse whose delivery has messageId '${messageId}'`,
        nonRetryable: true,
      });
    }
    if (entry.delivery.status === 'pending' || entry.delivery.status === 'delivered') return entry;
    // A lapsed expectation past its late window is closing: its loop has ended and no delivery may start.
    let ended: string | undefined;
    if (!isOpen(record.state)) ended = `is ${record.state}`;
    else if (this.mayClose()) ended = 'is closing: its late window has ended';
    if (ended) {
      throw ApplicationFailure.create({
        type: EXPECTATION_ENDED,
        message: `expectation '${self}' ${ended}; no lapse task is delivered once an expectation has ended`,
        nonRetryable: true,
      });
    }
    return entry;
  }

  /**
   * Delivers a lapse that failed (or was abandoned) again under its messageId, with a fresh budget; a lapse whose
   * delivery is pending or delivered is answered as it is, and nothing is sent twice.
   */
  resendLapse(request: ResendLapseRequest): ResendLapseResult {
    const entry = this.validateResend(request);
    if (entry.delivery.status === 'pending' || entry.delivery.status === 'delivered') {
      return { result: entry.delivery.status, entry };
    }
    this.ports.resend(entry, request.requestedBy);
    this.ports.publish();
    return { result: 'resent', entry };
  }

  /**
   * An expectation that comes after this one was satisfied while this one was open (DESIGN 3.3). Gathered with the
   * others satisfied in the same settle interval, so that the one skipped lapse lists them all in `satisfiedAfter`.
   */
  skip({ satisfiedExpectationId, receivedAt }: Skipped): void {
    const { state } = this;
    if (!maySkip(state.record)) return;
    const receivedMs = receivedAt === undefined ? undefined : Date.parse(receivedAt);
    const skip = (state.settling.skip ??= { by: [], decideAtMs: this.ports.now() + this.settleMs });
    const known = skip.by.some((entry) => entry.id === satisfiedExpectationId);
    if (!known && skip.by.length < MAX_SATISFIED_AFTER) {
      skip.by.push({ id: satisfiedExpectationId, receivedMs: Number.isNaN(receivedMs) ? undefined : receivedMs });
    }
    this.changed();
  }

  /**
   * Raises the gathered skipped lapse. Given the receipt of this expectation's own satisfying fact, the expectations
   * whose facts a bridge received after it do not count: this one was satisfied first, however late it heard so.
   */
  private decideSkip(ownFactReceivedAt?: string): void {
    const { state } = this;
    const pending = state.settling.skip;
    if (!pending) return;
    state.settling.skip = undefined;
    const ownMs = ownFactReceivedAt === undefined ? Number.NaN : Date.parse(ownFactReceivedAt);
    const before = pending.by.filter(
      (entry) => Number.isNaN(ownMs) || entry.receivedMs === undefined || entry.receivedMs <= ownMs,
    );
    if (before.length > 0 && maySkip(state.record)) {
      this.raiseLapse(
        'skipped',
        before.map((entry) => entry.id),
      );
      this.changed();
    }
  }

  /** The anchor is satisfied: the current dueAt becomes its observedAt plus the offset (DESIGN 3.4). */
  applyAnchor(observedAt: string): void {
    const { record } = this.state;
    const { anchor } = this.input.expectation;
    if (!isOpen(record.state) || !anchor) return;
    const dueAt = anchoredDueAt(observedAt, anchor.offset);
    if (dueAt === record.dueAt) return;
    record.dueAt = dueAt;
    this.changed();
  }

  /** The next instant the loop must wake at, if any. */
  nextDeadline(): Deadline | undefined {
    const next = nextDeadline(this.deadlineInputs());
    const { skip } = this.state.settling;
    return skip && (!next || skip.decideAtMs < next.atMs) ? { kind: 'skipped', atMs: skip.decideAtMs } : next;
  }

  /** The lapses due now whose stored facts have not been read yet: the overdue, the stall, and a skip to decide. */
  private unread(): { overdue: boolean; stalled: boolean; skip: boolean } {
    const { record } = this.state;
    const { read, skip } = this.state.settling;
    if (!isOpen(record.state)) return { overdue: false, stalled: false, skip: false };
    const nowMs = this.ports.now();
    const { lapses } = dueChecks(this.deadlineInputs(), nowMs);
    return {
      overdue: lapses.includes('overdue') && read.overdueOf !== record.dueAt,
      stalled: lapses.includes('stalled') && !read.stall,
      skip: skip !== undefined && skip.decideAtMs <= nowMs && !skip.read && maySkip(record),
    };
  }

  /** A lapse is due whose stored facts have not been read (startRead). */
  readDue(): boolean {
    const { overdue, stalled, skip } = this.unread();
    return overdue || stalled || skip;
  }

  /**
   * The read of what the routers stored (DESIGN 3.3) that the lapses due now need, counted as made: the key's router
   * before an overdue, the subject's before any lapse (by the horizon before a stall).
   */
  startRead(): StoredRead {
    const { state } = this;
    const { record } = state;
    const { links, expectation } = this.input;
    const { overdue, stalled } = this.unread();
    const input: StoredFactsInput = {
      expectationWorkflowId: links.self,
      sinceMs: Date.parse(record.raisedAt),
      untilMs: this.ports.now(),
      ...(overdue
        ? {
            key: {
              routerWorkflowId: links.factRouter,
              factKey: expectation.satisfiedBy.factKey,
              untilMs: overdueAtMs(record),
              // An early fact satisfies too (DESIGN 3.2): the router kept it for its retention before the raise.
              earliestMs: earliestEarlyFactMs(record.raisedAt, this.input.settings.factRetention),
            },
          }
        : {}),
      subject: {
        routerWorkflowId: links.subjectRouter,
        subject: expectation.subject,
        ...(stalled && expectation.horizon ? { horizonMs: Date.parse(expectation.horizon) } : {}),
      },
    };
    const { settling } = state;
    if (overdue) settling.read.overdueOf = record.dueAt;
    if (stalled) settling.read.stall = true;
    if (settling.skip) settling.skip.read = true;
    return { input, stalled };
  }

  /**
   * What the read found: a fact with the key a bridge received by due plus grace satisfies instead of the overdue,
   * however far behind its forward is; a fact on the subject by the horizon rules the stall out; the subject's latest
   * fact is the Lapse's `lastFactAt`. A read that failed (nothing found) decides on what reached us, as without it.
   */
  finishRead({ stalled }: StoredRead, stored: StoredFacts): void {
    const { state } = this;
    const { record } = state;
    const latest = stored.subject?.latest;
    if (latest && (record.lastFactAt === undefined || Date.parse(latest.observedAt) > Date.parse(record.lastFactAt))) {
      record.lastFactAt = normalized(latest.observedAt);
    }
    if (stalled && stored.subject?.heardByHorizon) {
      state.horizonChecked = true;
      this.changed();
    }
    // As a caller's fact: the router may still hold us (recorded before our subscription under a zero retention, or a
    // forward to us still to send), so we leave it when we close.
    if (stored.fact) this.applyFact({ ...stored.fact, held: true }, 'caller');
    this.releaseHeld();
  }

  /** Applies, in the order they came, the held facts whose deadlines have been read since. */
  releaseHeld(): void {
    const { held } = this.state.settling;
    if (held.length === 0) return;
    for (const entry of held.splice(0)) this.applyFact(entry.fact, entry.from);
  }

  /** A fact received at `receivedAt` comes after a deadline whose stored facts are still to be read. */
  private readPendingBefore(receivedAt: string | undefined): boolean {
    const due = this.dueBeforeReceipt(receivedAt);
    if (!due) return false;
    const { record } = this.state;
    const { read } = this.state.settling;
    return (
      (due.lapses.includes('overdue') && read.overdueOf !== record.dueAt) ||
      (due.lapses.includes('stalled') && !read.stall)
    );
  }

  /**
   * The deadlines that had passed when a bridge received a fact (its `receivedAt`, or now if that is later); undefined
   * for a fact that no bridge stamped (a test's, or a caller's of its own), which says nothing about deadlines.
   */
  private dueBeforeReceipt(receivedAt: string | undefined): DueChecks | undefined {
    const receivedMs = receivedAt === undefined ? Number.NaN : Date.parse(receivedAt);
    return Number.isNaN(receivedMs)
      ? undefined
      : dueBefore(this.deadlineInputs(), Math.min(receivedMs, this.ports.now()));
  }

  /** Raises the overdue and stalled lapses due now (DESIGN 3.3), and a skipped lapse whose time has come. */
  raiseDueLapses(): void {
    const { state } = this;
    if (isOpen(state.record.state)) this.raiseAll(dueChecks(this.deadlineInputs(), this.ports.now()));
    const { skip } = state.settling;
    if (skip && skip.decideAtMs <= this.ports.now()) this.decideSkip();
  }

  /**
   * The lapses whose deadlines had passed when the bridge received a fact (`receivedAt`) that reaches us while we
   * still settle them: raised first, as they would have been had the fact come after them without a backlog.
   */
  private raiseLapsesBefore(receivedAt: string | undefined): void {
    const due = this.dueBeforeReceipt(receivedAt);
    if (due) this.raiseAll(due);
  }

  /** Raises the lapses due; the horizon counts as checked once passed. */
  private raiseAll(due: DueChecks): void {
    if (due.horizonReached) this.state.horizonChecked = true;
    for (const lapse of due.lapses) this.raiseLapse(lapse);
    if (due.lapses.length > 0 || due.horizonReached) this.changed();
  }

  /** The lapse goes on the record with its delivery's entry (its messageId, DESIGN 3.8), and its task is delivered. */
  private raiseLapse(kind: LapseKind, satisfiedAfter?: string[]): void {
    const { record } = this.state;
    const { expectation } = this.input;
    const lapse: Lapse = {
      expectationId: expectation.expectationId,
      kind: expectation.kind,
      subject: expectation.subject,
      expects: expectation.expects,
      lapse: kind,
      projectedDueAt: record.projectedDueAt,
      dueAt: record.dueAt,
      lapsedAt: iso(this.ports.now()),
      ...(record.lastFactAt ? { lastFactAt: record.lastFactAt } : {}),
      ...(satisfiedAfter ? { satisfiedAfter } : {}),
      lineage: record.lineage,
    };
    record.lapse = lapse;
    delete record.lapseTaskId;
    record.state = 'lapsed';
    const entry = lapseEntryOf(lapse);
    record.lapses.push(entry);
    this.ports.deliver(entry);
  }

  /** Nothing is left to wait for (DESIGN 3.3): satisfied, withdrawn, or the late window has passed. */
  mayClose(): boolean {
    return this.state.settling.held.length === 0 && mayClose(this.deadlineInputs(), this.ports.now());
  }

  /** Quiescent: no fact held and no skip being gathered, so continuing as new loses nothing of this run's settling. */
  quiescent(): boolean {
    const { held, skip } = this.state.settling;
    return held.length === 0 && !skip;
  }

  /**
   * What the end means to the routers: whether to leave the key's (its router dropped it when it sent the fact), and
   * the satisfying fact for the subject's router when it named no subject or another (DESIGN 3.2).
   */
  leaving(): Leaving {
    const { record, satisfiedFrom } = this.state;
    const fact = record.satisfiedBy;
    const routerDroppedIt = satisfiedFrom === 'router';
    if (record.state !== 'satisfied' || !fact || !record.observedAt) return { routerDroppedIt };
    const own = this.input.expectation.subject;
    if (fact.subject && fact.subject.type === own.type && fact.subject.id === own.id) return { routerDroppedIt };
    const heard: SubjectFact = {
      subject: { type: own.type, id: own.id },
      factKey: fact.factKey,
      observedAt: record.observedAt,
      receivedAt: fact.receivedAt ?? record.satisfiedAt ?? iso(this.ports.now()),
    };
    return { routerDroppedIt, heard };
  }

  /** The record's last change: the close instant, in the result only (a reader of a closed one reads its result). */
  close(): ExpectationRecord {
    this.state.record.closedAt = iso(this.ports.now());
    return this.state.record;
  }
}
