/**
 * The fact routers (`facts:<taskQueue>:<shard>`, DESIGN 3.2): a fixed set of long-running workflows, each serving the
 * fact keys and subjects that hash to it (core/fact-shards.ts). The bridges store facts here by signal, answered by
 * the server with no worker. A router deduplicates each observation of its keys, forwards it to the expectations
 * waiting on the key (every signal that reached it since its last task in one batch), and keeps the latest for
 * `retention` so an expectation raised later is satisfied at once (early facts). Facts on its subjects are only
 * stored: an expectation reads them from this history when it decides (activities/history-reads.ts). Its state and
 * transitions are RouterState (fact-router-state.ts); this file registers the handlers and runs the loop.
 */
import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  proxyLocalActivities,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import { ROUTER_EVENT_BUDGET, ROUTER_WORKFLOW_TASK_TIMEOUT_MS } from '../core/limits.js';
import type { Fact } from '../core/types.js';
import type { ClientActivities } from './activity-types.js';
import {
  factSignal,
  factsSignal,
  keyLoadQuery,
  recordFactUpdate,
  subscribeSignal,
  unsubscribeSignal,
  withdrawSignal,
  type FactRouterInput,
  type RecordFactAnswer,
  type RecordFactOptions,
} from './messages.js';
import { RouterState } from './fact-router-state.js';
import { sendBatch } from './send-batch.js';

/**
 * From how many subscribers a batch of forwards goes by the worker's client, in one local activity, rather than by a
 * signal from the workflow to each. A workflow's signal costs no action of its own (it counts where it is received),
 * but writes two events in the router, and the server records each one's completion in the router's history one at a
 * time: for a few that is the cheapest; 80 waiters on one key waited up to 5 s for theirs on the dev server (12-07).
 * The local activity costs one action and one marker for the whole batch, and its signals go out at once.
 */
export const CLIENT_FORWARDS_FROM = 8;

/** The forwards of a large batch (CLIENT_FORWARDS_FROM), retried until they go through: a forward is owed. */
const { forwardFacts } = proxyLocalActivities<Pick<ClientActivities, 'forwardFacts'>>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Runs for ever, continuing as new when Temporal suggests it. A subscriber gets the first fact not yet sent to it,
 * which satisfies it (any fact with the key does), and is then dropped: its own unsubscribe is only for the other ends.
 */
export async function factRouterWorkflow(input: FactRouterInput): Promise<void> {
  const router = new RouterState(input);
  // What the last run carried now lives in the router's state. The SDK holds a run's arguments for as long as the run
  // lasts, so left in them it would hold every key twice (a router holds a key per open expectation).
  delete input.carried;

  // Before the fact handlers: a subscription and a fact buffered in the same first activation are dispatched in the
  // order their handlers are set, and the subscription came first (the bridge answered `raised` before the fact).
  setHandler(subscribeSignal, (request) => router.subscribeAll(request));
  setHandler(unsubscribeSignal, ({ workflowId }) => router.unsubscribe(workflowId));
  setHandler(factsSignal, (batch) => router.store(batch));
  setHandler(
    recordFactUpdate,
    async (fact: Fact, options?: RecordFactOptions): Promise<RecordFactAnswer> => {
      const recorded = router.record(fact, options);
      // Answered once the main loop has sent the forwards: "recorded" then means forwarded, and the update's completion
      // and the forwarding signals come out in one order whatever the worker's cache.
      if ('change' in recorded) await condition(() => router.forwardedThrough >= recorded.change);
      return recorded.answer;
    },
    { validator: (fact: Fact, options?: RecordFactOptions) => router.validateRecord(fact, options) },
  );
  setHandler(keyLoadQuery, (factKey) => router.keyLoad(factKey));

  // On a budget of its own as well as the server's: a cold router replays, and a history read decodes, a short run.
  const mayContinueAsNew = (): boolean =>
    (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= ROUTER_EVENT_BUDGET) &&
    allHandlersFinished() &&
    router.refused.size === 0;

  for (;;) {
    if (router.refused.size > 0) {
      await sendBatch(withdrawSignal, router.refused.take());
      continue;
    }
    // Checked before every batch, so that a router that is never idle still continues as new (outbox and all).
    if (mayContinueAsNew()) {
      await makeContinueAsNewFunc<typeof factRouterWorkflow>({ workflowTaskTimeout: ROUTER_WORKFLOW_TASK_TIMEOUT_MS })({
        ...input,
        retention: router.retention,
        carried: router.carried(),
      });
    }
    router.releaseDeferred();
    if (router.outbox.size > 0) {
      const forwards = router.outbox.take();
      const sending =
        forwards.length >= CLIENT_FORWARDS_FROM ? forwardFacts({ forwards }) : sendBatch(factSignal, forwards);
      if (router.outbox.size === 0) router.forwardedThrough = router.changes;
      // A subscriber that got a fact on its key is satisfied by it: it leaves here, so it need not unsubscribe.
      const { sent, gone } = await sending;
      for (const subscriber of [...sent, ...gone]) router.unsubscribe(subscriber);
      continue;
    }
    router.forwardedThrough = router.changes;
    const memo = router.memoIfMoved();
    if (memo) upsertMemo({ ...memo });
    const before = router.changes;
    const wake = () => router.changes !== before || mayContinueAsNew();
    const atMs = router.nextDeferredAtMs();
    if (atMs !== undefined) {
      await condition(wake, Math.max(atMs - Date.now(), 1), {
        summary: `held-back forwards go out at ${new Date(atMs).toISOString()}`,
      });
    } else {
      await condition(wake);
    }
  }
}
