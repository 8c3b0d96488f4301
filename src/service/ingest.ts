/**
 * Ingress (DESIGN 3.1, 3.2, 3.6, 4): expectations, facts and withdraw lists from one request. Every item is
 * validated by the pure planner (ingest-plan.ts: schema, role, ownership, conflicts, the card's rules) before any
 * is applied; this file looks up what the planner reads and applies its plan. Applying is idempotent, so a request
 * retried after a 503 completes with nothing doubled.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { CardResolver } from '../a2a/card.js';
import type { Principal } from '../auth/principals.js';
import type { WatcherMetrics } from '../metrics.js';
import { MAX_AGENT_SHARE, MAX_FACT_LEDGER_SUBSCRIBERS, RACE_ROOM, ROUTER_CROWDED_KEY } from '../../core/limits.js';
import type { Expectation, Fact, Subject } from '../../core/schemas/extension.js';
import { FACT_WAIT_MS, type ingestResultSchema } from '../schemas/http.js';
import type { ExpectationRecord, Origin } from '../../core/schemas/record.js';
import type { ExpectationInput, FactRouterMemo } from '../../workflows/messages.js';
import {
  awaitFactTaken,
  getFactRouterMemo,
  isRunning,
  dependentCount,
  getExpectationRecord,
  recordFactRouted,
  registerExpectation,
  registerExpectations,
  startExpectationWorkflow,
  withdrawExpectation,
  workflowIdsOf,
  withdrawSuperseded,
} from '../temporal/expectations.js';
import { expectationLinks, expectationWorkflowId, factRouterWorkflowId, subjectLedgerWorkflowId } from '../temporal/ids.js';
import { settled } from '../temporal/settled.js';
import { ConflictError, joinPath, RuleViolationError } from './errors.js';
import { createLateFactCheck } from './late-facts.js';
import {
  parseIngest,
  planIngest,
  raisesOf,
  referencedIds,
  sameContent,
  type IngestPlan,
  type IngestRequest,
  type Occupancy,
  type PlannedExpectation,
} from './ingest-plan.js';
import { Places } from './places.js';
import { createQuotas, type QuotaSettings } from './quotas.js';
import { canRead, ledgerOccupancyQuery, openExpectationsQuery } from './records.js';
import type { TemporalCall } from './temporal-call.js';

export type { IngestRequest } from './ingest-plan.js';

export interface IngestSettings {
  factRetention: string;
  lateWindow: string;
  maxLineage: number;
  /** How far in the future a fact's `observedAt` may be (ISO 8601 duration, WATCHER_MAX_CLOCK_SKEW). */
  maxClockSkew: string;
  /** The workflows' settle interval (ExpectationSettings.settle): the bridge's request wait and a margin. */
  settle?: string;
}

export interface IngestDeps {
  client: Client;
  taskQueue: string;
  settings: IngestSettings;
  cards: CardResolver;
  call: TemporalCall;
  metrics?: WatcherMetrics;
  /** Where a fact that came after its expectation's late window is logged. */
  logger?: Logger;
  /** Per-principal quotas (src/service/quotas.ts); absent, none is kept. */
  quotas?: QuotaSettings;
  /** The watcher's clock (epoch ms); injected so a test can pin it. */
  now?: () => number;
}

const NO_QUOTAS: QuotaSettings = { openExpectations: 0, raisesPerMinute: 0, factsPerMinute: 0 };

/** One result per item, in the order found; `warnings` only when there is one (the schema is the answer's, in http.ts). */
export type IngestResult = z.infer<typeof ingestResultSchema>;

const LOOKUP_CONCURRENCY = 16;

/**
 * How many new expectations the bridge starts (then subscribes) at once, and how many chains of facts it records at
 * once, shared by the requests being ingested: a request alone starts up to this many of a wave together; 16
 * requests at once start theirs one at a time, as before. All ten of 16 concurrent batches of 10 at once kept 160
 * starts queued on a dev server, and some waited past the 5 s Temporal timeout; one batch alone was answered in
 * 879 ms instead of 1,354.
 */
const RAISES_IN_FLIGHT = 16;

/** Looks up every id, LOOKUP_CONCURRENCY at a time; an id with no expectation maps to undefined. */
async function lookupAll(
  lookup: (id: string) => Promise<ExpectationRecord | undefined>,
  ids: readonly string[],
): Promise<Map<string, ExpectationRecord | undefined>> {
  const found = new Map<string, ExpectationRecord | undefined>();
  for (let i = 0; i < ids.length; i += LOOKUP_CONCURRENCY) {
    const batch = ids.slice(i, i + LOOKUP_CONCURRENCY);
    const records = await settled(batch.map(lookup));
    batch.forEach((id, j) => found.set(id, records[j]));
  }
  return found;
}

/**
 * The indices of `facts` in chains, each in the request's order: two facts with a key or a subject in common are in
 * one chain, so that they reach their router and their subject ledger in the order sent.
 */
export function chainsOf(facts: readonly Fact[]): number[][] {
  const parent = facts.map((_, i) => i);
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i]!)));
  const firstOf = new Map<string, number>();
  facts.forEach((fact, i) => {
    // By key, not by router: the facts of one key keep their order; a router takes many keys' facts at once.
    const ledgers = [factLoadKey(fact.factKey), ...(fact.subject ? [subjectLedgerWorkflowId(fact.subject)] : [])];
    for (const ledger of ledgers) {
      const first = firstOf.get(ledger);
      if (first === undefined) firstOf.set(ledger, i);
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
 * How many expectations wait on each fact key (by factLoadKey; at most ROUTER_CROWDED_KEY - 1 where the key's router
 * does not list it) and on each subject (by subject ledger workflow id) of a request's expectations.
 */
type LedgerLoads = ReadonlyMap<string, Load>;
/**
 * What was read of a load: a count (from a memo, a visibility count, or the most a memo that does not list a key
 * allows), or, near a bound, the workflow ids themselves, so that the places this bridge holds are not counted twice.
 */
type Load = number | ReadonlySet<string>;
const sizeOf = (load: Load | undefined): number => (typeof load === 'object' ? load.size : (load ?? 0));
const factLoadKey = (factKey: string): string => `key:${factKey}`;
/** The raising agent's own expectations among a load's (0 where it could not exceed its share). */
const ownLoadKey = (loadKey: string): string => `own:${loadKey}`;

/** Refused for a full fact key or subject: a bound that a stale read may have overstated. */
const refusedForRoom = (error: unknown): boolean =>
  error instanceof RuleViolationError && error.errors.some((e) => e.rule === 'fact-key-subscribers' || e.rule === 'subject-subscribers');

/** The places a plan's new expectations take on their fact keys and subjects. */
const placesOf = (plan: IngestPlan) =>
  plan.expectations.flatMap((item) => {
    if (item.action !== 'raise') return [];
    const { expectation: e } = item;
    const workflowId = expectationWorkflowId(e.expectationId);
    return [
      { loadKey: factLoadKey(e.satisfiedBy.factKey), workflowId },
      { loadKey: subjectLedgerWorkflowId(e.subject), workflowId },
    ];
  });

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
    const named = [...(e.after ?? []), ...(e.anchor ? [e.anchor.expectationId] : []), ...(e.supersedes ? [e.supersedes] : [])];
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

export function createIngestService(deps: IngestDeps) {
  const lookup = (id: string) => deps.call(() => getExpectationRecord(deps.client, id));
  const lateFacts = createLateFactCheck(deps);
  const places = new Places(deps.now);
  /** A load with the places this bridge's requests hold on it (see places.ts). */
  const withHeld = (loadKey: string, load: Load | undefined): number => {
    const held = places.holders(loadKey);
    if (typeof load === 'object') return new Set([...load, ...held]).size;
    return (load ?? 0) + held.length;
  };
  /** Requests being ingested now: they share RAISES_IN_FLIGHT. */
  let raising = 0;
  /** This request's share of RAISES_IN_FLIGHT: how many starts, or chains of facts, it runs at once. */
  const share = () => Math.max(1, Math.floor(RAISES_IN_FLIGHT / raising));
  const quotas = createQuotas({
    settings: deps.quotas ?? NO_QUOTAS,
    countOpen: (agentId) =>
      deps.call(async () => (await deps.client.workflow.count(openExpectationsQuery(deps.taskQueue, agentId))).count),
    now: deps.now,
  });

  /**
   * How full the fact keys and subject ledgers of the request's expectations are, in parallel, asked while their
   * records are looked up, and none with a worker or a billable action. A key's router lists in its memo the keys
   * with ROUTER_CROWDED_KEY waiting or more (one DescribeWorkflowExecution per router); a key it does not list has
   * fewer, which is all the plan needs unless this request alone brings that key near its bound: then the visibility
   * store counts it. A subject ledger that runs is counted there too. Its failure is thrown where it is awaited, never
   * as an unhandled rejection.
   */
  function askLedgers(expectations: readonly Expectation[], agentId: string, exact = false): Promise<LedgerLoads> {
    const bringing = new Map<string, number>();
    const subjects = new Map<string, Subject>();
    const onSubject = new Map<string, number>();
    for (const e of expectations) {
      bringing.set(e.satisfiedBy.factKey, (bringing.get(e.satisfiedBy.factKey) ?? 0) + 1);
      const id = subjectLedgerWorkflowId(e.subject);
      subjects.set(id, e.subject);
      onSubject.set(id, (onSubject.get(id) ?? 0) + 1);
    }
    const routers = new Map<string, Promise<FactRouterMemo | undefined>>();
    const memoOf = (factKey: string) => {
      const id = factRouterWorkflowId(factKey, deps.taskQueue);
      if (!routers.has(id)) routers.set(id, deps.call(() => getFactRouterMemo(deps.client, id)));
      return routers.get(id)!;
    };
    const countOf = (query: string) => deps.call(async () => (await deps.client.workflow.count(query)).count);
    const idsOf = (query: string) => deps.call(() => workflowIdsOf(deps.client, query, MAX_FACT_LEDGER_SUBSCRIBERS * 2));
    // Near a bound (with what this request brings and the places held beside it), or when asked to be exact, the ids.
    const near = (loadKey: string, estimate: number, brought: number) =>
      exact || estimate + places.holders(loadKey).length + brought > MAX_FACT_LEDGER_SUBSCRIBERS - RACE_ROOM;
    const keyLoad = async (factKey: string): Promise<Load> => {
      const estimate = (await memoOf(factKey))?.crowded[factKey] ?? ROUTER_CROWDED_KEY - 1;
      const exactly = near(factLoadKey(factKey), estimate, bringing.get(factKey)!);
      return exactly ? idsOf(ledgerOccupancyQuery(deps.taskQueue, { factKey })) : estimate;
    };
    // A subject ledger that is not running forwards to nobody: one point read by id, and a count only if it runs.
    const subjectLoad = async (id: string, subject: Subject): Promise<Load> => {
      if (!(await deps.call(() => isRunning(deps.client, id)))) return 0;
      const count = await countOf(ledgerOccupancyQuery(deps.taskQueue, { subject }));
      return near(id, count, onSubject.get(id)!) ? idsOf(ledgerOccupancyQuery(deps.taskQueue, { subject })) : count;
    };
    // The agent's own share is counted only where all of them together, with this request, could exceed it. A key the
    // router lists as crowded is always counted: its memo trails the router by a workflow task, so it may undercount.
    const ownLoad = async (load: Promise<Load>, brought: number, of: Parameters<typeof ledgerOccupancyQuery>[1], floor: number) => {
      const all = sizeOf(await load);
      return all + brought > MAX_AGENT_SHARE || all >= floor ? countOf(ledgerOccupancyQuery(deps.taskQueue, of, agentId)) : 0;
    };
    const asks: Array<[string, Promise<Load>]> = [];
    for (const [factKey, brought] of bringing) {
      const load = keyLoad(factKey);
      const own = ownLoad(load, brought, { factKey }, ROUTER_CROWDED_KEY);
      asks.push([factLoadKey(factKey), load], [ownLoadKey(factLoadKey(factKey)), own]);
    }
    for (const [id, subject] of subjects) {
      const load = subjectLoad(id, subject);
      asks.push([id, load], [ownLoadKey(id), ownLoad(load, onSubject.get(id)!, { subject }, Number.POSITIVE_INFINITY)]);
    }
    const asked = settled(asks.map(([, load]) => load)).then((counts) => new Map(asks.map(([id], i) => [id, counts[i]!])));
    asked.catch(() => undefined);
    return asked;
  }

  /**
   * How full the ledgers and anchors of the new raises are. An anchor whose record says it has ended takes no more
   * dependents anyway: it is not asked.
   */
  async function occupancyOf(
    raises: Expectation[],
    records: Map<string, ExpectationRecord | undefined>,
    ledgers: LedgerLoads,
  ): Promise<Occupancy> {
    const running = (id: string) => {
      const record = records.get(id);
      return record === undefined ? true : record.closedAt === undefined;
    };
    const anchorIds = [...new Set(raises.flatMap((e) => (e.anchor && running(e.anchor.expectationId) ? [e.anchor.expectationId] : [])))];
    const counts = await settled(anchorIds.map((id) => deps.call(() => dependentCount(deps.client, id))));
    const anchors = new Map(anchorIds.map((id, i) => [id, counts[i]!]));
    return {
      // Read when the plan is made, with the places held by then (places.ts).
      factKey: (factKey) => withHeld(factLoadKey(factKey), ledgers.get(factLoadKey(factKey))),
      subject: (subject) => withHeld(subjectLedgerWorkflowId(subject), ledgers.get(subjectLedgerWorkflowId(subject))),
      ownFactKey: (factKey) => sizeOf(ledgers.get(ownLoadKey(factLoadKey(factKey)))),
      ownSubject: (subject) => sizeOf(ledgers.get(ownLoadKey(subjectLedgerWorkflowId(subject)))),
      anchor: (id) => anchors.get(id) ?? 0,
    };
  }

  /**
   * Starts the new expectations of one wave together, then subscribes those it started to their ledgers, one
   * signal-with-start per ledger. An id another request
   * raised between our check and our start (concurrent re-delivery) is a no-op when it carried the same content from
   * the same agent, a conflict otherwise. Every start is settled before an error is thrown, so nothing runs on
   * after the answer.
   */
  async function raiseAll(
    principal: Principal,
    origin: Origin,
    items: ReadonlyArray<PlannedExpectation & { action: 'raise' }>,
  ): Promise<Array<'raised' | 'unchanged'>> {
    const inputs = items.map((item) => inputOf(deps.taskQueue, deps.settings, principal, origin, item.expectation, item.lineage));
    // Of concurrent supersedes of one expectation exactly one starts (withdrawSuperseded); the others are refused.
    const replaced = await settled(inputs.map((input) => deps.call(() => withdrawSuperseded(deps.client, input))));
    const started = await settled(
      inputs.map((input, i) => replaced[i] ? deps.call(() => startExpectationWorkflow(deps.client, deps.taskQueue, input)) : Promise.resolve('lost' as const)),
    );
    const raised = inputs.filter((_, i) => started[i] === 'raised');
    if (raised.length > 0) await deps.call(() => registerExpectations(deps.client, deps.taskQueue, raised));
    return settled(
      items.map(async (item, i) => {
        const { expectation } = item;
        if (started[i] === 'lost') {
          const superseded = expectation.supersedes!;
          const now = await lookup(superseded);
          const by = now?.supersededBy ? `was superseded by '${now.supersededBy}'` : `is ${now?.state ?? 'gone'}`;
          const message = `supersedes '${superseded}', which ${by} while this request was applied; '${expectation.expectationId}' was not raised`;
          throw new ConflictError(message, [{ path: joinPath([...item.path, 'supersedes']), message }]);
        }
        if (started[i] === 'raised') {
          deps.metrics?.expectationsRaised.inc({ kind: deps.metrics.kindLabel(expectation.kind) });
          return 'raised' as const;
        }
        const existing = await lookup(expectation.expectationId);
        if (existing && sameContent(existing, principal, expectation)) {
          await reregister(principal, origin, existing);
          return 'unchanged' as const;
        }
        const message = `expectation '${expectation.expectationId}' was raised concurrently with other content; it is immutable and its id is never reused`;
        throw new ConflictError(message, [{ path: joinPath([...item.path, 'expectationId']), message }]);
      }),
    );
  }

  /**
   * A raise sent again (push delivery is at-least-once, clients retry a 503) may follow one interrupted between its
   * start and its ledger subscriptions: an open expectation is subscribed again (idempotent).
   */
  async function reregister(principal: Principal, origin: Origin, existing: ExpectationRecord | undefined) {
    if (!existing || existing.closedAt || existing.state === 'satisfied' || existing.state === 'withdrawn') return;
    const input = inputOf(deps.taskQueue, deps.settings, principal, origin, existing.expectation, existing.lineage);
    await deps.call(() => registerExpectation(deps.client, deps.taskQueue, input));
  }

  /**
   * `wait=true`: the expectations the ledger sent the fact on to, once they have taken it (at most FACT_WAIT_MS),
   * those the principal may read. A ledger that nobody waited on names none (0); one of a worker from before
   * `listForwarded` names none either, though some waited: then the answer says nothing about them (no fields).
   */
  async function takenBy(principal: Principal, fact: Fact, { awaited, forwardedTo = [] }: { awaited: boolean; forwardedTo?: string[] }) {
    if (awaited && forwardedTo.length === 0) return {};
    const deadline = (deps.now ?? Date.now)() + FACT_WAIT_MS;
    const taken = forwardedTo.length > 0 ? await awaitFactTaken(deps.client, forwardedTo, fact, deadline) : [];
    const readable = taken.filter(({ agentId }) => canRead(principal) || agentId === principal.id);
    return {
      expectations: readable.map(({ agentId: _agentId, ...expectation }) => expectation),
      awaitedBy: forwardedTo.length,
    };
  }

  /** Records one fact in its ledgers; with `wait`, names the expectations that took it. */
  async function recordFact(principal: Principal, reported: Fact, wait: boolean, receivedAt: string): Promise<IngestResult['facts'][number]> {
    // The watcher's clock for a fact is when this bridge accepted the request (DESIGN 3.2), whenever a workflow sees it.
    const fact: Fact = { ...reported, receivedAt };
    const { result: outcome, awaited, forwardedTo } = await deps.call(() =>
      recordFactRouted(deps.client, deps.taskQueue, fact, { factRetention: deps.settings.factRetention }, { listForwarded: wait }),
    );
    if (outcome === 'recorded') deps.metrics?.factsRecorded.inc();
    // Nothing running waited on the key: an early fact, or one for an expectation past its late window.
    if (!awaited) await lateFacts.afterUnawaited(fact);
    const taken = wait && outcome === 'recorded' ? await takenBy(principal, fact, { awaited, forwardedTo }) : {};
    return { factKey: fact.factKey, result: outcome, ...taken };
  }

  /**
   * The request's facts, their results in its order. Facts that share a ledger (a key or a subject) are recorded
   * one after the other in the request's order, so every ledger sees them as sent; the others go together, as many
   * chains at once as the request's share of RAISES_IN_FLIGHT. After a failure no further fact is begun, and the
   * error is thrown once the chains under way have stopped.
   */
  async function recordFacts(principal: Principal, facts: readonly Fact[], wait: boolean, receivedAt: string): Promise<IngestResult['facts']> {
    const results: IngestResult['facts'] = [];
    const chains = chainsOf(facts);
    let next = 0;
    let failed = false;
    const runChains = async () => {
      while (!failed && next < chains.length) {
        for (const i of chains[next++]!) {
          if (failed) return;
          try {
            results[i] = await recordFact(principal, facts[i]!, wait, receivedAt);
          } catch (error) {
            failed = true;
            throw error;
          }
        }
      }
    };
    const runners = Math.min(chains.length, share());
    await settled(Array.from({ length: runners }, runChains));
    return results;
  }

  /** Raises first, so that a fact in the same request finds the expectation that waits on it; then facts, withdraws. */
  async function apply(
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
      for (let i = 0; i < wave.length; ) {
        const group = wave.slice(i, (i += share()));
        const raises = group.filter((item): item is PlannedExpectation & { action: 'raise' } => item.action === 'raise');
        await settled(
          group.filter((item) => item.action === 'unchanged').map((item) => reregister(principal, origin, records.get(item.expectation.expectationId))),
        );
        const raised = await raiseAll(principal, origin, raises);
        raises.forEach((item, j) => outcomes.set(item.expectation.expectationId, raised[j]!));
      }
    }
    for (const item of plan.expectations) {
      const id = item.expectation.expectationId;
      result.expectations.push({ expectationId: id, result: outcomes.get(id) ?? 'unchanged' });
    }
    result.facts = await recordFacts(principal, plan.facts, wait, receivedAt);
    for (const { expectationId, reason } of plan.withdraw) {
      const outcome = await deps.call(() => withdrawExpectation(deps.client, expectationId, { reason }));
      if (outcome === 'withdrawn') deps.metrics?.withdrawals.inc();
      result.withdrawn.push({ expectationId, result: outcome === 'withdrawn' ? 'withdrawn' : 'not-open' });
    }
    if (plan.warnings.length > 0) result.warnings = plan.warnings;
    return result;
  }

  return {
    /**
     * Validates every item and bound (ingest-plan.ts, before any Temporal call), takes the request from the
     * principal's per-minute quotas, looks up what it refers to, checks the open-expectations quota, then raises,
     * records and withdraws the items in that order.
     */
    async ingest(principal: Principal, request: IngestRequest): Promise<IngestResult> {
      raising++;
      try {
        return await ingestCounted(principal, request);
      } finally {
        raising--;
      }
    },
  };

  /** `ingest`, counted among the requests in flight (`raising`), which share RAISES_IN_FLIGHT. */
  async function ingestCounted(principal: Principal, request: IngestRequest): Promise<IngestResult> {
    const receivedAt = new Date((deps.now ?? Date.now)()).toISOString();
    const parsed = parseIngest(principal, request);
    quotas.takeRates(principal, { raises: parsed.expectations.length, facts: parsed.facts.length });
    // The ledgers are asked while the records are looked up: one round trip to Temporal, not two.
    const asked = parsed.expectations.length > 0 ? askLedgers(parsed.expectations.map(({ value }) => value), principal.id) : Promise.resolve(new Map() as LedgerLoads);
    let records: Map<string, ExpectationRecord | undefined>;
    let raises: Expectation[];
    try {
      records = await lookupAll(lookup, referencedIds(parsed));
      // The card is fetched only when something is new (after a conflict has had its say).
      raises = raisesOf({ parsed, principal, records });
    } catch (error) {
      // A conflict or a failed lookup is answered once the ledger queries are done: nothing runs on after the answer.
      await asked.catch(() => undefined);
      throw error;
    }
    const known = { parsed, principal, records };
    const ledgers = await asked;
    const [card, occupancy] =
      raises.length > 0
        ? await settled([deps.cards.resolve(principal.agent!), occupancyOf(raises, records, ledgers)])
        : [undefined, undefined];
    const planWith = (occupancy: Occupancy | undefined) =>
      planIngest({ ...known, card, occupancy, settings: deps.settings, now: (deps.now ?? Date.now)() });
    let plan: IngestPlan;
    try {
      plan = planWith(occupancy);
    } catch (error) {
      if (!occupancy || !refusedForRoom(error)) throw error;
      // Refused on what a memo or an estimate said, with the places held beside it: read the ids and plan again.
      const exactly = await askLedgers(parsed.expectations.map(({ value }) => value), principal.id, true);
      plan = planWith(await occupancyOf(raises, records, exactly));
    }
    // Taken in the same step as the plan (no await between): a request planned after this one counts them.
    const release = places.take(placesOf(plan));
    try {
      // A supersede replaces an open expectation: it adds none.
      const adding = plan.expectations.filter((item) => item.action === 'raise' && item.expectation.supersedes === undefined).length;
      await quotas.checkOpen(principal, adding);
      const result = await apply(principal, request.origin, plan, records, receivedAt, request.waitForFacts);
      quotas.raised(principal, adding);
      return result;
    } finally {
      release();
    }
  }
}

export type IngestService = ReturnType<typeof createIngestService>;
