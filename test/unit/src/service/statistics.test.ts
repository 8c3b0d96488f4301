/**
 * How a record counts in the statistics (core/statistics.ts), the nearest-rank percentiles, the window's bounds, the
 * visibility query of GET /v1/statistics, and what is kept of the store's answer.
 */
import { describe, expect, it } from 'vitest';
import type { ExpectationRecord } from '../../../../core/types.js';
import { figuresOf, quantile } from '../../../../core/statistics.js';
import { statisticsQuerySchema } from '../../../../src/schemas/http.js';
import { createStatisticsService, statisticsQuery } from '../../../../src/service/statistics.js';
import { deliveryExpectation } from '../../../support/fixtures.js';
import { fakeVisibility } from '../../../support/visibility.js';

const raisedAt = '2026-12-01T00:00:00.000Z';
const record = (overrides: Partial<ExpectationRecord>): ExpectationRecord => ({
  expectation: deliveryExpectation('stats-unit', '2026-12-01T01:00:00.000Z'),
  projectedDueAt: '2026-12-01T01:00:00.000Z',
  dueAt: '2026-12-01T01:00:00.000Z',
  state: 'open',
  raisedAt,
  lapses: [],
  lineage: 0,
  agent: { id: 'agent-a' },
  origin: {},
  ...overrides,
});

describe('figuresOf', () => {
  it('times a satisfaction from the raise to the fact observedAt, and against dueAt', () => {
    const onTime = record({ state: 'satisfied', observedAt: '2026-12-01T00:40:00.000Z', late: false });
    const late = record({ state: 'satisfied', observedAt: '2026-12-01T01:30:00.000Z', late: true });

    expect(figuresOf(onTime)).toEqual({
      kind: 'delivery',
      outcome: 'satisfied_on_time',
      timeToSatisfySeconds: 2400,
      relativeToDueSeconds: -1200,
    });
    expect(figuresOf(late)).toMatchObject({ outcome: 'satisfied_late', timeToSatisfySeconds: 5400 });
    expect(figuresOf(late).relativeToDueSeconds).toBe(1800);
  });

  it('counts a fact observed before the raise as no time at all, never a negative one', () => {
    const early = record({ state: 'satisfied', observedAt: '2026-11-30T23:00:00.000Z', late: false });

    expect(figuresOf(early).timeToSatisfySeconds).toBe(0);
  });

  it('names the lapse of a lapsed one, and gives no times to the unsatisfied', () => {
    const lapse = { lapse: 'stalled' } as ExpectationRecord['lapse'];

    expect(figuresOf(record({ state: 'lapsed', lapse }))).toEqual({
      kind: 'delivery',
      outcome: 'lapsed',
      lapse: 'stalled',
    });
    expect(figuresOf(record({ state: 'withdrawn' }))).toEqual({ kind: 'delivery', outcome: 'withdrawn' });
    expect(figuresOf(record({}))).toEqual({ kind: 'delivery', outcome: 'open' });
  });
});

describe('quantile', () => {
  it('takes the nearest rank', () => {
    const sorted = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];

    expect([0.1, 0.5, 0.9, 0.99].map((q) => quantile(sorted, q))).toEqual([10, 50, 90, 100]);
    expect(quantile([7], 0.1)).toBe(7);
    expect(quantile([], 0.5)).toBeUndefined();
  });
});

describe('the statistics query', () => {
  it('takes a window from PT1M to P90D, P7D by default, and names the field otherwise', () => {
    expect(statisticsQuerySchema.parse({})).toEqual({ window: 'P7D' });
    expect(statisticsQuerySchema.parse({ window: 'PT6H', kind: 'pickup' })).toEqual({ window: 'PT6H', kind: 'pickup' });
    for (const [window, message] of [
      ['PT30S', 'window must be between PT1M and P90D'],
      ['P1Y', 'window must be between PT1M and P90D'],
      ['a week', 'window must be an ISO 8601 duration, e.g. P7D or PT6H'],
    ]) {
      const issues = statisticsQuerySchema.safeParse({ window }).error?.issues;
      expect(issues?.map((issue) => ({ path: issue.path, message: issue.message }))).toEqual([
        { path: ['window'], message },
      ]);
    }
  });

  it('asks the visibility store for the runs started in the window, continued ones once', () => {
    expect(statisticsQuery('watcher', { kind: "it's", agent: 'agent-a' }, '2026-12-01T00:00:00.000Z')).toBe(
      "WorkflowType = 'expectationWorkflow' AND TaskQueue = 'watcher' AND ExecutionStatus != 'ContinuedAsNew' AND " +
        "StartTime >= '2026-12-01T00:00:00.000Z' AND ExpectationKind = 'it\\'s' AND ExpectationAgent = 'agent-a'",
    );
  });
});

describe("the store's answer", () => {
  it("counts only the agent and kind named, exactly, where the store's collation ignores case", async () => {
    const raisedAt = new Date(Date.now() - 60_000).toISOString();
    const of = (agent: string, kind: string): ExpectationRecord =>
      record({ raisedAt, agent: { id: agent }, expectation: { ...record({}).expectation, kind } });
    // What a MySQL visibility store with a case-insensitive collation finds for agent 'alice' and kind 'pickup'.
    const caseBlind = fakeVisibility(() => [of('alice', 'pickup'), of('Alice', 'pickup'), of('alice', 'Pickup')]);
    const statistics = createStatisticsService({
      client: caseBlind.client,
      namespace: 'default',
      taskQueue: 'watcher',
      call: (fn) => fn(),
    });

    const answer = await statistics.read({ id: 'alice', roles: ['agent'] }, { kind: 'pickup', window: 'P7D' });

    expect(answer.items.map((item) => [item.kind, item.agent, item.raised])).toEqual([['pickup', 'alice', 1]]);
  });
});
