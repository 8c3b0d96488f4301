/**
 * The expectation's decisions as pure functions of its record and the watcher's clock (DESIGN 3.3, 3.4):
 * which deadline comes next, which lapses are due at an instant, lateness, anchoring and closing.
 * No Temporal API here, so every rule is unit-tested without a server.
 */
import { addDurationBounded } from '../core/duration.js';
import type { ExpectationRecord, ExpectationState, LapseKind } from '../core/types.js';

/** What the deadline decisions read: the record plus the once-only horizon check and the late window. */
export interface DeadlineInputs {
  record: Pick<ExpectationRecord, 'expectation' | 'state' | 'dueAt' | 'lapses' | 'lastFactAt' | 'raisedAt'>;
  horizonChecked: boolean;
  /** ISO 8601 duration a lapsed expectation waits for a late fact after its last lapse. */
  lateWindow: string;
  /**
   * How long the workflow waits past a deadline before it lapses (DESIGN 3.3): a fact a bridge received before the
   * deadline may take the bridge's fact wait (WATCHER_FACT_WAIT) to be stored. Absent, zero.
   */
  settleMs?: number;
}

export type DeadlineKind = 'overdue' | 'stalled' | 'skipped' | 'close';

/** An absolute instant at which the workflow must wake up, and why. */
export interface Deadline {
  kind: DeadlineKind;
  atMs: number;
}

/** How long a request's facts may take to be stored unless WATCHER_FACT_WAIT says otherwise (ms). */
export const DEFAULT_FACT_WAIT_MS = 2_000;

/** What the settle interval adds to the fact wait: the clocks of the bridge and the worker, and the read's own time. */
export const SETTLE_MARGIN_MS = 1_000;

/**
 * The settle interval (ISO 8601 duration) the expectations of a bridge with this fact wait (WATCHER_FACT_WAIT, ms)
 * wait past each deadline before they decide it (DESIGN 3.3): the longest a fact received before it can take to be
 * stored, and a margin.
 */
export function settleIntervalOf(factWaitMs: number): string {
  return `PT${(factWaitMs + SETTLE_MARGIN_MS) / 1000}S`;
}

/** Open in the seed's sense: neither satisfied nor withdrawn (a lapsed expectation is still open). */
export function isOpen(state: ExpectationState): boolean {
  return state === 'open' || state === 'lapsed';
}

/** Whether a lapse of this kind was already raised for this dueAt (at most one per (id, lapse, dueAt)). */
export function hasLapse(record: DeadlineInputs['record'], lapse: LapseKind, dueAt: string): boolean {
  const dueMs = Date.parse(dueAt);
  return record.lapses.some((entry) => entry.lapse.lapse === lapse && Date.parse(entry.lapse.dueAt) === dueMs);
}

/** Current dueAt plus grace (absent grace is zero). */
export function overdueAtMs(record: DeadlineInputs['record']): number {
  return addDurationBounded(Date.parse(record.dueAt), record.expectation.grace ?? 'PT0S');
}

/** The workflow-clock instant of the latest lapse, if any. */
export function lastLapsedAtMs(record: DeadlineInputs['record']): number | undefined {
  const times = record.lapses.map((entry) => Date.parse(entry.lapse.lapsedAt));
  return times.length === 0 ? undefined : Math.max(...times);
}

/**
 * Deadlines that are still to come or to be handled: overdue, stalled check, and (when nothing else is) close. An
 * overdue or stalled deadline is decided `settleMs` after it, or after the raise when it had passed already, so that a
 * fact a bridge received before it counts however late the workflow hears of it.
 */
export function pendingDeadlines(inputs: DeadlineInputs): Deadline[] {
  const { record } = inputs;
  if (!isOpen(record.state)) return [];
  const decidedAt = (deadlineMs: number) => Math.max(deadlineMs, Date.parse(record.raisedAt)) + (inputs.settleMs ?? 0);
  const deadlines: Deadline[] = [];
  if (!hasLapse(record, 'overdue', record.dueAt))
    deadlines.push({ kind: 'overdue', atMs: decidedAt(overdueAtMs(record)) });
  if (!inputs.horizonChecked && record.expectation.horizon) {
    deadlines.push({ kind: 'stalled', atMs: decidedAt(Date.parse(record.expectation.horizon)) });
  }
  const lastLapsed = lastLapsedAtMs(record);
  if (deadlines.length === 0 && record.state === 'lapsed' && lastLapsed !== undefined) {
    deadlines.push({ kind: 'close', atMs: addDurationBounded(lastLapsed, inputs.lateWindow) });
  }
  return deadlines;
}

/** The earliest pending deadline, or undefined when the expectation waits for nothing but signals. */
export function nextDeadline(inputs: DeadlineInputs): Deadline | undefined {
  return pendingDeadlines(inputs).reduce<Deadline | undefined>(
    (earliest, deadline) => (earliest === undefined || deadline.atMs < earliest.atMs ? deadline : earliest),
    undefined,
  );
}

/** What is due at `nowMs`: the lapses to raise and whether the horizon has been reached (checked once). */
export interface DueChecks {
  lapses: Array<'overdue' | 'stalled'>;
  horizonReached: boolean;
}

/**
 * Overdue when the current dueAt plus grace has passed and no overdue lapse was raised for that dueAt; stalled when
 * the horizon has passed and it was not checked yet. Whether a fact on the subject came by the horizon is read from
 * what the routers stored before the stall is raised (ExpectationMachine.finishRead), which checks the horizon then.
 */
export function dueChecks(inputs: DeadlineInputs, nowMs: number): DueChecks {
  const due: DueChecks = { lapses: [], horizonReached: false };
  for (const deadline of pendingDeadlines(inputs)) {
    if (deadline.atMs > nowMs) continue;
    if (deadline.kind === 'overdue') due.lapses.push('overdue');
    if (deadline.kind === 'stalled') {
      due.horizonReached = true;
      due.lapses.push('stalled');
    }
  }
  return due;
}

/**
 * What a fact the bridge received at `receivedAtMs` comes after: the deadlines that had passed when it was received
 * (after the raise), whose lapses are raised before the fact is applied, as they would have been without a backlog.
 */
export function dueBefore(inputs: DeadlineInputs, receivedAtMs: number): DueChecks {
  return dueChecks({ ...inputs, settleMs: 0 }, receivedAtMs - 1);
}

/** Whether a skipped lapse may be raised now: the expectation is open and has none for the current dueAt. */
export function maySkip(record: DeadlineInputs['record']): boolean {
  return isOpen(record.state) && !hasLapse(record, 'skipped', record.dueAt);
}

/** A satisfying fact is late when its observedAt is after the current dueAt. */
export function isLate(observedAt: string, currentDueAt: string): boolean {
  return Date.parse(observedAt) > Date.parse(currentDueAt);
}

/** The current dueAt once the anchor is satisfied: the anchor's observedAt plus the offset, at most the end of 9999. */
export function anchoredDueAt(anchorObservedAt: string, offset: string): string {
  return new Date(addDurationBounded(Date.parse(anchorObservedAt), offset)).toISOString();
}

/**
 * Satisfied and withdrawn expectations close at once; a lapsed one closes `lateWindow` after its last lapse
 * when no overdue or stalled check is still pending; an open one never closes by itself.
 */
export function mayClose(inputs: DeadlineInputs, nowMs: number): boolean {
  if (!isOpen(inputs.record.state)) return true;
  const pending = pendingDeadlines(inputs);
  return pending.length === 1 && pending[0]!.kind === 'close' && pending[0]!.atMs <= nowMs;
}
