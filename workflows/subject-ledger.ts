/**
 * One workflow per subject (`subject:<type>:<id>`, DESIGN 3.2): tells the expectations on the subject that a fact
 * on it reached the watcher, for stalls and `lastFactAt`, but for the fact that satisfies one without a horizon,
 * which its router brings. Started by expectations only (the first subscription in its input); a fact never starts it.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { addDuration } from '../core/duration.js';
import { MAX_SUBJECT_LEDGER_SUBSCRIBERS, SUBJECT_RECENT_KEYS, SUBJECT_RECENT_KEYS_MS } from '../core/limits.js';
import {
  ledgerLoadQuery,
  subjectFactSignal,
  subjectObservedSignal,
  subscribeSignal,
  unsubscribeSignal,
  type SubjectFact,
  type SubjectLedgerInput,
  type Subscribe,
} from './messages.js';
import { Outbox } from './outbox.js';
import { refusals } from './refusals.js';

/**
 * Two facts for one subscriber coalesce into the latest observed, received when the first of them was: a fact the
 * bridge received before a horizon broke the silence then, however late the signal that carries it.
 */
export function latestObserved(pending: SubjectFact | undefined, next: SubjectFact): SubjectFact {
  if (!pending) return next;
  const latest = Date.parse(pending.observedAt) >= Date.parse(next.observedAt) ? pending : next;
  const receivedAt =
    Date.parse(pending.receivedAt) <= Date.parse(next.receivedAt) ? pending.receivedAt : next.receivedAt;
  return { ...latest, receivedAt };
}

/** What a subject ledger holds: its subscribers, what it owes them, and the subject's latest fact. */
class SubjectLedger {
  /** Subscriber → the fact key that satisfies it, given for those that leave with it (no horizon, see subscribe). */
  readonly subscribers: Map<string, string | undefined>;
  lastFactAt: string | undefined;
  readonly outbox: Outbox<SubjectFact>;
  /** Newcomers past the bound, to be withdrawn: sent before anything else, so none is carried over continue-as-new. */
  readonly refused = refusals();
  /** Fact keys seen lately → when (workflow time, ms), oldest first. */
  private readonly recentKeys: Map<string, number>;
  /** Counts every change, for the main loop's wait. */
  changes = 0;

  constructor(private readonly input: SubjectLedgerInput) {
    this.subscribers = new Map((input.carried?.subscribers ?? []).map((s) => [s.workflowId, s.factKey]));
    this.recentKeys = new Map(input.carried?.recentKeys ?? []);
    this.lastFactAt = input.carried?.lastFactAt;
    this.outbox = new Outbox<SubjectFact>(subjectFactSignal, latestObserved, input.carried?.outbox);
  }

  /**
   * A subscriber given with its fact key leaves when a fact with that key reaches us: the same fact satisfies it
   * through its router, and it recorded the fact as its subject's. Only one without a horizon is given so, as a fact
   * its router turns away as a re-delivery would otherwise leave a horizon unwatched. One whose key we saw within
   * `windowMs` (half the retention, so its router still holds the fact) leaves at once: its subscription was on the
   * wire while that fact was recorded, and the fact satisfies it all the same. An expectation satisfied so does not
   * unsubscribe (ExpectationManager.leftSubjectOnFact).
   */
  subscribe(workflowId: string, factKey: string | undefined, windowMs: number): void {
    this.changes++;
    const seenAt = factKey === undefined ? undefined : this.recentKeys.get(factKey);
    if (seenAt !== undefined && Date.now() - seenAt <= windowMs && !this.subscribers.has(workflowId)) return;
    if (!this.subscribers.has(workflowId) && this.subscribers.size >= MAX_SUBJECT_LEDGER_SUBSCRIBERS) {
      const { type, id } = this.input.subject;
      const reason =
        `not registered: the subject ledger of ${JSON.stringify(`${type}/${id}`)} already forwards to ` +
        `${MAX_SUBJECT_LEDGER_SUBSCRIBERS} expectations, its bound; withdrawn, as it would lapse stalled for lack of facts it never hears of`;
      this.refused.add(workflowId, { reason });
      return;
    }
    this.subscribers.set(workflowId, factKey);
  }

  unsubscribe(workflowId: string, heard: SubjectFact | undefined): void {
    this.leave(workflowId);
    if (heard) this.observe(heard);
    this.changes++;
  }

  /** A fact on the subject: sent on to every subscriber but those it satisfies (see subscribe). */
  observe(fact: SubjectFact): void {
    this.remember(fact.factKey);
    if (this.lastFactAt === undefined || Date.parse(fact.observedAt) > Date.parse(this.lastFactAt)) {
      this.lastFactAt = fact.observedAt;
    }
    for (const [subscriber, factKey] of this.subscribers) {
      if (factKey === fact.factKey) this.leave(subscriber);
      else this.outbox.add(subscriber, fact);
    }
    this.changes++;
  }

  private remember(factKey: string): void {
    const now = Date.now();
    this.recentKeys.delete(factKey);
    this.recentKeys.set(factKey, now);
    for (const [key, at] of this.recentKeys) {
      if (this.recentKeys.size <= SUBJECT_RECENT_KEYS && now - at <= SUBJECT_RECENT_KEYS_MS) break;
      this.recentKeys.delete(key);
    }
  }

  private leave(workflowId: string): void {
    this.subscribers.delete(workflowId);
    this.outbox.delete(workflowId);
  }

  carried(): SubjectLedgerInput['carried'] {
    return {
      subscribers: [...this.subscribers].map(([workflowId, factKey]) =>
        factKey === undefined ? { workflowId } : { workflowId, factKey },
      ),
      lastFactAt: this.lastFactAt,
      outbox: this.outbox.carry(),
      ...(this.recentKeys.size > 0 ? { recentKeys: [...this.recentKeys] } : {}),
    };
  }
}

/**
 * Runs while an expectation on the subject is open; continues as new when Temporal suggests it. Facts are
 * coalesced per subscriber: an expectation only needs to know that one arrived and the latest observedAt.
 */
export async function subjectLedgerWorkflow(input: SubjectLedgerInput): Promise<void> {
  const ledger = new SubjectLedger(input);
  const { subscribers, outbox, refused } = ledger;
  const subscribeAll = ({ workflowIds, factKeys = [], retention }: Subscribe) => {
    const windowMs = retention ? Math.min(SUBJECT_RECENT_KEYS_MS, addDuration(0, retention) / 2) : 0;
    workflowIds.forEach((id, i) => ledger.subscribe(id, factKeys[i] ?? undefined, windowMs));
  };
  // Before any handler: the start's subscription comes before whatever the first task also brings.
  if (input.subscribe) subscribeAll(input.subscribe);
  setHandler(subscribeSignal, subscribeAll);
  setHandler(unsubscribeSignal, ({ workflowId, heard }) => ledger.unsubscribe(workflowId, heard));
  setHandler(subjectObservedSignal, (fact) => ledger.observe(fact));
  setHandler(ledgerLoadQuery, () => ({
    subscribers: subscribers.size,
    bound: MAX_SUBJECT_LEDGER_SUBSCRIBERS,
    outbox: outbox.size,
  }));

  const mayClose = () => subscribers.size === 0 && outbox.size === 0 && allHandlersFinished();
  const mayContinueAsNew = () => workflowInfo().continueAsNewSuggested && allHandlersFinished() && refused.size === 0;

  for (;;) {
    if (refused.size > 0) {
      await refused.flush();
      continue;
    }
    // Checked before every batch, so that a ledger that is never idle still continues as new (outbox and all).
    if (mayContinueAsNew()) {
      await continueAsNew<typeof subjectLedgerWorkflow>({ subject: input.subject, carried: ledger.carried() });
    }
    if (outbox.size > 0) {
      for (const gone of (await outbox.flush()).gone) subscribers.delete(gone);
      continue;
    }
    if (mayClose()) return;
    const before = ledger.changes;
    await condition(() => ledger.changes !== before || mayClose() || mayContinueAsNew());
  }
}
