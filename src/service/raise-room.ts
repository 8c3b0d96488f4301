/**
 * Room on the routers before a raise (docs/raise-path.md, step 0): how full the fact keys and anchors of a
 * request's new expectations are, read from what the server holds (router memos, the visibility store) with no worker
 * and no billable action, plus the places this bridge's own requests hold (places.ts).
 */
import { MAX_AGENT_SHARE, MAX_KEY_SUBSCRIBERS, RACE_ROOM, ROUTER_CROWDED_KEY } from '../../core/limits.js';
import type { Expectation } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import type { FactRouterMemo } from '../../workflows/messages.js';
import { getFactRouterMemo, hasEnded, dependentCount, workflowIdsOf } from '../temporal/expectations.js';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { settled } from '../temporal/settled.js';
import { RuleViolationError } from './errors.js';
import { type IngestPlan, type Occupancy } from './ingest-plan.js';
import { Places } from './places.js';
import { occupancyQuery } from './records.js';
import type { IngestDeps } from './ingest-types.js';

/**
 * How many expectations wait on each fact key (by factLoadKey; at most ROUTER_CROWDED_KEY - 1 where the key's router
 * does not list it) of a request's expectations.
 */
export type RoomLoads = ReadonlyMap<string, Load>;
/**
 * What was read of a load: a count (from a memo, a visibility count, or the most a memo that does not list a key
 * allows), or, near a bound, the workflow ids themselves, so that the places this bridge holds are not counted twice.
 */
type Load = number | ReadonlySet<string>;
const sizeOf = (load: Load | undefined): number => (typeof load === 'object' ? load.size : (load ?? 0));
export const factLoadKey = (factKey: string): string => `key:${factKey}`;
/** The raising agent's own expectations among a load's (0 where it could not exceed its share). */
const ownLoadKey = (loadKey: string): string => `own:${loadKey}`;

/** Refused for a full fact key: a bound that a stale read may have overstated. */
export const refusedForRoom = (error: unknown): boolean =>
  error instanceof RuleViolationError && error.errors.some((e) => e.rule === 'fact-key-subscribers');

/** The places a plan's new expectations take on their fact keys. */
export const placesOf = (plan: IngestPlan) =>
  plan.expectations.flatMap((item) => {
    if (item.action !== 'raise') return [];
    const { expectation: e } = item;
    return [{ loadKey: factLoadKey(e.satisfiedBy.factKey), workflowId: expectationWorkflowId(e.expectationId) }];
  });

/** What the request's expectations bring to each fact key. */
function tally(expectations: readonly Expectation[]) {
  const bringing = new Map<string, number>();
  for (const e of expectations) bringing.set(e.satisfiedBy.factKey, (bringing.get(e.satisfiedBy.factKey) ?? 0) + 1);
  return { bringing };
}

/** The router reads of one bridge, and the places its requests hold. */
export class RaiseRoom {
  readonly places: Places;

  constructor(private readonly deps: IngestDeps) {
    this.places = new Places(deps.now);
  }

  /** A load with the places this bridge's requests hold on it (see places.ts). */
  private withHeld(loadKey: string, load: Load | undefined): number {
    const held = this.places.holders(loadKey);
    if (typeof load === 'object') return new Set([...load, ...held]).size;
    return (load ?? 0) + held.length;
  }

  /** How full the fact keys of the request's expectations are, from their routers' memos, exactly near a bound. */
  // Asked while the records are looked up: its failure is thrown where it is awaited, never as an unhandled rejection.
  askLoads(expectations: readonly Expectation[], agentId: string, exact = false): Promise<RoomLoads> {
    const { bringing } = tally(expectations);
    const routers = new Map<string, Promise<FactRouterMemo | undefined>>();
    const memoOf = (factKey: string) => {
      const id = factRouterWorkflowId(factKey, this.deps.taskQueue);
      if (!routers.has(id))
        routers.set(
          id,
          this.deps.call(() => getFactRouterMemo(this.deps.client, id)),
        );
      return routers.get(id)!;
    };
    const countOf = (query: string) => this.deps.call(async () => (await this.deps.client.workflow.count(query)).count);
    // The ids, and the places this bridge holds on `loadKey` let go where their expectation has ended since.
    const idsOf = async (query: string, loadKey: string) => {
      const ids = await this.deps.call(() => workflowIdsOf(this.deps.client, query, MAX_KEY_SUBSCRIBERS * 2));
      await this.dropEnded(loadKey, ids);
      return ids;
    };
    // Near a bound (with what this request brings and the places held beside it), or when asked to be exact, the ids.
    const near = (loadKey: string, estimate: number, brought: number) =>
      exact || estimate + this.places.holders(loadKey).length + brought > MAX_KEY_SUBSCRIBERS - RACE_ROOM;
    const keyLoad = async (factKey: string): Promise<Load> => {
      const estimate = (await memoOf(factKey))?.crowded[factKey] ?? ROUTER_CROWDED_KEY - 1;
      const exactly = near(factLoadKey(factKey), estimate, bringing.get(factKey)!);
      return exactly ? idsOf(occupancyQuery(this.deps.taskQueue, { factKey }), factLoadKey(factKey)) : estimate;
    };
    // The agent's own share, counted where all of them with this request could exceed it (a memo may undercount).
    const ownLoad = async (
      loadKey: string,
      load: Promise<Load>,
      brought: number,
      of: Parameters<typeof occupancyQuery>[1],
      floor: number,
    ) => {
      const all = this.withHeld(loadKey, await load);
      return all + brought > MAX_AGENT_SHARE || all >= floor
        ? countOf(occupancyQuery(this.deps.taskQueue, of, agentId))
        : 0;
    };
    const asks: Array<[string, Promise<Load>]> = [];
    for (const [factKey, brought] of bringing) {
      const load = keyLoad(factKey);
      const own = ownLoad(factLoadKey(factKey), load, brought, { factKey }, ROUTER_CROWDED_KEY);
      asks.push([factLoadKey(factKey), load], [ownLoadKey(factLoadKey(factKey)), own]);
    }
    const asked = settled(asks.map(([, load]) => load)).then(
      (counts) => new Map(asks.map(([id], i) => [id, counts[i]!])),
    );
    asked.catch(() => undefined);
    return asked;
  }

  /** Lets go of the places this bridge holds on `loadKey` for expectations that have ended, by one point read each. */
  private async dropEnded(loadKey: string, listed: ReadonlySet<string>): Promise<void> {
    const unlisted = this.places.holders(loadKey).filter((workflowId) => !listed.has(workflowId));
    if (unlisted.length === 0) return;
    const ended = await settled(unlisted.map((id) => this.deps.call(() => hasEnded(this.deps.client, id))));
    this.places.forget(
      loadKey,
      unlisted.filter((_, i) => ended[i]),
    );
  }

  /**
   * How full the routers and anchors of the new raises are. An anchor whose record says it has ended takes no more
   * dependents anyway: it is not asked.
   */
  async occupancyOf(
    raises: Expectation[],
    records: Map<string, ExpectationRecord | undefined>,
    routers: RoomLoads,
  ): Promise<Occupancy> {
    const running = (id: string) => {
      const record = records.get(id);
      return record === undefined ? true : record.closedAt === undefined;
    };
    const anchorIds = [
      ...new Set(raises.flatMap((e) => (e.anchor && running(e.anchor.expectationId) ? [e.anchor.expectationId] : []))),
    ];
    const counts = await settled(anchorIds.map((id) => this.deps.call(() => dependentCount(this.deps.client, id))));
    const anchors = new Map(anchorIds.map((id, i) => [id, counts[i]!]));
    return {
      // Read when the plan is made, with the places held by then (places.ts).
      factKey: (factKey) => this.withHeld(factLoadKey(factKey), routers.get(factLoadKey(factKey))),
      ownFactKey: (factKey) => sizeOf(routers.get(ownLoadKey(factLoadKey(factKey)))),
      anchor: (id) => anchors.get(id) ?? 0,
    };
  }
}
