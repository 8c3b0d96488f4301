/**
 * Ingress (DESIGN 3.1, 3.2, 3.6, 4): expectations, facts and withdraw lists from one request. Every item is
 * validated by the pure planner (ingest-plan.ts: schema, role, ownership, conflicts, the card's rules) before any
 * is applied; this file looks up what the planner reads and applies its plan. Applying is idempotent, so a request
 * retried after a 503 completes with nothing doubled.
 */
import type { Principal } from '../auth/principals.js';
import type { Expectation } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../temporal/expectations.js';
import { settled } from '../temporal/settled.js';
import { createLateFactCheck } from './late-facts.js';
import {
  parseIngest,
  planIngest,
  raisesOf,
  referencedIds,
  type IngestPlan,
  type IngestRequest,
  type Occupancy,
} from './ingest-plan.js';
import { createQuotas, type QuotaSettings } from './quotas.js';
import { openExpectationsQuery } from './records.js';
import { apply as applyPlan, type Applier } from './ingest-apply.js';
import type { IngestDeps, IngestResult } from './ingest-types.js';
import { RaiseRoom, placesOf, refusedForRoom, type RoomLoads } from './raise-room.js';

export type { IngestRequest } from './ingest-plan.js';
export type { IngestDeps, IngestResult, IngestSettings } from './ingest-types.js';

const NO_QUOTAS: QuotaSettings = { openExpectations: 0, raisesPerMinute: 0, factsPerMinute: 0 };

const LOOKUP_CONCURRENCY = 16;

/** Starts of new expectations, and chains of facts, the bridge has in flight at once, shared by its requests. */
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

/** What planning a request reads through: the service's dependencies, its raise room, lookups and quotas. */
interface Planner {
  deps: IngestDeps;
  room: RaiseRoom;
  lookup: (id: string) => Promise<ExpectationRecord | undefined>;
  quotas: ReturnType<typeof createQuotas>;
}

/**
 * Validates every item and bound (before any Temporal call), takes the request from the principal's per-minute
 * quotas, and plans it on what it refers to and how full its routers are; a refusal on an estimate is planned again
 * on the routers' exact ids.
 */
async function planRequest(
  { deps, room, lookup, quotas }: Planner,
  principal: Principal,
  request: IngestRequest,
): Promise<{ plan: IngestPlan; records: Map<string, ExpectationRecord | undefined> }> {
  const parsed = parseIngest(principal, request);
  quotas.takeRates(principal, { raises: parsed.expectations.length, facts: parsed.facts.length });
  // The routers are asked while the records are looked up: one round trip to Temporal, not two.
  const asked =
    parsed.expectations.length > 0
      ? room.askLoads(
          parsed.expectations.map(({ value }) => value),
          principal.id,
        )
      : Promise.resolve(new Map() as RoomLoads);
  let records: Map<string, ExpectationRecord | undefined>;
  let raises: Expectation[];
  try {
    records = await lookupAll(lookup, referencedIds(parsed));
    // The card is fetched only when something is new (after a conflict has had its say).
    raises = raisesOf({ parsed, principal, records });
  } catch (error) {
    // A conflict or a failed lookup is answered once the router queries are done: nothing runs on after the answer.
    await asked.catch(() => undefined);
    throw error;
  }
  const known = { parsed, principal, records };
  const routers = await asked;
  const [card, occupancy] =
    raises.length > 0
      ? await settled([deps.cards.resolve(principal.agent!), room.occupancyOf(raises, records, routers)])
      : [undefined, undefined];
  const planWith = (occupancy: Occupancy | undefined) =>
    planIngest({ ...known, card, occupancy, settings: deps.settings, now: (deps.now ?? Date.now)() });
  let plan: IngestPlan;
  try {
    plan = planWith(occupancy);
  } catch (error) {
    if (!occupancy || !refusedForRoom(error)) throw error;
    // Refused on what a memo or an estimate said, with the places held beside it: read the ids and plan again.
    const exactly = await room.askLoads(
      parsed.expectations.map(({ value }) => value),
      principal.id,
      true,
    );
    plan = planWith(await room.occupancyOf(raises, records, exactly));
  }
  return { plan, records };
}

export function createIngestService(deps: IngestDeps) {
  const lookup = (id: string) => deps.call(() => getExpectationRecord(deps.client, id));
  const lateFacts = createLateFactCheck(deps);
  const room = new RaiseRoom(deps);
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
  const applier: Applier = { deps, lookup, lateFacts, share };

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
    const { plan, records } = await planRequest({ deps, room, lookup, quotas }, principal, request);
    // Taken in the same step as the plan (no await between): a request planned after this one counts them.
    const release = room.places.take(placesOf(plan));
    try {
      // A supersede replaces an open expectation: it adds none.
      const adding = plan.expectations.filter(
        (item) => item.action === 'raise' && item.expectation.supersedes === undefined,
      ).length;
      await quotas.checkOpen(principal, adding);
      const result = await applyPlan(
        applier,
        principal,
        request.origin,
        plan,
        records,
        receivedAt,
        request.waitForFacts,
      );
      quotas.raised(principal, adding);
      return result;
    } finally {
      release();
    }
  }
}

export type IngestService = ReturnType<typeof createIngestService>;
