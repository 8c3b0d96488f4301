/**
 * One workflow per subject (`subject:<type>:<id>`, DESIGN 3.2): tells the expectations on the subject that a fact
 * on it reached the watcher, for stalls and `lastFactAt`, but for the fact that satisfies one without a horizon,
 * which its router brings. Started by expectations only; a fact never starts it.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { MAX_SUBJECT_LEDGER_SUBSCRIBERS } from '../core/limits.js';
import {
  ledgerLoadQuery,
  subjectFactSignal,
  subjectObservedSignal,
  subscribeSignal,
  unsubscribeSignal,
  type SubjectFact,
  type SubjectLedgerInput,
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

/**
 * Runs while an expectation on the subject is open; continues as new when Temporal suggests it. Facts are
 * coalesced per subscriber: an expectation only needs to know that one arrived and the latest observedAt.
 */
export async function subjectLedgerWorkflow(input: SubjectLedgerInput): Promise<void> {
  // Subscriber → the fact key that satisfies it, given for those that leave with it (no horizon, see subscribe).
  const subscribers = new Map<string, string | undefined>(
    (input.carried?.subscribers ?? []).map((s) => [s.workflowId, s.factKey]),
  );
  let lastFactAt = input.carried?.lastFactAt;
  const outbox = new Outbox<SubjectFact>(subjectFactSignal, latestObserved, input.carried?.outbox);
  // Newcomers past the bound, to be withdrawn: sent before anything else, so none is carried over continue-as-new.
  const refused = refusals();
  let changes = 0;

  setHandler(subscribeSignal, ({ workflowIds, factKeys = [] }) =>
    workflowIds.forEach((id, i) => subscribe(id, factKeys[i] ?? undefined)),
  );

  /**
   * A subscriber given with its fact key leaves when a fact with that key reaches us: the same fact satisfies it
   * through its router, and it recorded the fact as its subject's. Only one without a horizon is given so, as a fact
   * its router turns away as a re-delivery would otherwise leave a horizon unwatched.
   */
  function subscribe(workflowId: string, factKey: string | undefined): void {
    const full = !subscribers.has(workflowId) && subscribers.size >= MAX_SUBJECT_LEDGER_SUBSCRIBERS;
    if (full) {
      const { type, id } = input.subject;
      const reason =
        `not registered: the subject ledger of ${JSON.stringify(`${type}/${id}`)} already forwards to ` +
        `${MAX_SUBJECT_LEDGER_SUBSCRIBERS} expectations, its bound; withdrawn, as it would lapse stalled for lack of facts it never hears of`;
      refused.add(workflowId, { reason });
      changes++;
      return;
    }
    subscribers.set(workflowId, factKey);
    changes++;
  }

  setHandler(unsubscribeSignal, ({ workflowId, heard }) => {
    subscribers.delete(workflowId);
    outbox.delete(workflowId);
    if (heard) observe(heard);
    changes++;
  });

  setHandler(subjectObservedSignal, (fact) => observe(fact));

  /** A fact on the subject: sent on to every subscriber but those it satisfies (see subscribe). */
  function observe(fact: SubjectFact): void {
    if (lastFactAt === undefined || Date.parse(fact.observedAt) > Date.parse(lastFactAt)) lastFactAt = fact.observedAt;
    for (const [subscriber, factKey] of subscribers) {
      if (factKey === fact.factKey) {
        subscribers.delete(subscriber);
        outbox.delete(subscriber);
      } else {
        outbox.add(subscriber, fact);
      }
    }
    changes++;
  }

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
      await continueAsNew<typeof subjectLedgerWorkflow>({
        ...input,
        carried: {
          subscribers: [...subscribers].map(([workflowId, factKey]) =>
            factKey === undefined ? { workflowId } : { workflowId, factKey },
          ),
          lastFactAt,
          outbox: outbox.carry(),
        },
      });
    }
    if (outbox.size > 0) {
      for (const gone of (await outbox.flush()).gone) subscribers.delete(gone);
      continue;
    }
    if (mayClose()) return;
    const before = changes;
    await condition(() => changes !== before || mayClose() || mayContinueAsNew());
  }
}
