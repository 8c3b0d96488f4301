/**
 * The fact routers (`facts:<shard>`, DESIGN 3.2): a fixed set of long-running workflows, each serving the fact keys
 * that hash to it (core/fact-shards.ts). A router records each observation of its keys, forwards it to the
 * expectations waiting on the key, and keeps the latest for `retention` so an expectation raised later is satisfied
 * at once (early facts). A fact nobody waits on costs one update and starts nothing; a key's subscriptions and facts
 * serialise here, so none is missed whatever their order on the wire.
 */
import { ApplicationFailure } from '@temporalio/common';
import { allHandlersFinished, condition, continueAsNew, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import { addDuration, parseDuration } from '../core/duration.js';
import { shardOf, utf8Length } from '../core/fact-shards.js';
import { WRONG_FACT_KEY } from '../core/failures.js';
import {
  DEDUPE_WINDOW,
  MAX_FACT_LEDGER_SUBSCRIBERS,
  MAX_RETAINED_FACTS_PER_ROUTER,
  MAX_ROUTER_CARRIED_BYTES,
  ROUTER_CROWDED_KEY,
} from '../core/limits.js';
import type { Fact } from '../core/types.js';
import {
  factSignal,
  keyLoadQuery,
  recordFactUpdate,
  subscribeSignal,
  unsubscribeSignal,
  type FactRouterInput,
  type FactRouterMemo,
  type RecordFactAnswer,
  type RecordFactOptions,
  type RoutedKey,
} from './messages.js';
import { Outbox } from './outbox.js';
import { refusals } from './refusals.js';

/** How many (observedAt, source) pairs a key remembers to recognise re-deliveries (core/limits.ts). */
export { DEDUPE_WINDOW };

/**
 * A key nobody has waited on remembers fewer: only what its retained fact needs, as its state is carried for days. A
 * key whose subscribers were sent their fact (and dropped) keeps the full window while it is kept, so that the facts
 * re-sent after it are still answered `duplicate`.
 */
export const DEDUPE_WINDOW_UNAWAITED = 8;

/** Every this many changes the router measures what it would carry (a JSON pass over its state). */
const BUDGET_CHECK_EVERY = 200;

/** How long a forward is held back for a caller that delivers the fact itself (twice the bridge's wait). */
export const FORWARD_DEFERRAL_MS = 10_000;

const dedupeKey = (fact: Fact): string => `${new Date(Date.parse(fact.observedAt)).toISOString()}|${fact.source}`;

/** One key's state in its router. */
class KeyState {
  readonly subscribers: Set<string>;
  latest: Fact | undefined;
  /** Workflow time (ms) at which the last observation reached the router: the retention runs from it. */
  lastReceivedMs: number | undefined;
  /** Some expectation waited on the key since it was last forgotten. */
  awaited: boolean;
  private readonly seen: string[];
  /** When each of `seen` was first received (epoch ms), in the same order. */
  private readonly seenAt: number[];
  private readonly seenSet: Set<string>;

  constructor(readonly factKey: string, carried?: RoutedKey) {
    this.subscribers = new Set(carried?.subscribers ?? []);
    this.latest = carried?.latest;
    this.lastReceivedMs = carried?.lastReceivedAt === undefined ? undefined : Date.parse(carried.lastReceivedAt);
    this.awaited = carried?.awaited === true || this.subscribers.size > 0;
    this.seen = [...(carried?.seen ?? [])];
    this.seenAt = [...(carried?.seenAt ?? [])];
    this.seenSet = new Set(this.seen);
  }

  /**
   * Remembers the fact's (observedAt, source), received at `receivedMs`; undefined when it is new, else when it was
   * first received (NaN when that is not known: remembered by a run before the instants were).
   */
  remember(fact: Fact, receivedMs: number): number | undefined {
    const key = dedupeKey(fact);
    if (this.seenSet.has(key)) {
      const at = this.seen.lastIndexOf(key) - (this.seen.length - this.seenAt.length);
      return at >= 0 ? this.seenAt[at]! : Number.NaN;
    }
    this.seen.push(key);
    this.seenAt.push(receivedMs);
    this.seenSet.add(key);
    this.trim();
    return undefined;
  }

  /** Keeps the dedupe window within what the key's use needs, or within `window` when the router is short of room. */
  trim(window = this.awaited ? DEDUPE_WINDOW : DEDUPE_WINDOW_UNAWAITED): void {
    while (this.seen.length > window) this.seenSet.delete(this.seen.shift()!);
    while (this.seenAt.length > this.seen.length) this.seenAt.shift();
  }

  get seenCount(): number {
    return this.seen.length;
  }

  carry(): RoutedKey {
    return {
      factKey: this.factKey,
      subscribers: [...this.subscribers],
      ...(this.latest ? { latest: this.latest } : {}),
      ...(this.lastReceivedMs === undefined ? {} : { lastReceivedAt: new Date(this.lastReceivedMs).toISOString() }),
      seen: [...this.seen],
      seenAt: [...this.seenAt],
      ...(this.awaited ? { awaited: true } : {}),
    };
  }
}

/**
 * Runs for ever, continuing as new when Temporal suggests it. A subscriber gets the first fact not yet sent to it,
 * which satisfies it (any fact with the key does), and is then dropped: its own unsubscribe is only for the other ends.
 */
export async function factRouterWorkflow(input: FactRouterInput): Promise<void> {
  const keys = new Map<string, KeyState>((input.carried?.keys ?? []).map((k) => [k.factKey, new KeyState(k.factKey, k)]));
  // Subscriber → the key it waits on (an expectation waits on exactly one), for unsubscribe and for gone subscribers.
  const keyOf = new Map<string, string>();
  for (const state of keys.values()) for (const subscriber of state.subscribers) keyOf.set(subscriber, state.factKey);
  const outbox = new Outbox<Fact>(factSignal, (pending, next) => pending ?? next, input.carried?.outbox);
  // Forwards held back while the caller delivers the fact itself: subscriber → the fact and when it goes out anyway.
  const deferred = new Map<string, { fact: Fact; atMs: number }>();
  // Newcomers past a key's bound, to be withdrawn: sent before anything else, so none is carried over continue-as-new.
  const refused = refusals();
  let changes = 0;
  let recordedFacts = 0;
  // The last change whose forwards the main loop has sent (for recordFact's answer).
  let forwardedThrough = 0;
  let memoJson = '';
  // What the bridges say the retention is (RecordFactOptions.retention), carried over continue-as-new.
  let retention = input.retention;

  const retainedUntilMs = (state: KeyState): number | undefined =>
    state.lastReceivedMs === undefined ? undefined : addDuration(state.lastReceivedMs, retention);
  const retained = (state: KeyState): Fact | undefined => {
    const until = retainedUntilMs(state);
    return state.latest && until !== undefined && Date.now() < until ? state.latest : undefined;
  };
  const stateOf = (factKey: string): KeyState => {
    let state = keys.get(factKey);
    if (!state) keys.set(factKey, (state = new KeyState(factKey)));
    return state;
  };
  /** Drops a key that no one waits on and that retains nothing. */
  const forgetIfIdle = (state: KeyState): void => {
    if (state.subscribers.size === 0 && retained(state) === undefined) keys.delete(state.factKey);
  };

  /**
   * Keeps the router's state within what continue-as-new may carry: idle keys go, and past
   * MAX_RETAINED_FACTS_PER_ROUTER the keys nobody waits on go oldest first (their early fact with them).
   */
  function prune(): void {
    const unawaited: KeyState[] = [];
    for (const state of keys.values()) {
      forgetIfIdle(state);
      if (keys.has(state.factKey) && state.subscribers.size === 0) unawaited.push(state);
    }
    if (unawaited.length > MAX_RETAINED_FACTS_PER_ROUTER) {
      unawaited.sort((a, b) => (a.lastReceivedMs ?? 0) - (b.lastReceivedMs ?? 0));
      for (const state of unawaited.slice(0, unawaited.length - MAX_RETAINED_FACTS_PER_ROUTER)) keys.delete(state.factKey);
    }
    keepWithinBudget();
  }

  const bytesOf = (state: KeyState): number => utf8Length(JSON.stringify(state.carry()));
  // Set when even the least the router can keep exceeds its budget: newcomers are then refused, not carried.
  let full = false;

  /**
   * Keeps what continue-as-new carries within MAX_ROUTER_CARRIED_BYTES, whatever the keys hold: first the keys nobody
   * waits on go, oldest first; then the dedupe windows of the keys waited on shrink, longest first, to the least a
   * key keeps. What remains (subscribers and the facts they wait for) is refused more of while it is over.
   */
  function keepWithinBudget(): void {
    const sizes = new Map([...keys.values()].map((state) => [state, bytesOf(state)]));
    let bytes = utf8Length(JSON.stringify(outbox.carry()));
    for (const size of sizes.values()) bytes += size;
    const byAge = [...sizes.keys()].filter((state) => state.subscribers.size === 0);
    byAge.sort((a, b) => (a.lastReceivedMs ?? 0) - (b.lastReceivedMs ?? 0));
    for (const state of byAge) {
      if (bytes <= MAX_ROUTER_CARRIED_BYTES) break;
      bytes -= sizes.get(state)!;
      keys.delete(state.factKey);
    }
    const byWindow = [...keys.values()].filter((state) => state.seenCount > DEDUPE_WINDOW_UNAWAITED);
    byWindow.sort((a, b) => b.seenCount - a.seenCount);
    for (const state of byWindow) {
      if (bytes <= MAX_ROUTER_CARRIED_BYTES) break;
      state.trim(DEDUPE_WINDOW_UNAWAITED);
      const size = bytesOf(state);
      bytes -= sizes.get(state)! - size;
    }
    full = bytes > MAX_ROUTER_CARRIED_BYTES;
  }

  /** The memo the bridge reads before a raise (no worker, no action): the keys close to their bound. */
  function publishMemo(): void {
    const crowded: Record<string, number> = {};
    for (const state of keys.values()) if (state.subscribers.size >= ROUTER_CROWDED_KEY) crowded[state.factKey] = state.subscribers.size;
    const memo: FactRouterMemo = { crowded };
    const json = JSON.stringify(memo);
    if (json === memoJson) return;
    memoJson = json;
    upsertMemo({ ...memo });
  }

  // Before the fact handlers: a subscription and a fact buffered in the same first activation are dispatched in the
  // order their handlers are set, and the subscription came first (the bridge answered `raised` before the fact).
  setHandler(subscribeSignal, ({ workflowIds, factKeys = [] }) =>
    workflowIds.forEach((id, i) => {
      const factKey = factKeys[i];
      if (typeof factKey === 'string') subscribe(id, factKey);
    }),
  );

  function subscribe(workflowId: string, factKey: string): void {
    const state = stateOf(factKey);
    const newcomer = !state.subscribers.has(workflowId);
    if ((newcomer && state.subscribers.size >= MAX_FACT_LEDGER_SUBSCRIBERS) || (newcomer && full)) {
      const reason = full
        ? `not registered: the fact router of ${JSON.stringify(factKey)} holds as much as it may carry ` +
          `(${MAX_ROUTER_CARRIED_BYTES} bytes); withdrawn, as no fact would reach it`
        : `not registered: ${JSON.stringify(factKey)} already has ${MAX_FACT_LEDGER_SUBSCRIBERS} expectations waiting ` +
          `on it, its bound; withdrawn, as no fact would reach it`;
      refused.add(workflowId, { reason });
      changes++;
      return;
    }
    state.subscribers.add(workflowId);
    state.awaited = true;
    keyOf.set(workflowId, factKey);
    const fact = retained(state);
    if (fact) outbox.add(workflowId, fact);
    changes++;
  }

  function unsubscribe(workflowId: string): void {
    const factKey = keyOf.get(workflowId);
    keyOf.delete(workflowId);
    outbox.delete(workflowId);
    deferred.delete(workflowId);
    const state = factKey === undefined ? undefined : keys.get(factKey);
    if (state) {
      state.subscribers.delete(workflowId);
      state.trim();
      forgetIfIdle(state);
    }
    // A router that refused newcomers for want of room takes them again once it has room.
    if (full) keepWithinBudget();
    changes++;
  }

  setHandler(unsubscribeSignal, ({ workflowId }) => unsubscribe(workflowId));

  setHandler(
    recordFactUpdate,
    async (fact: Fact, options?: RecordFactOptions): Promise<RecordFactAnswer> => {
      if (options?.retention !== undefined) retention = options.retention;
      const state = stateOf(fact.factKey);
      const receivedMs = fact.receivedAt === undefined ? Date.now() : Date.parse(fact.receivedAt);
      const firstReceivedMs = state.remember(fact, Number.isNaN(receivedMs) ? Date.now() : receivedMs);
      if (firstReceivedMs !== undefined) {
        if (!options?.tellFirstReceipt || Number.isNaN(firstReceivedMs)) return 'duplicate';
        return { result: 'duplicate', firstReceivedAt: new Date(firstReceivedMs).toISOString() };
      }
      if (++recordedFacts % BUDGET_CHECK_EVERY === 0) keepWithinBudget();
      // The fact retained for later subscribers is the one observed last, not the one that arrived last.
      if (!state.latest || Date.parse(fact.observedAt) >= Date.parse(state.latest.observedAt)) state.latest = fact;
      state.lastReceivedMs = Date.now();
      const subscribers = [...state.subscribers];
      if (subscribers.length === 0) {
        // Nobody waits: kept for the retention (if any), forgotten otherwise. Nothing to forward, nothing to wait for.
        forgetIfIdle(state);
        if (keys.size > MAX_RETAINED_FACTS_PER_ROUTER * 1.1) prune();
        return options?.tellUnawaited ? 'unawaited' : 'recorded';
      }
      // The caller delivers the fact itself (the bridge's takeFact, for `wait=true`): our forwards wait FORWARD_DEFERRAL_MS,
      // and go only to a subscriber that did not take it by then (it unsubscribes), so nothing depends on the caller.
      if (options?.callerDelivers && options.listForwarded) {
        const atMs = Date.now() + FORWARD_DEFERRAL_MS;
        for (const subscriber of subscribers) if (!deferred.has(subscriber)) deferred.set(subscriber, { fact, atMs });
      } else {
        for (const subscriber of subscribers) outbox.add(subscriber, fact);
      }
      const change = ++changes;
      // Answered once the main loop has sent the forwards: "recorded" then means forwarded, and the update's completion
      // and the forwarding signals come out in one order whatever the worker's cache.
      await condition(() => forwardedThrough >= change);
      return options?.listForwarded ? { result: 'recorded', forwardedTo: subscribers } : 'recorded';
    },
    {
      validator: (fact: Fact, options?: RecordFactOptions) => {
        // A retention the router could not compute with is refused before the update is accepted.
        if (options?.retention !== undefined) parseDuration(options.retention);
        if (shardOf(fact.factKey) !== input.shard) {
          throw ApplicationFailure.create({
            type: WRONG_FACT_KEY,
            message: `fact key ${JSON.stringify(fact.factKey)} belongs to router ${shardOf(fact.factKey)}, not to router ${input.shard}`,
            nonRetryable: true,
          });
        }
      },
    },
  );

  setHandler(keyLoadQuery, (factKey) => {
    const state = keys.get(factKey);
    return {
      subscribers: state?.subscribers.size ?? 0,
      bound: MAX_FACT_LEDGER_SUBSCRIBERS,
      outbox: [...(state?.subscribers ?? [])].filter((subscriber) => outbox.has(subscriber)).length,
      seen: state?.seenCount ?? 0,
    };
  });

  const mayContinueAsNew = () => workflowInfo().continueAsNewSuggested && allHandlersFinished() && refused.size === 0;

  for (;;) {
    if (refused.size > 0) {
      await refused.flush();
      continue;
    }
    // Checked before every batch, so that a router that is never idle still continues as new (outbox and all).
    if (mayContinueAsNew()) {
      prune();
      await continueAsNew<typeof factRouterWorkflow>({
        ...input,
        retention,
        // A held-back forward is carried as a due one: the next run sends it (a subscriber that took it ignores it).
        carried: {
          keys: [...keys.values()].map((state) => state.carry()),
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
      // A subscriber that got a fact on its key is satisfied by it: it leaves here, so it need not unsubscribe.
      const { sent, gone } = await sending;
      for (const subscriber of [...sent, ...gone]) unsubscribe(subscriber);
      continue;
    }
    forwardedThrough = changes;
    publishMemo();
    const before = changes;
    const wake = () => changes !== before || mayContinueAsNew();
    if (deferred.size > 0) {
      const atMs = Math.min(...[...deferred.values()].map((forward) => forward.atMs));
      await condition(wake, Math.max(atMs - Date.now(), 1), { summary: `held-back forwards go out at ${new Date(atMs).toISOString()}` });
    } else {
      await condition(wake);
    }
  }
}
