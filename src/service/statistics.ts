/**
 * What a kind actually does (`GET /v1/statistics`): per kind and agent over a window, how its expectations ended and
 * how long their subjects took, read from the visibility store within what statistics-cache.ts lets it spend.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { z } from 'zod';
import type { Principal } from '../auth/principals.js';
import { addDurationParts, matchDuration, type DurationParts } from '../../core/duration-math.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { figuresOf, quantile } from '../../core/statistics.js';
import { decodePayloads } from '../../activities/payloads.js';
import type { statisticsSchema } from '../schemas/http.js';
import { ExpectationAgent, ExpectationKind } from '../temporal/search-attributes.js';
import { agentScope, quote, WORKFLOW_TYPE } from './records.js';
import { createStatisticsCache, type StatisticsBudget } from './statistics-cache.js';
import type { TemporalCall } from './temporal-call.js';

export type Statistics = z.infer<typeof statisticsSchema>;
type Item = Statistics['items'][number];
type Distribution = Item['timeToSatisfySeconds'];

/** Expectations read for one answer at most: past it the answer says `truncated`. */
export const MAX_POPULATION = 5_000;
/** The window a raise's warning reads, and how many satisfied expectations it needs before it says anything. */
const WARNING_WINDOW = 'P7D';
const WARNING_SAMPLE = 10;

export interface StatisticsQuery {
  kind?: string;
  agent?: string;
  /** ISO 8601 duration: the expectations raised this long before now. */
  window: string;
}

export interface StatisticsDeps {
  client: Client;
  namespace: string;
  /** The bridge's task queue: the figures are of its expectations only. */
  taskQueue: string;
  call: TemporalCall;
  now?: () => number;
  /** What the statistics may spend of the visibility store; default DEFAULT_STATISTICS_BUDGET. */
  budget?: Partial<StatisticsBudget>;
}

/**
 * The visibility query of the expectations raised on `taskQueue` since `sinceIso` (a continued run is counted once, by
 * its last): only this deployment's, as every list the bridge answers, whatever else shares the namespace.
 */
export function statisticsQuery(taskQueue: string, query: Omit<StatisticsQuery, 'window'>, sinceIso: string): string {
  const clauses = [
    `WorkflowType = ${quote(WORKFLOW_TYPE)}`,
    `TaskQueue = ${quote(taskQueue)}`,
    `ExecutionStatus != 'ContinuedAsNew'`,
    `StartTime >= ${quote(sinceIso)}`,
  ];
  if (query.kind !== undefined) clauses.push(`${ExpectationKind.name} = ${quote(query.kind)}`);
  if (query.agent !== undefined) clauses.push(`${ExpectationAgent.name} = ${quote(query.agent)}`);
  return clauses.join(' AND ');
}

export function createStatisticsService(deps: StatisticsDeps) {
  const now = deps.now ?? Date.now;

  async function compute(query: StatisticsQuery): Promise<Statistics> {
    const untilMs = now();
    const sinceMs = addDurationParts(untilMs, negated(query.window));
    const since = new Date(sinceMs).toISOString();
    const { records, truncated } = await population(deps, statisticsQuery(deps.taskQueue, query, since));
    const groups = new Map<string, ExpectationRecord[]>();
    for (const record of records) {
      // StartTime is the run's; a continued run's expectation may have been raised before the window.
      if (Date.parse(record.raisedAt) < sinceMs) continue;
      // The store compares as its collation does (MySQL's may ignore case): only the named agent's and kind's count.
      if (query.agent !== undefined && record.agent.id !== query.agent) continue;
      if (query.kind !== undefined && record.expectation.kind !== query.kind) continue;
      const key = JSON.stringify([record.expectation.kind, record.agent.id]);
      groups.set(key, [...(groups.get(key) ?? []), record]);
    }
    const items = [...groups.values()]
      .map(itemOf)
      .sort((a, b) => a.kind.localeCompare(b.kind) || a.agent.localeCompare(b.agent));
    return { window: query.window, since, until: new Date(untilMs).toISOString(), truncated, items };
  }

  const cache = createStatisticsCache(compute, { now, budget: deps.budget });

  return {
    /**
     * The figures a principal may read: a reader or admin any agent's, an agent its own. A QuotaExceededError (429)
     * past the principal's computations per minute, a BridgeBusyError (503) when the bridge computes its most.
     */
    async read(principal: Principal, query: StatisticsQuery): Promise<Statistics> {
      const agent = agentScope(principal, query.agent, {
        action: 'read statistics',
        own: 'read its own statistics',
        hint: 'an agent reads its own figures',
      });
      const answer = await cache.read(principal.id, agent === undefined ? query : { ...query, agent });
      // Another spelling of the same span may have computed it: the answer names the window as asked.
      return { ...answer, window: query.window };
    },

    /**
     * How long nine in ten of the agent's recent expectations of `kind` needed (the p10 of raise to satisfaction,
     * seconds), once enough were satisfied, from the figures already known; undefined before that. Never waits for
     * the visibility store: figures not known yet are read in the background, for a later raise.
     */
    async observedNeed(agentId: string, kind: string): Promise<number | undefined> {
      const answer = cache.known(agentId, { kind, agent: agentId, window: WARNING_WINDOW });
      const times = answer?.items.find((item) => item.kind === kind && item.agent === agentId)?.timeToSatisfySeconds;
      return times && times.count >= WARNING_SAMPLE ? times.p10 : undefined;
    },
  };
}

export type StatisticsService = ReturnType<typeof createStatisticsService>;

/** The window as a step back in time. */
function negated(window: string): DurationParts {
  const parts = matchDuration(window);
  if (!parts) throw new Error(`not an ISO 8601 duration: ${window}`);
  const { years, months, weeks, days, hours, minutes, seconds } = parts;
  return {
    years: -years,
    months: -months,
    weeks: -weeks,
    days: -days,
    hours: -hours,
    minutes: -minutes,
    seconds: -seconds,
  };
}

/** The records of up to MAX_POPULATION expectations the query finds, from their memos. */
async function population(
  deps: StatisticsDeps,
  query: string,
): Promise<{ records: ExpectationRecord[]; truncated: boolean }> {
  const records: ExpectationRecord[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const response = await deps.call(() =>
      deps.client.workflowService.listWorkflowExecutions({
        namespace: deps.namespace,
        query,
        pageSize: Math.min(1_000, MAX_POPULATION - records.length),
        nextPageToken,
      }),
    );
    records.push(...(await recordsOf(deps.client, response.executions)));
    nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
  } while (nextPageToken && records.length < MAX_POPULATION);
  return { records, truncated: nextPageToken !== undefined };
}

/** The records the memos hold (decoded as the client decodes them); one that cannot be read is left out. */
async function recordsOf(
  client: Client,
  executions: temporal.api.workflow.v1.IWorkflowExecutionInfo[],
): Promise<ExpectationRecord[]> {
  const payloads = executions.flatMap((info) => (info.memo?.fields?.record ? [info.memo.fields.record] : []));
  if (payloads.length === 0) return [];
  try {
    const decoded = await decodePayloads(client, payloads);
    return decoded.filter((value): value is ExpectationRecord => isRecord(value));
  } catch {
    return [];
  }
}

const isRecord = (value: unknown): value is ExpectationRecord =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as ExpectationRecord).raisedAt === 'string' &&
  typeof (value as ExpectationRecord).expectation?.kind === 'string' &&
  typeof (value as ExpectationRecord).agent?.id === 'string';

/** The figures of one kind and agent. */
function itemOf(records: ExpectationRecord[]): Item {
  const first = records[0]!;
  const item: Item = {
    kind: first.expectation.kind,
    agent: first.agent.id,
    raised: records.length,
    open: 0,
    satisfiedOnTime: 0,
    satisfiedLate: 0,
    withdrawn: 0,
    lapsed: { overdue: 0, skipped: 0, stalled: 0 },
    timeToSatisfySeconds: { count: 0 },
    satisfiedRelativeToDueSeconds: { count: 0 },
  };
  const toSatisfy: number[] = [];
  const relative: number[] = [];
  for (const record of records) {
    const figures = figuresOf(record);
    if (figures.outcome === 'open') item.open++;
    else if (figures.outcome === 'satisfied_on_time') item.satisfiedOnTime++;
    else if (figures.outcome === 'satisfied_late') item.satisfiedLate++;
    else if (figures.outcome === 'withdrawn') item.withdrawn++;
    else if (figures.lapse === 'overdue' || figures.lapse === 'skipped' || figures.lapse === 'stalled')
      item.lapsed[figures.lapse]++;
    if (figures.timeToSatisfySeconds !== undefined) toSatisfy.push(figures.timeToSatisfySeconds);
    if (figures.relativeToDueSeconds !== undefined) relative.push(figures.relativeToDueSeconds);
  }
  item.timeToSatisfySeconds = distribution(toSatisfy);
  item.satisfiedRelativeToDueSeconds = distribution(relative);
  return item;
}

function distribution(values: number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return { count: 0 };
  const at = (q: number) => quantile(sorted, q)!;
  return { count: sorted.length, p10: at(0.1), p50: at(0.5), p90: at(0.9), p99: at(0.99) };
}
