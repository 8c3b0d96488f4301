/**
 * One workflow per fact key (`fact:<factKey>`, DESIGN 3.2): records observations, forwards each new one to the
 * expectations waiting on the key, and keeps the latest for `retention` so an expectation raised later is
 * satisfied at once (early facts).
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { ApplicationFailure } from '@temporalio/common';
import type { Fact } from '../src/schemas/extension.js';
import { addDuration } from './duration.js';
import {
  factSignal,
  recordFactUpdate,
  retainedFactQuery,
  subscribeSignal,
  unsubscribeSignal,
  type FactLedgerInput,
} from './messages.js';

/** How many (observedAt, source) pairs the ledger remembers to recognise re-deliveries. */
export const DEDUPE_WINDOW = 1000;

/** ApplicationFailure type of a fact sent to the ledger of another key. */
export const WRONG_FACT_KEY = 'WrongFactKey';

const dedupeKey = (fact: Fact): string => `${new Date(Date.parse(fact.observedAt)).toISOString()}|${fact.source}`;

/** Runs while an expectation waits on the key or a fact is retained; continues as new when Temporal suggests it. */
export async function factLedgerWorkflow(input: FactLedgerInput): Promise<void> {
  const subscribers = new Set(input.carried?.subscribers ?? []);
  const seen = [...(input.carried?.seen ?? [])];
  const seenSet = new Set(seen);
  let latest = input.carried?.latest;
  let lastReceivedAt = input.carried?.lastObservedAt;
  let changes = 0;

  const retainedUntilMs = (): number | undefined =>
    lastReceivedAt === undefined ? undefined : addDuration(Date.parse(lastReceivedAt), input.retention);
  const retained = (): Fact | undefined => {
    const until = retainedUntilMs();
    return latest && until !== undefined && Date.now() < until ? latest : undefined;
  };

  /** Signals one subscriber; a closed one is dropped (a closed expectation waits for nothing). */
  async function send(workflowId: string, fact: Fact): Promise<void> {
    try {
      await getExternalWorkflowHandle(workflowId).signal(factSignal, fact);
    } catch {
      subscribers.delete(workflowId);
      changes++;
    }
  }

  setHandler(
    recordFactUpdate,
    async (fact) => {
      const key = dedupeKey(fact);
      if (seenSet.has(key)) return 'duplicate';
      seen.push(key);
      seenSet.add(key);
      while (seen.length > DEDUPE_WINDOW) seenSet.delete(seen.shift()!);
      latest = fact;
      lastReceivedAt = new Date().toISOString();
      changes++;
      await Promise.all([...subscribers].map((id) => send(id, fact)));
      return 'recorded';
    },
    {
      validator: (fact) => {
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

  setHandler(subscribeSignal, async ({ workflowId }) => {
    subscribers.add(workflowId);
    changes++;
    const fact = retained();
    if (fact) await send(workflowId, fact);
  });

  setHandler(unsubscribeSignal, ({ workflowId }) => {
    subscribers.delete(workflowId);
    changes++;
  });

  setHandler(retainedFactQuery, retained);

  const mayClose = () => subscribers.size === 0 && retained() === undefined && allHandlersFinished();
  const mayContinueAsNew = () => workflowInfo().continueAsNewSuggested && allHandlersFinished();

  for (;;) {
    if (mayClose()) return;
    if (mayContinueAsNew()) {
      await continueAsNew<typeof factLedgerWorkflow>({
        ...input,
        carried: { latest, seen, subscribers: [...subscribers], lastObservedAt: lastReceivedAt },
      });
    }
    const before = changes;
    const wake = () => changes !== before || mayClose() || mayContinueAsNew();
    const until = retainedUntilMs();
    if (subscribers.size === 0 && until !== undefined && until > Date.now()) {
      await condition(wake, until - Date.now(), { summary: `retention ends at ${new Date(until).toISOString()}` });
    } else {
      await condition(wake);
    }
  }
}
