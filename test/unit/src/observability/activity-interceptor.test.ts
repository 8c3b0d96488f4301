/**
 * The worker's lapse counter counts lapses, not deliveries: the first attempt of a lapse's first delivery counts,
 * a retry does not, and neither does a delivery an admin asked for again (`resend`).
 */
import type { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import type { DeliverLapseInput } from '../../../../workflows/activity-types.js';
import { createMetrics } from '../../../../src/metrics.js';
import { activityObservability } from '../../../../src/observability/activity-interceptor.js';

const lapse = {
  expectationId: 'e1',
  kind: 'delivery',
  subject: { type: 'shipment', id: 'S1' },
  expects: 'the shipment is delivered',
  lapse: 'overdue',
  projectedDueAt: '2026-12-01T00:00:00.000Z',
  dueAt: '2026-12-01T00:00:00.000Z',
  lapsedAt: '2026-12-01T00:00:00.000Z',
  lineage: 0,
} as const;

/** Runs one deliverLapse attempt through the interceptor; answers the bridge-side lapse counter's value after it. */
async function countAfter(attempt: number, input: Partial<DeliverLapseInput>): Promise<number> {
  const metrics = createMetrics();
  const meterCounts: number[] = [];
  const ctx = {
    info: { activityType: 'deliverLapse', attempt, workflowExecution: { workflowId: 'expectation:e1', runId: 'r' } },
    metricMeter: { createCounter: () => ({ add: (value: number) => void meterCounts.push(value) }) },
    log: { info() {}, error() {} },
  } as unknown as Context;
  const interceptors = activityObservability({ metrics })(ctx);
  const args = [{ lapse, agent: { id: 'shipping-agent' }, origin: {}, messageId: 'm1', ...input }];

  await interceptors.inbound!.execute!({ args, headers: {} }, async () => ({ warnings: [] }));

  const counted = (await metrics.lapses.get()).values.reduce((sum, value) => sum + value.value, 0);
  expect(meterCounts.reduce((sum, value) => sum + value, 0)).toBe(counted);
  return counted;
}

describe('the lapse counter', () => {
  it('counts the first attempt of a lapse', async () => {
    expect(await countAfter(1, {})).toBe(1);
  });

  it('does not count a retry', async () => {
    expect(await countAfter(2, {})).toBe(0);
  });

  it('does not count a resend: the lapse was counted when it was first delivered', async () => {
    expect(await countAfter(1, { resend: 1 })).toBe(0);
  });
});
