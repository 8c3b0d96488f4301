/**
 * Applying an ingest plan (ingest.ts): the raises in waves, each wave's starts together and then its router
 * subscriptions, then the facts in chains that keep a router's order, then the withdrawals. Idempotent, so a request
 * retried after a 503 completes with nothing doubled.
 */
import type { Principal } from '../auth/principals.js';
import type { Expectation, Fact } from '../../core/schemas/extension.js';
import { FACT_TAKEN_WAIT_MS } from '../schemas/http.js';
import type { ExpectationRecord, Origin } from '../../core/schemas/record.js';
import type { ExpectationInput } from '../../workflows/messages.js';
import {
  awaitFactTaken,
  recordFactRouted,
  registerExpectation,
  registerExpectations,
  startExpectationWorkflow,
  storeFacts,
  withdrawExpectation,
  withdrawSuperseded,
} from '../temporal/expectations.js';
import { expectationLinks, subjectRouterWorkflowId } from '../../core/ids.js';
import { settled } from '../temporal/settled.js';
import { DEFAULT_FACT_WAIT_MS } from '../../workflows/decisions.js';
import { ConflictError, joinPath, type FieldError } from './errors.js';
import { type createLateFactCheck } from './late-facts.js';
import { sameContent, type IngestPlan, type PlannedExpectation } from './ingest-plan.js';
import { canRead } from './records.js';
import type { IngestDeps, IngestResult, IngestSettings } from './ingest-types.js';
import { factLoadKey } from './raise-room.js';
import { storeWithinFactWait } from './fact-stores.js';

/**
 * The indices of `facts` in chains, each in the request's order: two facts with a key or a subject in common are in
 * one chain, so that they reach their router and their subject router in the order sent.
 */
export function chainsOf(facts: readonly Fact[]): number[][] {
  const parent = facts.map((_, i) => i);
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i]!)));
  const firstOf = new Map<string, number>();
  facts.forEach((fact, i) => {
    // By key, not by router: the facts of one key keep their order; a router takes many keys' facts at once.
    const routers = [factLoadKey(fact.factKey), ...(fact.subject ? [subjectRouterWorkflowId(fact.subject, '')] : [])];
    for (const router of routers) {
      const first = firstOf.get(router);
      if (first === undefined) firstOf.set(router, i);
      else parent[root(i)] = root(first);
    }
  });
  const chains = new Map<number, number[]>();
  facts.forEach((_, i) => {
    const chain = chains.get(root(i));
    if (chain) chain.push(i);
    else chains.set(root(i), [i]);
  });
  return [...chains.values()];
}

/**
 * The request's expectations in waves, applied one after the other, the items of a wave together: an item goes in
 * the wave after the last one holding an expectation it names (`after`, `anchor`, `supersedes`), since its workflow
 * links to them when it starts. Within a wave the order of the request is kept.
 */
function wavesOf(items: readonly PlannedExpectation[]): PlannedExpectation[][] {
  const waveOf = new Map<string, number>();
  const waves: PlannedExpectation[][] = [];
  for (const item of items) {
    const e = item.expectation;
    const named = [
      ...(e.after ?? []),
      ...(e.anchor ? [e.anchor.expectationId] : []),
      ...(e.supersedes ? [e.supersedes] : []),
    ];
    const wave = Math.max(-1, ...named.map((id) => waveOf.get(id) ?? -1)) + 1;
    waveOf.set(e.expectationId, wave);
    (waves[wave] ??= []).push(item);
  }
  return waves;
}

/** The workflow input: the agent by its principal id only, never its card URL or credential (DESIGN 3.8). */
function inputOf(
  taskQueue: string,
  settings: IngestSettings,
  principal: Principal,
  origin: Origin,
  expectation: Expectation,
  lineage: number,
): ExpectationInput {
  return {
    expectation,
    agent: { id: principal.id },
    origin,
    lineage,
    links: expectationLinks(expectation, taskQueue),
    settings: {
      lateWindow: settings.lateWindow,
      factRetention: settings.factRetention,
      ...(settings.settle ? { settle: settings.settle } : {}),
    },
  };
}

/** What applying needs of the service: its Temporal calls, record lookups and this request's share of the starts. */
export interface ApplyContext {
  lookup: (id: string) => Promise<ExpectationRecord | undefined>;
  lateFacts: ReturnType<typeof createLateFactCheck>;
  /** How many starts, or chains of facts, this request runs at once. */
  share: () => number;
}

/** What applying a plan reads: the service's dependencies, its record lookups and this request's share of the starts. */
export interface Applier extends ApplyContext {
  deps: IngestDeps;
}

/** Starts the new expectations of one wave together, then subscribes those it started to their routers. */
// Every start is settled before an error is thrown, so nothing runs on after the answer.
async function startWave(
  ctx: Applier,
  principal: Principal,
  origin: Origin,
  items: ReadonlyArray<PlannedExpectation & { action: 'raise' }>,
): Promise<Array<'raised' | 'unchanged'>> {
  const inputs = items.map((item) =>
    inputOf(ctx.deps.taskQueue, ctx.deps.settings, principal, origin, item.expectation, item.lineage),
  );
  // Of concurrent supersedes of one expectation exactly one starts (withdrawSuperseded); the others are refused.
  const replaced = await settled(
    inputs.map((input) => ctx.deps.call(() => withdrawSuperseded(ctx.deps.client, input))),
  );
  const started = await settled(
    inputs.map((input, i) =>
      replaced[i]
        ? ctx.deps.call(() => startExpectationWorkflow(ctx.deps.client, ctx.deps.taskQueue, input))
        : Promise.resolve('lost' as const),
    ),
  );
  const raised = inputs.filter((_, i) => started[i] === 'raised');
  if (raised.length > 0) await ctx.deps.call(() => registerExpectations(ctx.deps.client, ctx.deps.taskQueue, raised));
  return settled(
    items.map(async (item, i) => {
      const { expectation } = item;
      if (started[i] === 'lost') {
        const superseded = expectation.supersedes!;
        const now = await ctx.lookup(superseded);
        const by = now?.supersededBy ? `was superseded by '${now.supersededBy}'` : `is ${now?.state ?? 'gone'}`;
        const message = `supersedes '${superseded}', which ${by} while this request was applied; '${expectation.expectationId}' was not raised`;
        throw new ConflictError(message, [{ path: joinPath([...item.path, 'supersedes']), message }]);
      }
      if (started[i] === 'raised') {
        ctx.deps.metrics?.expectationsRaised.inc({ kind: ctx.deps.metrics.kindLabel(expectation.kind) });
        return 'raised' as const;
      }
      const existing = await ctx.lookup(expectation.expectationId);
      if (existing && sameContent(existing, principal, expectation)) {
        await reregister(ctx, principal, origin, existing);
        return 'unchanged' as const;
      }
      const message = `expectation '${expectation.expectationId}' was raised concurrently with other content; it is immutable and its id is never reused`;
      throw new ConflictError(message, [{ path: joinPath([...item.path, 'expectationId']), message }]);
    }),
  );
}

/**
 * A raise sent again (push delivery is at-least-once, clients retry a 503) may follow one interrupted between its
 * start and its router subscriptions: an open expectation is subscribed again (idempotent).
 */
async function reregister(ctx: Applier, principal: Principal, origin: Origin, existing: ExpectationRecord | undefined) {
  if (!existing || existing.closedAt || existing.state === 'satisfied' || existing.state === 'withdrawn') return;
  const input = inputOf(
    ctx.deps.taskQueue,
    ctx.deps.settings,
    principal,
    origin,
    existing.expectation,
    existing.lineage,
  );
  await ctx.deps.call(() => registerExpectation(ctx.deps.client, ctx.deps.taskQueue, input));
}

/**
 * `wait=true`: the expectations the router sent the fact on to, once they have taken it (at most FACT_TAKEN_WAIT_MS),
 * those the principal may read. A router that nobody waited on names none (0); one of a worker from before
 * `listForwarded` names none either, though some waited: then the answer says nothing about them (no fields).
 */
async function takenBy(
  ctx: Applier,
  principal: Principal,
  fact: Fact,
  { awaited, forwardedTo = [] }: { awaited: boolean; forwardedTo?: string[] },
) {
  if (awaited && forwardedTo.length === 0) return {};
  const deadline = (ctx.deps.now ?? Date.now)() + FACT_TAKEN_WAIT_MS;
  const taken = forwardedTo.length > 0 ? await awaitFactTaken(ctx.deps.client, forwardedTo, fact, deadline) : [];
  const readable = taken.filter(({ agentId }) => canRead(principal) || agentId === principal.id);
  return {
    expectations: readable.map(({ agentId: _agentId, ...expectation }) => expectation),
    awaitedBy: forwardedTo.length,
  };
}

/** Records one fact in its routers; with `wait`, names the expectations that took it. */
async function recordFactWaited(
  ctx: Applier,
  principal: Principal,
  reported: Fact,
  wait: boolean,
  receivedAt: string,
): Promise<IngestResult['facts'][number]> {
  // The watcher's clock for a fact is when this bridge accepted the request (DESIGN 3.2), whenever a workflow sees it.
  const fact: Fact = { ...reported, receivedAt };
  const {
    result: outcome,
    awaited,
    forwardedTo,
  } = await ctx.deps.call(() =>
    recordFactRouted(
      ctx.deps.client,
      ctx.deps.taskQueue,
      fact,
      { factRetention: ctx.deps.settings.factRetention },
      { listForwarded: wait },
    ),
  );
  if (outcome === 'recorded') ctx.deps.metrics?.factsRecorded.inc();
  // Nothing running waited on the key: an early fact, or one for an expectation past its late window.
  if (!awaited) await ctx.lateFacts.afterUnawaited(fact);
  const taken = wait && outcome === 'recorded' ? await takenBy(ctx, principal, fact, { awaited, forwardedTo }) : {};
  return { factKey: fact.factKey, result: outcome, ...taken };
}

/** Stores the request's facts in their routers at once (DESIGN 3.2): `accepted` once stored, 503 past the fact wait. */
async function storeAll(ctx: Applier, facts: readonly Fact[], receivedAt: string): Promise<IngestResult['facts']> {
  const stamped = facts.map((fact) => ({ ...fact, receivedAt }));
  const waitMs = ctx.deps.settings.factWaitMs ?? DEFAULT_FACT_WAIT_MS;
  const { factRetention, temporalWaitMs } = ctx.deps.settings;
  const settings = { factRetention, signalDeadlineMs: temporalWaitMs };
  const call = ctx.deps.factCall ?? ctx.deps.call;
  await storeWithinFactWait(
    () => call(() => storeFacts(ctx.deps.client, ctx.deps.taskQueue, stamped, settings)),
    waitMs,
    facts.length,
  );
  ctx.deps.metrics?.factsRecorded.inc(facts.length);
  return facts.map((fact) => ({ factKey: fact.factKey, result: 'accepted' as const }));
}

/** Records the request's facts, in chains that keep the request's order per router, and answers in its order. */
// After a failure no further fact is begun, and the error is thrown once the chains under way have stopped.
async function recordFacts(
  ctx: Applier,
  principal: Principal,
  facts: readonly Fact[],
  wait: boolean,
  receivedAt: string,
): Promise<IngestResult['facts']> {
  if (facts.length === 0) return [];
  if (!wait) return storeAll(ctx, facts, receivedAt);
  const results: IngestResult['facts'] = [];
  const chains = chainsOf(facts);
  let next = 0;
  let failed = false;
  const runChains = async () => {
    while (!failed && next < chains.length) {
      for (const i of chains[next++]!) {
        if (failed) return;
        try {
          results[i] = await recordFactWaited(ctx, principal, facts[i]!, wait, receivedAt);
        } catch (error) {
          failed = true;
          throw error;
        }
      }
    }
  };
  const runners = Math.min(chains.length, ctx.share());
  await settled(Array.from({ length: runners }, runChains));
  return results;
}

/** Raises first, so that a fact in the same request finds the expectation that waits on it; then facts, withdraws. */
export async function apply(
  ctx: Applier,
  principal: Principal,
  origin: Origin,
  plan: IngestPlan,
  records: Map<string, ExpectationRecord | undefined>,
  receivedAt: string,
  wait = false,
): Promise<IngestResult> {
  const result: IngestResult = { expectations: [], facts: [], withdrawn: [] };
  const outcomes = new Map<string, 'raised' | 'unchanged'>();
  for (const wave of wavesOf(plan.expectations)) {
    for (let i = 0; i < wave.length;) {
      const group = wave.slice(i, (i += ctx.share()));
      const raises = group.filter((item): item is PlannedExpectation & { action: 'raise' } => item.action === 'raise');
      await settled(
        group
          .filter((item) => item.action === 'unchanged')
          .map((item) => reregister(ctx, principal, origin, records.get(item.expectation.expectationId))),
      );
      const raised = await startWave(ctx, principal, origin, raises);
      raises.forEach((item, j) => outcomes.set(item.expectation.expectationId, raised[j]!));
    }
  }
  const warnings = await observedDueWarnings(ctx, principal, plan.expectations, outcomes, receivedAt);
  for (const item of plan.expectations) {
    const id = item.expectation.expectationId;
    const warned = warnings.get(id);
    result.expectations.push({
      expectationId: id,
      result: outcomes.get(id) ?? 'unchanged',
      ...(warned ? { warnings: warned } : {}),
    });
  }
  // A fact is received when the bridge turns to it, after the request's raises: it counts for all of them (DESIGN 3.2),
  // and the fact wait runs from here, not from the raises' own wait.
  const factsReceivedAt = plan.expectations.length > 0 ? new Date().toISOString() : receivedAt;
  result.facts = await recordFacts(ctx, principal, plan.facts, wait, factsReceivedAt);
  for (const { expectationId, reason } of plan.withdraw) {
    const outcome = await ctx.deps.call(() => withdrawExpectation(ctx.deps.client, expectationId, { reason }));
    if (outcome === 'withdrawn') ctx.deps.metrics?.withdrawals.inc();
    result.withdrawn.push({ expectationId, result: outcome === 'withdrawn' ? 'withdrawn' : 'not-open' });
  }
  if (plan.warnings.length > 0) result.warnings = plan.warnings;
  return result;
}

/**
 * The `observed-due` warnings of the raised expectations whose kind's basis is `observed`: dueAt sooner after the
 * raise than nine in ten of the agent's recent expectations of that kind needed (one statistics read per kind, cached).
 */
async function observedDueWarnings(
  ctx: Applier,
  principal: Principal,
  items: readonly PlannedExpectation[],
  outcomes: ReadonlyMap<string, 'raised' | 'unchanged'>,
  receivedAt: string,
): Promise<Map<string, FieldError[]>> {
  const warnings = new Map<string, FieldError[]>();
  const observedNeed = ctx.deps.observedNeed;
  if (!observedNeed) return warnings;
  const observed = items.filter(
    (item) => item.expectation.basis === 'observed' && outcomes.get(item.expectation.expectationId) === 'raised',
  );
  await Promise.all(
    observed.map(async ({ expectation, path }) => {
      const need = await observedNeed(principal.id, expectation.kind);
      const given = (Date.parse(expectation.dueAt) - Date.parse(receivedAt)) / 1000;
      if (need === undefined || given >= need) return;
      warnings.set(expectation.expectationId, [
        {
          path: joinPath([...path, 'dueAt']),
          rule: 'observed-due',
          message:
            `dueAt is ${formatSeconds(given)} after the raise, sooner than nine in ten of your recent '${expectation.kind}' ` +
            `expectations needed (${formatSeconds(need)} or more from raise to fact, GET /v1/statistics); basis 'observed' promises due times from what the subject class does`,
        },
      ]);
    }),
  );
  return warnings;
}

/** Seconds as a person reads them: `45 s`, `12 min`, `3.5 h`, `2.1 d`. */
function formatSeconds(seconds: number): string {
  const s = Math.max(0, seconds);
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toFixed(1)} d`;
}
