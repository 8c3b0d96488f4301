/**
 * Scenario 3, lapse lateness (BENCHMARKS.md, "What is measured"): N due at one instant with no grace against N raw
 * timers on one instant; each side's histories split the lateness into stages.
 */
import { lapseOf } from '../../test/support/agent.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { historyEvents } from '../lib/history.js';
import { runPool } from '../lib/load.js';
import { batchKeys, ceilSecond, instant, runPrefix } from '../lib/payloads.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { ratio, summarise, type Summary } from '../lib/stats.js';

/**
 * The lateness in stages: due → TimerFired written; → the activity scheduled (the workflow task that decided the
 * lapse); → the activity started on the worker; → at the agent (ours: card fetch + SendMessage) or recorded (raw).
 */
const STAGES = ['timer', 'decide', 'queue', 'activity'] as const;
export type Stages = Record<(typeof STAGES)[number], Summary>;

export type LapseResult = Awaited<ReturnType<typeof runLapseLateness>>;

/** Each stage over the histories of `ids`, due at `dueMs`, whose lapse ran the activity `activityType`. */
async function stageSummary(
  client: Stack['client'],
  ids: string[],
  dueMs: number,
  activityType: string,
  arrivedAt: ReadonlyMap<string, number>,
): Promise<Stages> {
  const rows: Array<Record<keyof Stages, number>> = [];
  await runPool(ids.length, 8, async (i) => {
    const events = await historyEvents(client, ids[i]!);
    const fired = events.find((e) => e.type === 'EVENT_TYPE_TIMER_FIRED');
    const scheduled = events.find(
      (e) => e.type === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' && e.activityType === activityType,
    );
    const started = events.find(
      (e) => e.type === 'EVENT_TYPE_ACTIVITY_TASK_STARTED' && e.scheduledEventId === scheduled?.id,
    );
    const arrived = arrivedAt.get(ids[i]!);
    if (!fired || !scheduled || !started || arrived === undefined) return;
    const [decide, queue] = [scheduled.timeMs - fired.timeMs, started.timeMs - scheduled.timeMs];
    rows.push({ timer: fired.timeMs - dueMs, decide, queue, activity: arrived - started.timeMs });
  });
  return Object.fromEntries(STAGES.map((stage) => [stage, summarise(rows.map((r) => r[stage]))])) as Stages;
}

/** Due → at the agent (ours) or recorded (raw), in ms, and in stages. */
export async function runLapseLateness(
  rig: Stack,
  options: { count: number; concurrency: number; raisePerSec: number; rawPerSec: number },
) {
  const { count, concurrency } = options;
  // One prefix per count: a full run raises 200 and then 1,000, and ids are never reused.
  const prefix = `${runPrefix}-lapse${count}`;
  const batches = Math.ceil(count / 10);
  // Long enough that every raise has settled before the instant, with room for a slow machine.
  const leadMs = Math.max(20_000, Math.round(((batches * 10) / options.raisePerSec) * 2_000) + 10_000);
  const dueMs = ceilSecond(Date.now() + leadMs);
  const dueAt = instant(dueMs);
  progress(
    `lapse lateness: raising ${batches * 10} expectations due at ${dueAt} (in ${Math.round(leadMs / 1000)} s), no grace`,
  );
  const raised = await runPool(batches, concurrency, (b) => rig.raiseBatch(prefix, b, 10, dueAt, 'PT0S'));
  if (raised.errors.length > 0) throw new Error(`lapse lateness: raising failed: ${raised.errors[0]}`);
  rig.expectRaised(batchKeys(prefix, batches, 10));
  await rig.waitSettled();
  const settledBeforeDueMs = dueMs - Date.now();
  progress(
    `  lapse lateness: settled ${Math.round(settledBeforeDueMs / 1000)} s before the due instant; waiting for ${batches * 10} lapse tasks`,
  );
  if (settledBeforeDueMs < 0)
    progress('  WARNING: raising was not finished by the due instant; lateness includes raising');

  const mine = () => rig.agent.received.filter((r) => lapseOf(r)?.expectationId.startsWith(`${prefix}-`));
  await waitUntil('every lapse task to reach the agent', () => mine().length >= batches * 10, {
    timeoutMs: dueMs - Date.now() + 600_000,
    intervalMs: 100,
    onTick: () =>
      Date.now() > dueMs && progress(`  lapse lateness: ${mine().length}/${batches * 10} lapse tasks received`),
  });
  const received = mine();
  const arrivedAt = new Map(
    received.map((r) => [expectationWorkflowId(lapseOf(r)!.expectationId), r.receivedAt.getTime()]),
  );
  const oursMs = summarise(received.map((r) => r.receivedAt.getTime() - dueMs));
  progress(`  lapse lateness (ours): p50 ${oursMs.p50} / p99 ${oursMs.p99} / max ${oursMs.max} ms`);

  // Raw: the same number of timers on one instant, far enough ahead for the starts.
  const rawLeadMs = Math.max(15_000, Math.round((count / options.rawPerSec) * 2_000) + 8_000);
  const rawDueMs = ceilSecond(Date.now() + rawLeadMs);
  progress(`lapse lateness: starting ${count} raw timer workflows due in ${Math.round(rawLeadMs / 1000)} s`);
  const rawIds = Array.from({ length: count }, (_, i) => `${prefix}-raw-${i}`);
  const start = (i: number) =>
    rig.client.workflow.start('timerWorkflow', {
      workflowId: rawIds[i]!,
      taskQueue: rig.baselineQueue,
      args: [rawIds[i]!, rawDueMs],
    });
  const started = await runPool(count, concurrency, start);
  if (started.errors.length > 0) throw new Error(`lapse lateness: raw starts failed: ${started.errors[0]}`);
  const firedAt = rig.firedAt;
  await waitUntil('every raw timer to fire its activity', () => rawIds.every((id) => firedAt.has(id)), {
    timeoutMs: rawDueMs - Date.now() + 600_000,
    intervalMs: 100,
  });
  const rawMs = summarise(rawIds.map((id) => firedAt.get(id)! - rawDueMs));
  progress(`  lapse lateness (raw timers): p50 ${rawMs.p50} / p99 ${rawMs.p99} / max ${rawMs.max} ms`);

  progress('  lapse lateness: reading histories for the stage breakdown');
  const oursStages = await stageSummary(rig.client, [...arrivedAt.keys()], dueMs, 'deliverLapse', arrivedAt);
  const rawStages = await stageSummary(rig.client, rawIds, rawDueMs, 'fired', firedAt);
  return {
    count: batches * 10,
    oursMs,
    rawMs,
    oursStages,
    rawStages,
    ratios: { p50: ratio(oursMs.p50, rawMs.p50), p99: ratio(oursMs.p99, rawMs.p99), max: ratio(oursMs.max, rawMs.max) },
  };
}
