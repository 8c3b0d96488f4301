/**
 * Scenario 3, lapse lateness: N expectations due at the same instant with no grace; each lapse task's arrival at a
 * real @a2a-js/sdk agent minus the due instant. Against raw Temporal timers: N workflows sleeping until one shared
 * instant, then a no-op activity that records Date.now(). Each side's histories split the lateness into stages.
 */
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { historyEvents, type HistoryEvent } from '../lib/history.js';
import { postJson, runPool } from '../lib/load.js';
import { artifactUpdate, batchKeys, batchOf, runPrefix } from '../lib/payloads.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { ratio, summarise, type Summary } from '../lib/stats.js';

/**
 * The lateness in stages: due → TimerFired written; → the activity scheduled (the workflow task that decided the
 * lapse); → the activity started on the worker; → at the agent (ours: card fetch + SendMessage) or recorded (raw).
 */
const STAGES = ['timer', 'decide', 'queue', 'activity'] as const;
export type Stages = Record<(typeof STAGES)[number], Summary>;

export interface LapseResult {
  count: number;
  /** Raising finished this long before the due instant (negative: it was late, the figures are not valid). */
  settledBeforeDueMs: number;
  oursMs: Summary;
  rawMs: Summary;
  oursStages: Stages;
  rawStages: Stages;
  ratios: { p50: number; p99: number; max: number };
}

const ceilSecond = (ms: number) => Math.ceil(ms / 1000) * 1000;

function stagesOf(events: HistoryEvent[], dueMs: number, activityType: string, arrivedMs: number | undefined) {
  const fired = events.find((e) => e.type === 'EVENT_TYPE_TIMER_FIRED');
  const scheduled = events.find(
    (e) => e.type === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED' && e.activityType === activityType,
  );
  const started =
    scheduled &&
    events.find((e) => e.type === 'EVENT_TYPE_ACTIVITY_TASK_STARTED' && e.scheduledEventId === scheduled.id);
  if (!fired || !scheduled || !started || arrivedMs === undefined) return undefined;
  return {
    timer: fired.timeMs - dueMs,
    decide: scheduled.timeMs - fired.timeMs,
    queue: started.timeMs - scheduled.timeMs,
    activity: arrivedMs - started.timeMs,
  };
}

async function stageSummary(
  client: Stack['client'],
  ids: string[],
  dueMs: number,
  activityType: string,
  arrived: (workflowId: string) => number | undefined,
): Promise<Stages> {
  const rows: NonNullable<ReturnType<typeof stagesOf>>[] = [];
  await runPool(ids.length, 8, async (i) => {
    const id = ids[i]!;
    const row = stagesOf(await historyEvents(client, id), dueMs, activityType, arrived(id));
    if (row) rows.push(row);
  });
  return Object.fromEntries(STAGES.map((stage) => [stage, summarise(rows.map((r) => r[stage]))])) as Stages;
}

export async function runLapseLateness(
  rig: Stack,
  options: { count: number; concurrency: number; raisePerSec: number; rawPerSec: number },
): Promise<LapseResult> {
  const { count, concurrency } = options;
  // One prefix per count: a full run raises 200 and then 1,000, and ids are never reused.
  const prefix = `${runPrefix}-lapse${count}`;
  const batches = Math.ceil(count / 10);
  // Long enough that every raise has settled before the instant, with room for a slow machine.
  const leadMs = Math.max(20_000, Math.round(((batches * 10) / options.raisePerSec) * 2_000) + 10_000);
  const dueMs = ceilSecond(Date.now() + leadMs);
  const dueAt = new Date(dueMs).toISOString().replace('.000Z', 'Z');
  progress(
    `lapse lateness: raising ${batches * 10} expectations due at ${dueAt} (in ${Math.round(leadMs / 1000)} s), no grace`,
  );
  const raised = await runPool(batches, concurrency, (b) =>
    postJson(
      `${rig.bridgeUrl}/a2a/events`,
      rig.tokens.agent,
      artifactUpdate(batchOf(prefix, b, 10, dueAt, 'PT0S'), `${prefix}-task-${b}`),
    ),
  );
  if (raised.errors.length > 0) throw new Error(`lapse lateness: raising failed: ${raised.errors[0]}`);
  rig.expectRaised(batchKeys(prefix, batches, 10));
  await rig.waitSettled();
  const settledBeforeDueMs = dueMs - Date.now();
  progress(
    `  lapse lateness: settled ${Math.round(settledBeforeDueMs / 1000)} s before the due instant; waiting for ${batches * 10} lapse tasks`,
  );
  if (settledBeforeDueMs < 0)
    progress('  WARNING: raising was not finished by the due instant; lateness includes raising');

  const lapseIdOf = (message: any): string | undefined => message?.metadata?.[EXTENSION_URI]?.lapse?.expectationId;
  const mine = () => rig.agent.received.filter((r) => lapseIdOf(r.message)?.startsWith(`${prefix}-`));
  await waitUntil('every lapse task to reach the agent', () => mine().length >= batches * 10, {
    timeoutMs: dueMs - Date.now() + 600_000,
    intervalMs: 100,
    onTick: () =>
      Date.now() > dueMs && progress(`  lapse lateness: ${mine().length}/${batches * 10} lapse tasks received`),
  });
  const received = mine();
  const arrivedAt = new Map(
    received.map((r) => [expectationWorkflowId(lapseIdOf(r.message)!), r.receivedAt.getTime()]),
  );
  const oursMs = summarise(received.map((r) => r.receivedAt.getTime() - dueMs));
  progress(`  lapse lateness (ours): p50 ${oursMs.p50} / p99 ${oursMs.p99} / max ${oursMs.max} ms`);

  // Raw: the same number of timers on one instant, far enough ahead for the starts.
  const rawLeadMs = Math.max(15_000, Math.round((count / options.rawPerSec) * 2_000) + 8_000);
  const rawDueMs = ceilSecond(Date.now() + rawLeadMs);
  progress(`lapse lateness: starting ${count} raw timer workflows due in ${Math.round(rawLeadMs / 1000)} s`);
  const rawIds = Array.from({ length: count }, (_, i) => `${prefix}-raw-${i}`);
  const started = await runPool(count, concurrency, (i) =>
    rig.client.workflow.start('timerWorkflow', {
      workflowId: rawIds[i]!,
      taskQueue: rig.baselineQueue,
      args: [rawIds[i]!, rawDueMs],
    }),
  );
  if (started.errors.length > 0) throw new Error(`lapse lateness: raw starts failed: ${started.errors[0]}`);
  const firedAt = rig.firedAt;
  await waitUntil('every raw timer to fire its activity', () => rawIds.every((id) => firedAt.has(id)), {
    timeoutMs: rawDueMs - Date.now() + 600_000,
    intervalMs: 100,
  });
  const rawMs = summarise(rawIds.map((id) => firedAt.get(id)! - rawDueMs));
  progress(`  lapse lateness (raw timers): p50 ${rawMs.p50} / p99 ${rawMs.p99} / max ${rawMs.max} ms`);

  progress('  lapse lateness: reading histories for the stage breakdown');
  const oursStages = await stageSummary(rig.client, [...arrivedAt.keys()], dueMs, 'deliverLapse', (id) =>
    arrivedAt.get(id),
  );
  const rawStages = await stageSummary(rig.client, rawIds, rawDueMs, 'fired', (id) => firedAt.get(id));
  return {
    count: batches * 10,
    settledBeforeDueMs,
    oursMs,
    rawMs,
    oursStages,
    rawStages,
    ratios: { p50: ratio(oursMs.p50, rawMs.p50), p99: ratio(oursMs.p99, rawMs.p99), max: ratio(oursMs.max, rawMs.max) },
  };
}
