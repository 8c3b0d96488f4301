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
import type { Expectation, Fact } from '../schemas/extension.js';
import { FACT_WAIT_MS, type ingestResultSchema } from '../schemas/http.js';
import type { ExpectationRecord, Origin } from '../schemas/record.js';
import type { ExpectationInput } from '../../workflows/messages.js';
import {
  awaitFactTaken,
  dependentCount,
  getExpectationRecord,
  recordFactRouted,
  registerExpectation,
  startExpectation,
  withdrawExpectation,
} from '../temporal/expectations.js';
import { expectationLinks, factLedgerWorkflowId, subjectLedgerWorkflowId } from '../temporal/ids.js';
import { ledgerSubscribers } from '../temporal/registration.js';
import { ConflictError, joinPath } from './errors.js';
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
import { createQuotas, type QuotaSettings } from './quotas.js';
import { canRead, openExpectationsQuery } from './records.js';
import type { TemporalCall } from './temporal-call.js';

export type { IngestRequest } from './ingest-plan.js';

export interface IngestSettings {
  factRetention: string;
  lateWindow: string;
  maxLineage: number;
  /** How far in the future a fact's `observedAt` may be (ISO 8601 duration, WATCHER_MAX_CLOCK_SKEW). */
  maxClockSkew: string;
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

/** Looks up every id, LOOKUP_CONCURRENCY at a time; an id with no expectation maps to undefined. */
async function lookupAll(
  lookup: (id: string) => Promise<ExpectationRecord | undefined>,
  ids: readonly string[],
): Promise<Map<string, ExpectationRecord | undefined>> {
  const found = new Map<string, ExpectationRecord | undefined>();
  for (let i = 0; i < ids.length; i += LOOKUP_CONCURRENCY) {
    const batch = ids.slice(i, i + LOOKUP_CONCURRENCY);
    const records = await Promise.all(batch.map(lookup));
    batch.forEach((id, j) => found.set(id, records[j]));
  }
  return found;
}

/** The workflow input: the agent by its principal id only, never its card URL or credential (DESIGN 3.8). */
function inputOf(
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
    links: expectationLinks(expectation),
    settings: { lateWindow: settings.lateWindow, factRetention: settings.factRetention },
  };
}

export function createIngestService(deps: IngestDeps) {
  const lookup = (id: string) => deps.call(() => getExpectationRecord(deps.client, id));
  const lateFacts = createLateFactCheck(deps);
  const quotas = createQuotas({
    settings: deps.quotas ?? NO_QUOTAS,
    countOpen: (agentId) =>
      deps.call(async () => (await deps.client.workflow.count(openExpectationsQuery(deps.taskQueue, agentId))).count),
    now: deps.now,
  });

  /**
   * How full the ledgers and anchors of the new raises are (a query each, in parallel; a ledger that does not run
   * serves nobody). An anchor whose record says it has ended takes no more dependents anyway: it is not asked.
   */
  async function occupancyOf(raises: Expectation[], records: Map<string, ExpectationRecord | undefined>): Promise<Occupancy> {
    const ask = async (ids: string[], count: (id: string) => Promise<number>) => {
      const distinct = [...new Set(ids)];
      const counts = await Promise.all(distinct.map((id) => deps.call(() => count(id))));
      return new Map(distinct.map((id, i) => [id, counts[i]!]));
    };
    const running = (id: string) => {
      const record = records.get(id);
      return record === undefined ? true : record.closedAt === undefined;
    };
    const [factLedgers, subjectLedgers, anchors] = await Promise.all([
      ask(raises.map((e) => factLedgerWorkflowId(e.satisfiedBy.factKey)), (id) => ledgerSubscribers(deps.client, id)),
      ask(raises.map((e) => subjectLedgerWorkflowId(e.subject)), (id) => ledgerSubscribers(deps.client, id)),
      ask(
        raises.flatMap((e) => (e.anchor && running(e.anchor.expectationId) ? [e.anchor.expectationId] : [])),
        (id) => dependentCount(deps.client, id),
      ),
    ]);
    return {
      factKey: (factKey) => factLedgers.get(factLedgerWorkflowId(factKey)) ?? 0,
      subject: (subject) => subjectLedgers.get(subjectLedgerWorkflowId(subject)) ?? 0,
      anchor: (id) => anchors.get(id) ?? 0,
    };
  }

  /**
   * Starts one new expectation. Another request may have raised the same id between our check and our start
   * (concurrent re-delivery): a no-op when it carried the same content from the same agent, a conflict otherwise.
   */
  async function raise(principal: Principal, origin: Origin, item: PlannedExpectation & { action: 'raise' }) {
    const { expectation } = item;
    const input = inputOf(deps.settings, principal, origin, expectation, item.lineage);
    const outcome = await deps.call(() => startExpectation(deps.client, deps.taskQueue, input));
    if (outcome === 'raised') {
      deps.metrics?.expectationsRaised.inc({ kind: expectation.kind });
      return 'raised' as const;
    }
    const existing = await lookup(expectation.expectationId);
    if (existing && sameContent(existing, principal, expectation)) {
      await reregister(principal, origin, existing);
      return 'unchanged' as const;
    }
    const message = `expectation '${expectation.expectationId}' was raised concurrently with other content; it is immutable and its id is never reused`;
    throw new ConflictError(message, [{ path: joinPath([...item.path, 'expectationId']), message }]);
  }

  /**
   * A raise sent again (push delivery is at-least-once, clients retry a 503) may follow one interrupted between its
   * start and its ledger subscriptions: an open expectation is subscribed again (idempotent).
   */
  async function reregister(principal: Principal, origin: Origin, existing: ExpectationRecord | undefined) {
    if (!existing || existing.closedAt || existing.state === 'satisfied' || existing.state === 'withdrawn') return;
    const input = inputOf(deps.settings, principal, origin, existing.expectation, existing.lineage);
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

  /** Raises first, so that a fact in the same request finds the expectation that waits on it; then facts, withdraws. */
  async function apply(
    principal: Principal,
    origin: Origin,
    plan: IngestPlan,
    records: Map<string, ExpectationRecord | undefined>,
    wait = false,
  ): Promise<IngestResult> {
    const result: IngestResult = { expectations: [], facts: [], withdrawn: [] };
    for (const item of plan.expectations) {
      const id = item.expectation.expectationId;
      if (item.action === 'unchanged') await reregister(principal, origin, records.get(id));
      const outcome = item.action === 'raise' ? await raise(principal, origin, item) : 'unchanged';
      result.expectations.push({ expectationId: id, result: outcome });
    }
    for (const fact of plan.facts) {
      const { result: outcome, awaited, forwardedTo } = await deps.call(() =>
        recordFactRouted(deps.client, deps.taskQueue, fact, { factRetention: deps.settings.factRetention }, { listForwarded: wait }),
      );
      if (outcome === 'recorded') deps.metrics?.factsRecorded.inc();
      // Nothing running waited on the key: an early fact, or one for an expectation past its late window.
      if (!awaited) await lateFacts.afterUnawaited(fact);
      const taken = wait && outcome === 'recorded' ? await takenBy(principal, fact, { awaited, forwardedTo }) : {};
      result.facts.push({ factKey: fact.factKey, result: outcome, ...taken });
    }
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
      const parsed = parseIngest(principal, request);
      quotas.takeRates(principal, { raises: parsed.expectations.length, facts: parsed.facts.length });
      const records = await lookupAll(lookup, referencedIds(parsed));
      const known = { parsed, principal, records };
      // The card is fetched only when something is new (after a conflict has had its say).
      const raises = raisesOf(known);
      const [card, occupancy] =
        raises.length > 0
          ? await Promise.all([deps.cards.resolve(principal.agent!), occupancyOf(raises, records)])
          : [undefined, undefined];
      const plan = planIngest({ ...known, card, occupancy, settings: deps.settings, now: (deps.now ?? Date.now)() });
      // A supersede replaces an open expectation: it adds none.
      const adding = plan.expectations.filter((item) => item.action === 'raise' && item.expectation.supersedes === undefined).length;
      await quotas.checkOpen(principal, adding);
      const result = await apply(principal, request.origin, plan, records, request.waitForFacts);
      quotas.raised(principal, adding);
      return result;
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;
