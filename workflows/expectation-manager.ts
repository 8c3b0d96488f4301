/**
 * The state of one expectation workflow and everything that changes it: its message handlers, its decisions on
 * the watcher's clock, and the signals it sends. workflows/expectation.ts is only the loop around it.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  setCurrentDetails,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { addDuration } from '../core/duration.js';
import { EXPECTATION_ENDED, INVALID_EXPECTATION, LAPSE_NOT_FOUND } from '../core/failures.js';
import { MAX_SATISFIED_AFTER } from '../core/limits.js';
import type { ExpectationRecord, Fact, Lapse, LapseEntry, LapseKind } from '../core/types.js';
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
  type DueChecks,
} from './decisions.js';
import { ExpectationLinks, localLedgers } from './expectation-links.js';
import { LapseDeliveries } from './lapse-deliveries.js';
import {
  type AnchorMoved,
  type CarriedExpectationState,
  type ExpectationMemo,
  factTakenOf,
  type FactTaken,
  type ExpectationInput,
  type ResendLapseRequest,
  type ResendLapseResult,
  type RoutedFact,
  type Skipped,
  type SubjectFact,
  type WithdrawRequest,
} from './messages.js';
import type { StoredFactsInput } from './activity-types.js';
import { ExpectationDueAt, ExpectationLate, ExpectationState } from './search-attributes.js';
import { currentDetails } from './ui-text.js';

const iso = (ms: number): string => new Date(ms).toISOString();
const nowIso = (): string => iso(Date.now());
const normalized = (instant: string): string => iso(Date.parse(instant));

/** The record of a newly raised expectation; an input the workflow cannot run with fails it, not its task. */
export function initialRecord(input: ExpectationInput): ExpectationRecord {
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
    raisedAt: input.raisedAt ?? nowIso(),
    lapses: [],
    lineage: input.lineage,
    agent: { id: input.agent.id },
    origin: input.origin,
  };
}

/**
 * One expectation (DESIGN 3): the record and what the workflow needs to decide on it. Handlers change the state and
 * bump `changes`, which wakes the workflow's loop to decide again. Methods that the loop awaits return the
 * Temporal promise itself, so that the commands come out in the same order as when the loop awaited it directly.
 */
export class ExpectationManager {
  // ── carried across continue-as-new (CarriedExpectationState, see carry()) ──
  readonly record: ExpectationRecord;
  /** The horizon's stalled check is made once. */
  private horizonChecked: boolean;
  /** The anchor, the dependents and the successor, and what they are told (expectation-links.ts). */
  private readonly links: ExpectationLinks;

  // ── this run only ──
  /** Bumped by every change that moves a deadline or the state, so the loop re-decides. */
  private changeCount = 0;
  /** The search attribute values last upserted (the start set the first ones). */
  private published: { state: string; dueAt: string; late?: boolean };
  /** The memo last written (the bridge's at the start, then ours), as JSON: it is written again only when it moved. */
  private memoWritten: string;
  /** Whether the routers' histories were read for this horizon's stall (once). */
  private stallRead = false;
  /** The dueAt whose overdue the routers' histories were read for (once per dueAt). */
  private overdueRead: string | undefined;
  /**
   * Facts a bridge received after a deadline whose read is still to come, held until the loop has made it
   * (readStored): whether that deadline's lapse comes before them depends on what the read finds.
   */
  private readonly held: Array<{ fact: RoutedFact; from: 'router' | 'caller' }> = [];
  /** Satisfied by its router's signal: the router dropped it then, so it need not unsubscribe there. */
  private satisfiedByRouter = false;
  private readonly deliveries: LapseDeliveries;
  /** How long past a deadline the expectation waits for facts a bridge received before it (DESIGN 3.3). */
  private readonly settleMs: number;
  /**
   * Later expectations satisfied while this one was open, gathered for one skipped lapse that names them all: decided
   * `settleMs` after the first, as their signals come one by one, or at once when this one's own fact comes first.
   */
  private pendingSkip:
    { by: Array<{ id: string; receivedMs: number | undefined }>; decideAtMs: number; read?: true } | undefined;

  constructor(readonly input: ExpectationInput) {
    const { carried } = input;
    this.record = carried?.record ?? initialRecord(input);
    this.horizonChecked = carried?.horizonChecked ?? false;
    this.links = new ExpectationLinks(this, carried);
    this.settleMs = input.settings.settle ? addDuration(0, input.settings.settle) : 0;
    // The start (or the previous run) set the search attributes and the memo to these.
    const { state, dueAt, late } = this.record;
    this.published = { state, dueAt, ...(late !== undefined ? { late } : {}) };
    this.memoWritten = JSON.stringify(this.memo());
    this.deliveries = new LapseDeliveries(this.record, input.agent, () => this.publish());
  }

  /** What the memo holds (ExpectationMemo): the record as it is now and how many dependents it has. */
  private memo(): ExpectationMemo {
    return {
      expectationId: this.input.expectation.expectationId,
      record: this.record,
      dependents: this.links.dependentCount,
    };
  }

  /** What continue-as-new carries: exactly the fields marked so above (pending deliveries are on the record). */
  carry(): CarriedExpectationState {
    const { record, horizonChecked } = this;
    return { record, horizonChecked, ...this.links.carry() };
  }

  /** The input of the next run: the same expectation, links and settings, and the carried state. */
  nextRunInput(): ExpectationInput {
    const { carried: _carried, ...rest } = this.input;
    return { ...rest, carried: this.carry() };
  }

  /** A continued run schedules again the deliveries its predecessor left in retry. */
  resumeDeliveries(): void {
    this.deliveries.resume();
  }

  /** How many changes the handlers and decisions made so far: the loop waits for it to move. */
  get changes(): number {
    return this.changeCount;
  }

  // ── the operator's view ──

  /**
   * Search attributes when state, dueAt or lateness moved (one upsert, a billable action), the memo when the record
   * or the dependents moved (not an action; the visibility store lists it, closed runs' too), and the current details.
   */
  publish(): void {
    const { record, published } = this;
    const { late } = record;
    if (published.state !== record.state || published.dueAt !== record.dueAt || published.late !== late) {
      upsertSearchAttributes([
        { key: ExpectationState, value: record.state },
        { key: ExpectationDueAt, value: new Date(record.dueAt) },
        ...(late !== undefined ? [{ key: ExpectationLate, value: late }] : []),
      ]);
      this.published = { state: record.state, dueAt: record.dueAt, ...(late !== undefined ? { late } : {}) };
    }
    this.writeMemo();
    setCurrentDetails(currentDetails(record));
  }

  /** Writes the memo when the record or the dependents moved since it was last written. */
  private writeMemo(): void {
    const memo = JSON.stringify(this.memo());
    if (memo === this.memoWritten) return;
    upsertMemo({ record: this.record, dependents: this.links.dependentCount });
    this.memoWritten = memo;
  }

  private changed(): void {
    this.changeCount++;
    this.publish();
  }

  // ── start-up registration ──

  /**
   * What a newly raised expectation does once: links to its anchor. The bridge subscribed it to both ledgers and
   * withdrew the expectation it supersedes before it answered `raised` (docs/raise-path.md).
   */
  register(): Promise<unknown> {
    return this.links.linkToAnchor();
  }

  // ── message handlers ──

  /**
   * Exact key match only (DESIGN 3.2); the first matching fact wins, any later one is a no-op. A fact the bridge
   * received after a deadline that this workflow is still settling comes after that deadline's lapse. The fact that
   * satisfies is also a fact on the subject (`lastFactAt`), whatever subject it names.
   */
  applyFact(routed: RoutedFact, from: 'router' | 'caller' = 'caller'): void {
    const { record } = this;
    if (!isOpen(record.state) || routed.factKey !== this.input.expectation.satisfiedBy.factKey) return;
    if (this.readPendingBefore(routed.receivedAt)) {
      this.held.push({ fact: routed, from });
      this.changeCount++;
      return;
    }
    const { held: _heldByRouter, ...fact } = routed;
    this.raiseLapsesBefore(fact.receivedAt);
    this.decideSkip(fact.receivedAt);
    record.state = 'satisfied';
    record.satisfiedAt = nowIso();
    record.observedAt = normalized(fact.observedAt);
    record.satisfiedBy = fact;
    record.late = isLate(fact.observedAt, record.dueAt);
    if (record.lastFactAt === undefined || Date.parse(record.observedAt) > Date.parse(record.lastFactAt))
      record.lastFactAt = record.observedAt;
    this.satisfiedByRouter = from === 'router';
    this.abandonDeliveries('the expectation was satisfied before the lapse task was delivered');
    this.changed();
  }

  /** The fact by update (`takeFact`): applied as the signal applies it; answers with the state it left. */
  async takeFact(fact: Fact): Promise<FactTaken> {
    this.applyFact(fact);
    await condition(() => !this.held.some((entry) => 'fact' in entry && entry.fact === fact));
    return factTakenOf(this.record);
  }

  /** Withdraws an open (or lapsed) expectation; 'not-open' when it is satisfied or withdrawn already. */
  withdraw(request: WithdrawRequest): 'withdrawn' | 'not-open' {
    const { record } = this;
    if (!isOpen(record.state)) return 'not-open';
    this.decideSkip();
    record.state = 'withdrawn';
    record.withdrawnReason = request.reason;
    if (request.supersededBy) {
      record.supersededBy = request.supersededBy.expectationId;
      this.links.supersededBy(request.supersededBy.workflowId);
    }
    this.abandonDeliveries('the expectation was withdrawn before the lapse task was delivered');
    this.changed();
    return 'withdrawn';
  }

  /** No lapse task goes out once the expectation has ended (DESIGN 3.8): satisfied, withdrawn, or closing. */
  abandonDeliveries(reason: string): void {
    if (this.deliveries.pending > 0) this.deliveries.abandon(reason);
  }

  /**
   * The resend update's validator (nothing is recorded when it throws): the lapse must exist, and a lapse not yet
   * delivered may go out again only while the expectation lives on (DESIGN 3.8: no lapse task once it has ended).
   */
  validateResend({ messageId }: ResendLapseRequest): LapseEntry {
    const { record } = this;
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
    this.deliveries.resend(entry, request.requestedBy);
    this.publish();
    return { result: 'resent', entry };
  }

  /**
   * An expectation that comes after this one was satisfied while this one was open (DESIGN 3.3). Gathered with the
   * others satisfied in the same settle interval, so that the one skipped lapse lists them all in `satisfiedAfter`.
   */
  skip({ satisfiedExpectationId, receivedAt }: Skipped): void {
    if (!maySkip(this.record)) return;
    const receivedMs = receivedAt === undefined ? undefined : Date.parse(receivedAt);
    this.pendingSkip ??= { by: [], decideAtMs: Date.now() + this.settleMs };
    const known = this.pendingSkip.by.some((entry) => entry.id === satisfiedExpectationId);
    if (!known && this.pendingSkip.by.length < MAX_SATISFIED_AFTER) {
      this.pendingSkip.by.push({
        id: satisfiedExpectationId,
        receivedMs: Number.isNaN(receivedMs) ? undefined : receivedMs,
      });
    }
    this.changed();
  }

  /**
   * Raises the gathered skipped lapse. Given the receipt of this expectation's own satisfying fact, the expectations
   * whose facts a bridge received after it do not count: this one was satisfied first, however late it heard so.
   */
  private decideSkip(ownFactReceivedAt?: string): void {
    const pending = this.pendingSkip;
    if (!pending) return;
    this.pendingSkip = undefined;
    const ownMs = ownFactReceivedAt === undefined ? Number.NaN : Date.parse(ownFactReceivedAt);
    const before = pending.by.filter(
      (entry) => Number.isNaN(ownMs) || entry.receivedMs === undefined || entry.receivedMs <= ownMs,
    );
    if (before.length > 0 && maySkip(this.record)) {
      this.raiseLapse(
        'skipped',
        before.map((entry) => entry.id),
      );
      this.changed();
    }
  }

  /** The anchor is satisfied: the current dueAt becomes its observedAt plus the offset (DESIGN 3.4). */
  applyAnchor(observedAt: string): void {
    const { record } = this;
    const { anchor } = this.input.expectation;
    if (!isOpen(record.state) || !anchor) return;
    const dueAt = anchoredDueAt(observedAt, anchor.offset);
    if (dueAt === record.dueAt) return;
    record.dueAt = dueAt;
    this.changed();
  }

  /** The anchor was superseded: link to the one that superseded it. */
  followAnchor(moved: AnchorMoved): Promise<void> {
    return this.links.followAnchor(moved);
  }

  /** How many expectations are anchored on this one. */
  get dependentCount(): number {
    return this.links.dependentCount;
  }

  /** A dependent registers (ExpectationLinks.registerDependent). */
  registerDependent({ workflowId }: { workflowId: string }): Promise<void> {
    return this.links.registerDependent(workflowId);
  }

  // ── decisions on the watcher's clock ──

  private deadlineInputs() {
    const { record, horizonChecked, settleMs } = this;
    return { record, horizonChecked, lateWindow: this.input.settings.lateWindow, settleMs };
  }

  /** The next instant the loop must wake at, if any. */
  nextDeadline(): Deadline | undefined {
    const next = nextDeadline(this.deadlineInputs());
    const skip = this.pendingSkip;
    return skip && (!next || skip.decideAtMs < next.atMs) ? { kind: 'skipped', atMs: skip.decideAtMs } : next;
  }

  /** The lapses due now whose stored facts have not been read yet: the overdue, the stall, and a skip to decide. */
  private unread(): { overdue: boolean; stalled: boolean; skip: boolean } {
    const { record } = this;
    if (!isOpen(record.state)) return { overdue: false, stalled: false, skip: false };
    const { lapses } = dueChecks(this.deadlineInputs(), Date.now());
    const skip = this.pendingSkip;
    return {
      overdue: lapses.includes('overdue') && this.overdueRead !== record.dueAt,
      stalled: lapses.includes('stalled') && !this.stallRead,
      skip: skip !== undefined && skip.decideAtMs <= Date.now() && !skip.read && maySkip(record),
    };
  }

  /**
   * A lapse is due whose stored facts have not been read (readStored). Asked without an await, so that a loop with
   * nothing to read runs its activation with no command more.
   */
  readDue(): boolean {
    const { overdue, stalled, skip } = this.unread();
    return overdue || stalled || skip;
  }

  /**
   * Before a lapse: what the routers stored (DESIGN 3.3), read from their histories in one local activity. A fact with
   * the key a bridge received by due plus grace satisfies instead of the overdue, however far behind its forward is; a
   * fact on the subject received by the horizon rules the stall out; the subject's latest fact is the Lapse's
   * `lastFactAt`. A read that fails for its whole budget decides on what reached us, as without it.
   */
  async readStored(): Promise<void> {
    const { record } = this;
    const { links, expectation } = this.input;
    const { overdue, stalled } = this.unread();
    const input: StoredFactsInput = {
      expectationWorkflowId: links.self,
      sinceMs: Date.parse(record.raisedAt),
      untilMs: Date.now(),
      ...(overdue
        ? {
            key: {
              routerWorkflowId: links.factRouter,
              factKey: expectation.satisfiedBy.factKey,
              untilMs: overdueAtMs(record),
            },
          }
        : {}),
      subject: {
        routerWorkflowId: links.subjectRouter,
        subject: expectation.subject,
        ...(stalled && expectation.horizon ? { horizonMs: Date.parse(expectation.horizon) } : {}),
      },
    };
    if (overdue) this.overdueRead = record.dueAt;
    if (stalled) this.stallRead = true;
    if (this.pendingSkip) this.pendingSkip.read = true;
    let stored: Awaited<ReturnType<typeof localLedgers.storedFacts>> = {};
    try {
      stored = await localLedgers.storedFacts(input);
    } catch {
      // The histories could not be read within the activity's budget: decided on what reached us.
    }
    const latest = stored.subject?.latest;
    if (latest && (record.lastFactAt === undefined || Date.parse(latest.observedAt) > Date.parse(record.lastFactAt))) {
      record.lastFactAt = normalized(latest.observedAt);
    }
    if (stalled && stored.subject?.heardByHorizon) {
      this.horizonChecked = true;
      this.changed();
    }
    // As a caller's fact: the router may still hold us (recorded before our subscription under a zero retention, or a
    // forward to us still to send), so we leave it when we close.
    if (stored.fact) this.applyFact({ ...stored.fact, held: true }, 'caller');
    this.releaseHeld();
  }

  /** Applies, in the order they came, the held facts whose deadlines have been read since. */
  releaseHeld(): void {
    if (this.held.length === 0) return;
    const waiting = this.held.splice(0);
    for (const entry of waiting) this.applyFact(entry.fact, entry.from);
  }

  /** A fact received at `receivedAt` comes after a deadline whose stored facts are still to be read. */
  private readPendingBefore(receivedAt: string | undefined): boolean {
    const due = this.dueBeforeReceipt(receivedAt);
    if (!due) return false;
    return (
      (due.lapses.includes('overdue') && this.overdueRead !== this.record.dueAt) ||
      (due.lapses.includes('stalled') && !this.stallRead)
    );
  }

  /**
   * The deadlines that had passed when a bridge received a fact (its `receivedAt`, or now if that is later); undefined
   * for a fact that no bridge stamped (a test's, or a caller's of its own), which says nothing about deadlines.
   */
  private dueBeforeReceipt(receivedAt: string | undefined): DueChecks | undefined {
    const receivedMs = receivedAt === undefined ? Number.NaN : Date.parse(receivedAt);
    return Number.isNaN(receivedMs) ? undefined : dueBefore(this.deadlineInputs(), Math.min(receivedMs, Date.now()));
  }

  /** Raises the overdue and stalled lapses due now (DESIGN 3.3); the horizon counts as checked once passed. */
  raiseDueLapses(): void {
    if (isOpen(this.record.state)) this.raiseAll(dueChecks(this.deadlineInputs(), Date.now()));
    if (this.pendingSkip && this.pendingSkip.decideAtMs <= Date.now()) this.decideSkip();
  }

  /**
   * The lapses whose deadlines had passed when the bridge received a fact (`receivedAt`) that reaches us while we
   * still settle them: raised first, as they would have been had the fact come after them without a backlog.
   */
  private raiseLapsesBefore(receivedAt: string | undefined): void {
    const due = this.dueBeforeReceipt(receivedAt);
    if (due) this.raiseAll(due);
  }

  private raiseAll(due: DueChecks): void {
    if (due.horizonReached) this.horizonChecked = true;
    for (const lapse of due.lapses) this.raiseLapse(lapse);
    if (due.lapses.length > 0 || due.horizonReached) this.changed();
  }

  private raiseLapse(kind: LapseKind, satisfiedAfter?: string[]): void {
    const { record } = this;
    const { expectation } = this.input;
    const lapse: Lapse = {
      expectationId: expectation.expectationId,
      kind: expectation.kind,
      subject: expectation.subject,
      expects: expectation.expects,
      lapse: kind,
      projectedDueAt: record.projectedDueAt,
      dueAt: record.dueAt,
      lapsedAt: nowIso(),
      ...(record.lastFactAt ? { lastFactAt: record.lastFactAt } : {}),
      ...(satisfiedAfter ? { satisfiedAfter } : {}),
      lineage: record.lineage,
    };
    record.lapse = lapse;
    delete record.lapseTaskId;
    record.state = 'lapsed';
    this.deliveries.start(lapse);
  }

  /** Nothing is left to wait for (DESIGN 3.3): satisfied, withdrawn, or the late window has passed. */
  mayClose(): boolean {
    return this.held.length === 0 && mayClose(this.deadlineInputs(), Date.now());
  }

  /**
   * Temporal suggests it and nothing of this run would be lost: no handler still running, and no delivery in
   * retry unless the next run takes it over.
   */
  mayContinueAsNew(): boolean {
    return (
      workflowInfo().continueAsNewSuggested && allHandlersFinished() && this.held.length === 0 && !this.pendingSkip
    );
  }

  /** No delivery and no handler still running: the workflow may return. */
  idle(): boolean {
    return this.deliveries.pending === 0 && allHandlersFinished();
  }

  // ── closing ──

  /** Tells the others what the end means to them, and leaves its router (ExpectationLinks.tellOnClose). */
  tellOnClose(): Promise<unknown> {
    return this.links.tellOnClose({ routerDroppedIt: this.satisfiedByRouter, ...this.heardOnSubject() });
  }

  /**
   * The satisfying fact, for the router of our subject to store as a fact on it (DESIGN 3.2: for the other
   * expectations on the subject too), when it named no subject or another: one that named ours is stored there already.
   */
  private heardOnSubject(): { heard?: SubjectFact } {
    const { record } = this;
    const fact = record.satisfiedBy;
    if (record.state !== 'satisfied' || !fact || !record.observedAt) return {};
    const own = this.input.expectation.subject;
    if (fact.subject && fact.subject.type === own.type && fact.subject.id === own.id) return {};
    return {
      heard: {
        subject: { type: own.type, id: own.id },
        factKey: fact.factKey,
        observedAt: record.observedAt,
        receivedAt: fact.receivedAt ?? record.satisfiedAt ?? nowIso(),
      },
    };
  }

  /**
   * The record's last change: the close instant, in the result only. The memo is not written for it (an event less):
   * a reader of a closed expectation reads its result.
   */
  close(): ExpectationRecord {
    this.record.closedAt = nowIso();
    return this.record;
  }
}
