/**
 * One workflow per fact key (`fact:<factKey>`, DESIGN 3.2): records observations, forwards them to the
 * expectations waiting on the key, and keeps the latest for `retention` so an expectation raised later is
 * satisfied at once (early facts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { addDuration } from '../core/duration.js';
import { WRONG_FACT_KEY } from '../core/failures.js';
import { DEDUPE_WINDOW, MAX_FACT_LEDGER_SUBSCRIBERS } from '../core/limits.js';
import type { Fact } from '../core/types.js';
import {
  factSignal,
  ledgerLoadQuery,
  recordFactUpdate,
  retainedFactQuery,
  subscribeSignal,
  unsubscribeSignal,
  type FactLedgerInput,
  type RecordFactAnswer,
  type RecordFactOptions,
} from './messages.js';
import { Outbox } from './outbox.js';
import { refusals } from './refusals.js';

/** How many (observedAt, source) pairs the ledger remembers to recognise re-deliveries (core/limits.ts). */
export { DEDUPE_WINDOW };

/** How long a forward is held back for a caller that delivers the fact itself (twice the bridge's wait). */
export const FORWARD_DEFERRAL_MS = 10_000;

const dedupeKey = (fact: Fact): string => `${new Date(Date.parse(fact.observedAt)).toISOString()}|${fact.source}`;

/**
 * Runs while an expectation waits on the key or a fact is retained; continues as new when Temporal suggests it.
 * A subscriber gets the first fact not yet sent to it: any fact with the key satisfies, later ones are no-ops.
 */
export async function factLedgerWorkflow(input: FactLedgerInput): Promise<void> {
  const subscribers = new Set(input.carried?.subscribers ?? []);
  const seen = [...(input.carried?.seen ?? [])];
  const seenSet = new Set(seen);
  let latest = input.carried?.latest;
  let lastReceivedAt = input.carried?.lastObservedAt;
  const outbox = new Outbox<Fact>(factSignal, (pending, next) => pending ?? next, input.carried?.outbox);
  // Forwards held back while the caller delivers the fact itself: subscriber → the fact and when it goes out anyway.
  const deferred = new Map<string, { fact: Fact; atMs: number }>();
  // Newcomers past the bound, to be withdrawn: sent before anything else, so none is carried over continue-as-new.
  const refused = refusals();
  let changes = 0;
  // The last change whose forwards the main loop has sent (for recordFact's answer).
  let forwardedThrough = 0;

  const retainedUntilMs = (): number | undefined =>
    lastReceivedAt === undefined ? undefined : addDuration(Date.parse(lastReceivedAt), input.retention);
  const retained = (): Fact | undefined => {
    const until = retainedUntilMs();
    return latest && until !== undefined && Date.now() < until ? latest : undefined;
  };

  // Before the fact handlers: a subscription and a fact buffered in the same first activation are dispatched in the
  // order their handlers are set, and the subscription came first (the bridge answered `raised` before the fact).
  setHandler(subscribeSignal, ({ workflowIds }) => workflowIds.forEach(subscribe));

  function subscribe(workflowId: string): void {
    const full = !subscribers.has(workflowId) && subscribers.size >= MAX_FACT_LEDGER_SUBSCRIBERS;
    if (full) {
      const reason =
        `not registered: the fact ledger of ${JSON.stringify(input.factKey)} already forwards to ` +
        `${MAX_FACT_LEDGER_SUBSCRIBERS} expectations, its bound; withdrawn, as no fact would reach it`;
      refused.add(workflowId, { reason });
      changes++;
      return;
    }
    subscribers.add(workflowId);
    const fact = retained();
    if (fact) outbox.add(workflowId, fact);
    changes++;
  }

  setHandler(unsubscribeSignal, ({ workflowId }) => {
    subscribers.delete(workflowId);
    outbox.delete(workflowId);
    deferred.delete(workflowId);
    changes++;
  });

  setHandler(
    recordFactUpdate,
    async (fact: Fact, options?: RecordFactOptions): Promise<RecordFactAnswer> => {
      const key = dedupeKey(fact);
      if (seenSet.has(key)) return 'duplicate';
      seen.push(key);
      seenSet.add(key);
      while (seen.length > DEDUPE_WINDOW) seenSet.delete(seen.shift()!);
      // The fact retained for later subscribers is the one observed last, not the one that arrived last.
      if (!latest || Date.parse(fact.observedAt) >= Date.parse(latest.observedAt)) latest = fact;
      lastReceivedAt = new Date().toISOString();
      const forwardedTo = [...subscribers];
      const answer = options?.tellUnawaited && subscribers.size === 0 ? 'unawaited' : 'recorded';
      // The caller delivers the fact itself (the bridge's takeFact, for `wait=true`): our forwards wait FORWARD_DEFERRAL_MS,
      // and go only to a subscriber that did not take it by then (it unsubscribes), so nothing depends on the caller.
      const heldBack = options?.callerDelivers && options.listForwarded && subscribers.size > 0;
      if (heldBack) {
        const atMs = Date.now() + FORWARD_DEFERRAL_MS;
        for (const subscriber of subscribers) if (!deferred.has(subscriber)) deferred.set(subscriber, { fact, atMs });
      } else {
        for (const subscriber of subscribers) outbox.add(subscriber, fact);
      }
      const change = ++changes;
      // Answered once the main loop has sent the forwards: the update's completion and the forwarding signals then come
      // out in one order whatever the worker's cache (test/e2e/worker-restart-replay.test.ts), and "recorded" means
      // forwarded. A held-back fact is sent nothing now, but other forwards may go out in the same task: it waits too.
      if (subscribers.size > 0) await condition(() => forwardedThrough >= change);
      if (options?.listForwarded && answer === 'recorded' && forwardedTo.length > 0) return { result: answer, forwardedTo };
      return answer;
    },
    {
      validator: (fact: Fact, _options?: RecordFactOptions) => {
        if (fact.factKey !== input.factKey) {
          throw ApplicationFailure.create({
            type: WRONG_FACT_KEY,
            message: `fact key ${JSON.stringify(fact.factKey)} sent to the ledger of ${JSON.stringify(input.factKey)}`,
            nonRetryable: true,
          });
        }
      },
    },
  );

  setHandler(retainedFactQuery, retained);
  setHandler(ledgerLoadQuery, () => ({
    subscribers: subscribers.size,
    bound: MAX_FACT_LEDGER_SUBSCRIBERS,
    outbox: outbox.size,
    seen: seen.length,
  }));

  const mayClose = () =>
    subscribers.size === 0 && outbox.size === 0 && deferred.size === 0 && retained() === undefined && allHandlersFinished();
  const mayContinueAsNew = () => workflowInfo().continueAsNewSuggested && allHandlersFinished() && refused.size === 0;

  for (;;) {
    if (refused.size > 0) {
      await refused.flush();
      continue;
    }
    // Checked before every batch, so that a ledger that is never idle still continues as new (outbox and all).
    if (mayContinueAsNew()) {
      await continueAsNew<typeof factLedgerWorkflow>({
        ...input,
        // A held-back forward is carried as a due one: the next run sends it (a subscriber that took it ignores it).
        carried: {
          latest,
          seen,
          subscribers: [...subscribers],
          lastObservedAt: lastReceivedAt,
          outbox: [...outbox.carry(), ...[...deferred].map(([workflowId, { fact }]) => ({ workflowId, fact }))],
        },
      });
    }
    for (const [workflowId, { fact, atMs }] of deferred) {
      if (atMs > Date.now()) continue;
      deferred.delete(workflowId);
      outbox.add(workflowId, fact);
    }
    if (outbox.size > 0) {
      const sending = outbox.flush();
      if (outbox.size === 0) forwardedThrough = changes;
      for (const gone of await sending) subscribers.delete(gone);
      continue;
    }
    forwardedThrough = changes;
    if (mayClose()) return;
    const before = changes;
    const wake = () => changes !== before || mayClose() || mayContinueAsNew();
    const until = retainedUntilMs();
    if (deferred.size > 0) {
      const atMs = Math.min(...[...deferred.values()].map((forward) => forward.atMs));
      await condition(wake, Math.max(atMs - Date.now(), 1), { summary: `held-back forwards go out at ${new Date(atMs).toISOString()}` });
    } else if (subscribers.size === 0 && until !== undefined && until > Date.now()) {
      await condition(wake, until - Date.now(), { summary: `retention ends at ${new Date(until).toISOString()}` });
    } else {
      await condition(wake);
    }
  }
}
