/**
 * What a fact router holds (workflows/fact-router.ts): each key's subscribers, latest fact and dedupe window, the
 * forwards on their way, each subject's latest facts, and the bounds that keep it all within what continue-as-new may
 * carry, and every transition of it: no Temporal call here, so each is unit-tested without a server; the workflow sets
 * the handlers, runs the loop, sends what the outbox queued and writes the memo.
 */
import { ApplicationFailure } from '@temporalio/common';
import { addDuration, parseDuration } from '../core/duration.js';
import { shardOf, utf8Length } from '../core/fact-shards.js';
import { WRONG_FACT_KEY } from '../core/failures.js';
import {
  DEDUPE_WINDOW,
  MAX_KEY_SUBSCRIBERS,
  MAX_RETAINED_FACTS_PER_ROUTER,
  MAX_ROUTER_CARRIED_BYTES,
  MAX_SUBJECTS_PER_ROUTER,
  ROUTER_CROWDED_KEY,
} from '../core/limits.js';
import type { Fact } from '../core/types.js';
import type {
  CarriedSubject,
  FactBatch,
  FactRouterInput,
  FactRouterMemo,
  KeyLoad,
  RecordFactAnswer,
  RecordFactOptions,
  RoutedFact,
  RoutedKey,
  SubjectFact,
  Subscribe,
} from './messages.js';
import { carriedObservations, dedupeKey } from './key-observations.js';
import { Outbox } from './outbox.js';
import { refusals } from './refusals.js';
import { foldSubjectFact, subjectEntryKey } from './subject-facts.js';

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

/** A retention the router can compute with (a signal cannot be refused, so one it cannot is ignored). */
function isDuration(text: string): boolean {
  try {
    parseDuration(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * One key's state in its router. Kept small, as a router holds one for every open expectation's key (100,000 open: a
 * worker holds them all): most keys have a single subscriber and nothing seen yet, so neither a Set nor a dedupe map
 * is made until a key needs one.
 */
export class KeyState {
  /** The expectations waiting on the key: none, one, or (only past one) a Set. */
  private waiting: string | Set<string> | undefined;
  latest: Fact | undefined;
  /** Workflow time (ms) at which the last observation reached the router: the retention runs from it. */
  lastReceivedMs: number | undefined;
  /** Some expectation waited on the key since it was last forgotten. */
  awaited: boolean;
  /**
   * Each remembered observation (observedAt, source) → when it was first received (epoch ms; NaN when not known:
   * remembered by a run before the instants were), oldest first; made at the first.
   */
  private seen: Map<string, number> | undefined;

  constructor(
    readonly factKey: string,
    carried?: RoutedKey,
  ) {
    for (const subscriber of carried?.subscribers ?? []) this.addSubscriber(subscriber);
    this.latest = carried?.latest;
    this.lastReceivedMs = carried?.lastReceivedAt === undefined ? undefined : Date.parse(carried.lastReceivedAt);
    this.awaited = carried?.awaited === true || this.subscriberCount > 0;
    const seen = carriedObservations(carried);
    if (seen.length > 0) this.seen = new Map(seen);
  }

  get subscriberCount(): number {
    return this.waiting === undefined ? 0 : typeof this.waiting === 'string' ? 1 : this.waiting.size;
  }

  hasSubscriber(workflowId: string): boolean {
    return typeof this.waiting === 'string' ? this.waiting === workflowId : this.waiting?.has(workflowId) === true;
  }

  addSubscriber(workflowId: string): void {
    if (this.waiting === undefined) this.waiting = workflowId;
    else if (typeof this.waiting === 'string') {
      if (this.waiting !== workflowId) this.waiting = new Set([this.waiting, workflowId]);
    } else this.waiting.add(workflowId);
  }

  deleteSubscriber(workflowId: string): void {
    if (this.waiting === workflowId) this.waiting = undefined;
    else if (typeof this.waiting === 'object') {
      this.waiting.delete(workflowId);
      if (this.waiting.size === 1) this.waiting = this.waiting.values().next().value!;
    }
  }

  /** The subscribers, in the order they subscribed. */
  subscribers(): string[] {
    return this.waiting === undefined ? [] : typeof this.waiting === 'string' ? [this.waiting] : [...this.waiting];
  }

  /**
   * Remembers the fact's (observedAt, source), received at `receivedMs`; undefined when it is new, else when it was
   * first received (NaN when that is not known).
   */
  remember(fact: Fact, receivedMs: number): number | undefined {
    const key = dedupeKey(fact);
    const first = this.seen?.get(key);
    if (first !== undefined) return first;
    (this.seen ??= new Map()).set(key, receivedMs);
    this.trim();
    return undefined;
  }

  /** Keeps the dedupe window within what the key's use needs, or within `window` when the router is short of room. */
  trim(window = this.awaited ? DEDUPE_WINDOW : DEDUPE_WINDOW_UNAWAITED): void {
    if (!this.seen) return;
    for (const key of this.seen.keys()) {
      if (this.seen.size <= window) break;
      this.seen.delete(key);
    }
  }

  get seenCount(): number {
    return this.seen?.size ?? 0;
  }

  carry(): RoutedKey {
    const seenAt = [...(this.seen?.values() ?? [])];
    const known = seenAt.findIndex((ms) => !Number.isNaN(ms));
    return {
      factKey: this.factKey,
      subscribers: this.subscribers(),
      ...(this.latest ? { latest: this.latest } : {}),
      ...(this.lastReceivedMs === undefined ? {} : { lastReceivedAt: new Date(this.lastReceivedMs).toISOString() }),
      seen: [...(this.seen?.keys() ?? [])],
      seenAt: known < 0 ? [] : seenAt.slice(known),
      ...(this.awaited ? { awaited: true } : {}),
    };
  }
}

/** A recorded fact's answer, or the change the caller waits for the loop to have sent its forwards through. */
export type Recorded = { answer: RecordFactAnswer } | { change: number; answer: RecordFactAnswer };

/** The router's keys and forwards. Handlers call it; the loop sends what it queued. */
export class RouterState {
  readonly keys: Map<string, KeyState>;
  /** Subscriber → the key it waits on (an expectation waits on exactly one), for unsubscribe and for gone subscribers. */
  private readonly keyOf = new Map<string, string>();
  readonly outbox: Outbox<RoutedFact>;
  /** Forwards held back while the caller delivers the fact itself: subscriber → the fact and when it goes out anyway. */
  readonly deferred = new Map<string, { fact: Fact; atMs: number }>();
  /** Newcomers past a key's bound, to be withdrawn: sent before anything else, so none is carried over continue-as-new. */
  readonly refused = refusals();
  changes = 0;
  /** The last change whose forwards the main loop has sent (for recordFact's answer). */
  forwardedThrough = 0;
  private recordedFacts = 0;
  private memoJson = '';
  /** What the bridges say the retention is (RecordFactOptions.retention), carried over continue-as-new. */
  retention: string;
  /** Set when even the least the router can keep exceeds its budget: newcomers are then refused, not carried. */
  private full = false;
  /** Each subject's latest facts, least recently received first (Map order). */
  private readonly subjects: Map<string, CarriedSubject>;
  /** The latest receipt (epoch ms) among the subjects let go of for want of room. */
  private subjectsForgottenThroughMs: number | undefined;

  /** Which router this is: the keys it serves hash to it. */
  private readonly shard: number;

  /** Keeps nothing of `input` but its shard: what it carried is rebuilt here, and held once, not twice. */
  constructor(
    input: FactRouterInput,
    /** The watcher's clock (workflow time), epoch ms. */
    private readonly now: () => number = () => Date.now(),
  ) {
    this.shard = input.shard;
    this.subjects = new Map((input.carried?.subjects ?? []).map((entry) => [subjectEntryKey(entry.subject), entry]));
    const forgotten = input.carried?.subjectsForgottenThrough;
    this.subjectsForgottenThroughMs = forgotten === undefined ? undefined : Date.parse(forgotten);
    this.keys = new Map((input.carried?.keys ?? []).map((k) => [k.factKey, new KeyState(k.factKey, k)]));
    for (const state of this.keys.values())
      for (const subscriber of state.subscribers()) this.keyOf.set(subscriber, state.factKey);
    this.outbox = new Outbox<RoutedFact>((pending, next) => pending ?? next, input.carried?.outbox);
    this.retention = input.retention;
  }

  private retained(state: KeyState): Fact | undefined {
    const until = state.lastReceivedMs === undefined ? undefined : addDuration(state.lastReceivedMs, this.retention);
    return state.latest && until !== undefined && this.now() < until ? state.latest : undefined;
  }

  private stateOf(factKey: string): KeyState {
    let state = this.keys.get(factKey);
    if (!state) this.keys.set(factKey, (state = new KeyState(factKey)));
    return state;
  }

  /** Drops a key that no one waits on and that retains nothing. */
  private forgetIfIdle(state: KeyState): void {
    if (state.subscriberCount === 0 && this.retained(state) === undefined) this.keys.delete(state.factKey);
  }

  /**
   * Keeps the router's state within what continue-as-new may carry: idle keys go, and past
   * MAX_RETAINED_FACTS_PER_ROUTER the keys nobody waits on go oldest first (their early fact with them).
   */
  prune(): void {
    const unawaited: KeyState[] = [];
    for (const state of this.keys.values()) {
      this.forgetIfIdle(state);
      if (this.keys.has(state.factKey) && state.subscriberCount === 0) unawaited.push(state);
    }
    if (unawaited.length > MAX_RETAINED_FACTS_PER_ROUTER) {
      unawaited.sort((a, b) => (a.lastReceivedMs ?? 0) - (b.lastReceivedMs ?? 0));
      for (const state of unawaited.slice(0, unawaited.length - MAX_RETAINED_FACTS_PER_ROUTER))
        this.keys.delete(state.factKey);
    }
    this.keepWithinBudget();
  }

  /**
   * Keeps what continue-as-new carries within MAX_ROUTER_CARRIED_BYTES, whatever the keys hold: first the keys nobody
   * waits on go, oldest first; then the dedupe windows of the keys waited on shrink, longest first, to the least a
   * key keeps. What remains (subscribers and the facts they wait for) is refused more of while it is over.
   */
  private keepWithinBudget(): void {
    const bytesOf = (state: KeyState): number => utf8Length(JSON.stringify(state.carry()));
    const sizes = new Map([...this.keys.values()].map((state) => [state, bytesOf(state)]));
    let bytes =
      utf8Length(JSON.stringify(this.outbox.carry())) + utf8Length(JSON.stringify([...this.subjects.values()]));
    for (const size of sizes.values()) bytes += size;
    // Subjects first, least recently heard first: a stall read that finds one forgotten does not lapse
    // (activities/history-reads.ts).
    for (const [key, entry] of this.subjects) {
      if (bytes <= MAX_ROUTER_CARRIED_BYTES) break;
      bytes -= utf8Length(JSON.stringify(entry));
      this.forgetSubject(key);
    }
    const byAge = [...sizes.keys()].filter((state) => state.subscriberCount === 0);
    byAge.sort((a, b) => (a.lastReceivedMs ?? 0) - (b.lastReceivedMs ?? 0));
    for (const state of byAge) {
      if (bytes <= MAX_ROUTER_CARRIED_BYTES) break;
      bytes -= sizes.get(state)!;
      this.keys.delete(state.factKey);
    }
    const byWindow = [...this.keys.values()].filter((state) => state.seenCount > DEDUPE_WINDOW_UNAWAITED);
    byWindow.sort((a, b) => b.seenCount - a.seenCount);
    for (const state of byWindow) {
      if (bytes <= MAX_ROUTER_CARRIED_BYTES) break;
      state.trim(DEDUPE_WINDOW_UNAWAITED);
      bytes -= sizes.get(state)! - bytesOf(state);
    }
    this.full = bytes > MAX_ROUTER_CARRIED_BYTES;
  }

  /** The memo the bridge reads before a raise (no worker, no action): the keys close to their bound, when they moved. */
  memoIfMoved(): FactRouterMemo | undefined {
    const crowded: Record<string, number> = {};
    for (const state of this.keys.values())
      if (state.subscriberCount >= ROUTER_CROWDED_KEY) crowded[state.factKey] = state.subscriberCount;
    const memo: FactRouterMemo = { crowded };
    const json = JSON.stringify(memo);
    if (json === this.memoJson) return undefined;
    this.memoJson = json;
    return memo;
  }

  /** Subscribes each of a request's expectations to its key (the bridge names them in one signal per router). */
  subscribeAll({ workflowIds, factKeys = [] }: Subscribe): void {
    workflowIds.forEach((id, i) => {
      const factKey = factKeys[i];
      if (typeof factKey === 'string') this.subscribe(id, factKey);
    });
  }

  /** Stores a bridge's batch: each fact whose key is this router's, each fact on a subject (DESIGN 3.2). */
  store({ facts = [], subjects = [], retention }: FactBatch): void {
    const options = retention !== undefined && isDuration(retention) ? { retention } : undefined;
    // A fact whose key belongs to another router is not ours to forward (a bridge of another shard count): skipped.
    for (const fact of facts) if (shardOf(fact.factKey) === this.shard) this.record(fact, options);
    for (const fact of subjects) this.observeSubject(fact);
  }

  /** The recordFact update's validator: a retention the router can compute with, a key of this router. */
  validateRecord(fact: Fact, options?: RecordFactOptions): void {
    if (options?.retention !== undefined) parseDuration(options.retention);
    if (shardOf(fact.factKey) !== this.shard) {
      throw ApplicationFailure.create({
        type: WRONG_FACT_KEY,
        message: `fact key ${JSON.stringify(fact.factKey)} belongs to router ${shardOf(fact.factKey)}, not to router ${this.shard}`,
        nonRetryable: true,
      });
    }
  }

  subscribe(workflowId: string, factKey: string): void {
    const state = this.stateOf(factKey);
    const newcomer = !state.hasSubscriber(workflowId);
    if ((newcomer && state.subscriberCount >= MAX_KEY_SUBSCRIBERS) || (newcomer && this.full)) {
      const reason = this.full
        ? `not registered: the fact router of ${JSON.stringify(factKey)} holds as much as it may carry ` +
          `(${MAX_ROUTER_CARRIED_BYTES} bytes); withdrawn, as no fact would reach it`
        : `not registered: ${JSON.stringify(factKey)} already has ${MAX_KEY_SUBSCRIBERS} expectations waiting ` +
          `on it, its bound; withdrawn, as no fact would reach it`;
      this.refused.add(workflowId, { reason });
      this.changes++;
      return;
    }
    state.addSubscriber(workflowId);
    state.awaited = true;
    this.keyOf.set(workflowId, factKey);
    const fact = this.retained(state);
    if (fact) this.outbox.add(workflowId, { ...fact, held: true });
    this.changes++;
  }

  unsubscribe(workflowId: string): void {
    const factKey = this.keyOf.get(workflowId);
    this.keyOf.delete(workflowId);
    this.outbox.delete(workflowId);
    this.deferred.delete(workflowId);
    const state = factKey === undefined ? undefined : this.keys.get(factKey);
    if (state) {
      state.deleteSubscriber(workflowId);
      state.trim();
      this.forgetIfIdle(state);
    }
    // A router that refused newcomers for want of room takes them again once it has room.
    if (this.full) this.keepWithinBudget();
    this.changes++;
  }

  /**
   * Records one observation: a re-delivery or a fact nobody waits on is answered at once; a fact with subscribers is
   * queued to them (or held back for a caller that delivers it itself), and answered once the loop has sent it.
   */
  record(fact: Fact, options?: RecordFactOptions): Recorded {
    if (options?.retention !== undefined) this.retention = options.retention;
    const state = this.stateOf(fact.factKey);
    const receivedMs = fact.receivedAt === undefined ? this.now() : Date.parse(fact.receivedAt);
    const firstReceivedMs = state.remember(fact, Number.isNaN(receivedMs) ? this.now() : receivedMs);
    if (firstReceivedMs !== undefined) {
      if (!options?.tellFirstReceipt || Number.isNaN(firstReceivedMs)) return { answer: 'duplicate' };
      return { answer: { result: 'duplicate', firstReceivedAt: new Date(firstReceivedMs).toISOString() } };
    }
    if (++this.recordedFacts % BUDGET_CHECK_EVERY === 0) this.keepWithinBudget();
    // The fact retained for later subscribers is the one observed last, not the one that arrived last.
    if (!state.latest || Date.parse(fact.observedAt) >= Date.parse(state.latest.observedAt)) state.latest = fact;
    state.lastReceivedMs = this.now();
    const subscribers = state.subscribers();
    if (subscribers.length === 0) {
      // Nobody waits: kept for the retention (if any), forgotten otherwise. Nothing to forward, nothing to wait for.
      this.forgetIfIdle(state);
      if (this.keys.size > MAX_RETAINED_FACTS_PER_ROUTER * 1.1) this.prune();
      return { answer: options?.tellUnawaited ? 'unawaited' : 'recorded' };
    }
    // The caller delivers the fact itself (the bridge's takeFact, for `wait=true`): our forwards wait FORWARD_DEFERRAL_MS,
    // and go only to a subscriber that did not take it by then (it unsubscribes), so nothing depends on the caller.
    if (options?.callerDelivers && options.listForwarded) {
      const atMs = this.now() + FORWARD_DEFERRAL_MS;
      for (const subscriber of subscribers)
        if (!this.deferred.has(subscriber)) this.deferred.set(subscriber, { fact, atMs });
    } else {
      for (const subscriber of subscribers) this.outbox.add(subscriber, fact);
    }
    return {
      change: ++this.changes,
      answer: options?.listForwarded ? { result: 'recorded', forwardedTo: subscribers } : 'recorded',
    };
  }

  /** A fact on one of this router's subjects: stored, for the history reads; nobody is told. */
  observeSubject(fact: SubjectFact): void {
    const key = subjectEntryKey(fact.subject);
    const entry = foldSubjectFact(this.subjects.get(key), fact);
    this.subjects.delete(key);
    this.subjects.set(key, entry);
    while (this.subjects.size > MAX_SUBJECTS_PER_ROUTER) this.forgetSubject(this.subjects.keys().next().value!);
  }

  private forgetSubject(key: string): void {
    const entry = this.subjects.get(key);
    this.subjects.delete(key);
    const receivedMs = entry ? Date.parse(entry.lastReceived.receivedAt) : Number.NaN;
    if (!Number.isNaN(receivedMs)) {
      this.subjectsForgottenThroughMs = Math.max(this.subjectsForgottenThroughMs ?? receivedMs, receivedMs);
    }
  }

  keyLoad(factKey: string): KeyLoad {
    const state = this.keys.get(factKey);
    return {
      subscribers: state?.subscriberCount ?? 0,
      bound: MAX_KEY_SUBSCRIBERS,
      outbox: (state?.subscribers() ?? []).filter((subscriber) => this.outbox.has(subscriber)).length,
      seen: state?.seenCount ?? 0,
    };
  }

  /** What continue-as-new carries; a held-back forward is carried as a due one (a subscriber that took it ignores it). */
  carried(): NonNullable<FactRouterInput['carried']> {
    this.prune();
    const forgotten = this.subjectsForgottenThroughMs;
    return {
      keys: [...this.keys.values()].map((state) => state.carry()),
      outbox: [...this.outbox.carry(), ...[...this.deferred].map(([workflowId, { fact }]) => ({ workflowId, fact }))],
      ...(this.subjects.size > 0 ? { subjects: [...this.subjects.values()] } : {}),
      ...(forgotten === undefined ? {} : { subjectsForgottenThrough: new Date(forgotten).toISOString() }),
    };
  }

  /** Moves the held-back forwards whose time has come to the outbox. */
  releaseDeferred(): void {
    for (const [workflowId, { fact, atMs }] of this.deferred) {
      if (atMs > this.now()) continue;
      this.deferred.delete(workflowId);
      this.outbox.add(workflowId, fact);
    }
  }

  /** When the first held-back forward goes out, if any. */
  nextDeferredAtMs(): number | undefined {
    return this.deferred.size > 0 ? Math.min(...[...this.deferred.values()].map((forward) => forward.atMs)) : undefined;
  }
}
