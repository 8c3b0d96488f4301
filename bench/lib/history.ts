/**
 * Reads workflow histories: events, workflow tasks, and the Temporal actions they bill (Temporal Cloud's definition,
 * counted from the history).
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { onQueues } from '../../test/support/ids.js';
import { runPool } from './load.js';

type History = proto.temporal.api.history.v1.IHistory;
type Event = proto.temporal.api.history.v1.IHistoryEvent;
const { EventType } = proto.temporal.api.enums.v1;
const { HistoryEvent: EventCodec } = proto.temporal.api.history.v1;

/**
 * Event types counted as actions (docs.temporal.io/cloud/actions): a memo upsert is none, and a signal from another
 * workflow is one, counted where it is received (WORKFLOW_EXECUTION_SIGNALED), as a client's signal is.
 */
const ACTION_EVENTS = new Set<string>([
  'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
  'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED',
  'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
  'EVENT_TYPE_TIMER_STARTED',
  'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
  'EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
  'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED',
  'EVENT_TYPE_MARKER_RECORDED',
]);

export interface HistoryEvent {
  id: number;
  type: string;
  timeMs: number;
  activityType?: string;
  scheduledEventId?: number;
}

export interface HistoryCount {
  events: number;
  workflowTasks: number;
  actions: number;
}

const timeMsOf = (event: Event) => Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
/** The events as the server serves them (protobuf), in bytes. */
const bytesOf = (events: Event[]) => events.reduce((sum, event) => sum + EventCodec.encode(event).finish().length, 0);

/** The events of the workflow's current run, in order. */
export async function historyEvents(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  return eventsOf(await client.workflow.getHandle(workflowId).fetchHistory());
}

/** The events of a history already fetched, in order. */
export function eventsOf(history: History): HistoryEvent[] {
  return (history.events ?? []).map((event) => ({
    id: Number(event.eventId ?? 0),
    type: EventType[event.eventType ?? 0] ?? String(event.eventType),
    timeMs: timeMsOf(event),
    activityType: event.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined,
    scheduledEventId: event.activityTaskStartedEventAttributes
      ? Number(event.activityTaskStartedEventAttributes.scheduledEventId)
      : undefined,
  }));
}

/** Events, workflow tasks and actions of one workflow's history. */
export async function countHistory(client: Client, workflowId: string): Promise<HistoryCount> {
  return countEvents(await historyEvents(client, workflowId));
}

/** Events, workflow tasks and actions of events already read. */
export function countEvents(events: HistoryEvent[]): HistoryCount {
  return {
    events: events.length,
    workflowTasks: events.filter((event) => event.type === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED').length,
    actions: events.filter((event) => ACTION_EVENTS.has(event.type)).length,
  };
}

/** Every run of a workflow, the current one first: a router continues as new on its event budget (core/limits.ts). */
export async function runHistories(client: Client, workflowId: string): Promise<History[]> {
  // Visibility lags the start of a run by a moment: the current run is read whatever the list says.
  const runs = new Set([(await client.workflow.getHandle(workflowId).describe()).runId]);
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.add(execution.runId);
  return Promise.all([...runs].map((runId) => client.workflow.getHandle(workflowId, runId).fetchHistory()));
}

/**
 * The share of a shared workflow's runs (a fact router serves many keys) that concerns one expectation or fact: the
 * events whose payloads name one of `mentions` (its fact key, its workflow id), and the three events of each workflow
 * task that handled one (an upper bound: a router handles many in one task), with their size in bytes.
 */
export function shareOfRuns(histories: readonly History[], mentions: readonly string[]) {
  const kept: Event[] = [];
  for (const history of histories) {
    let related = false;
    let pendingTask: Event[] = [];
    for (const event of history.events ?? []) {
      const type = EventType[event.eventType ?? 0] ?? '';
      if (!type.startsWith('EVENT_TYPE_WORKFLOW_TASK_')) {
        const text = Buffer.from(EventCodec.encode(event).finish()).toString('utf8');
        if (mentions.some((m) => text.includes(m))) {
          kept.push(event);
          related = true;
        }
        continue;
      }
      pendingTask.push(event);
      if (type !== 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED') continue;
      if (related) kept.push(...pendingTask);
      pendingTask = [];
      related = false;
    }
  }
  return { count: countEvents(eventsOf({ events: kept })), bytes: bytesOf(kept) };
}

/** What workflows wrote, summed over the `workflows` listed, scaled from the `sampled` histories read. */
export interface HistoryTotals extends HistoryCount {
  workflows: number;
  sampled: number;
  bytes: number;
}

export type WindowTotals = HistoryTotals & { byType: Record<string, HistoryTotals> };

const SUMMED = ['events', 'bytes', 'workflowTasks', 'actions'] as const;

/**
 * What the workflows of `queue` wrote from `start` to `end` (epoch ms), by event time, in all and per workflow type:
 * every run open in the window adds the events it wrote inside it, so that a long-lived router's history counts in
 * the step it was written in. Every run of a type in `readAll` is read; of the others at most `cap`, evenly spread,
 * their sums scaled to the whole list per type.
 */
export async function historyInWindow(
  client: Client,
  queue: string,
  window: { start: number; end: number },
  options: { cap: number; readAll: readonly string[] },
): Promise<WindowTotals> {
  const listed: Array<{ workflowId: string; runId: string; type: string }> = [];
  const query = `${onQueues(queue)} AND StartTime < '${new Date(window.end).toISOString()}'`;
  for await (const { closeTime, workflowId, runId, type } of client.workflow.list({ query })) {
    if (closeTime === undefined || closeTime.getTime() >= window.start) listed.push({ workflowId, runId, type });
  }
  const rest = listed.filter((run) => !options.readAll.includes(run.type));
  const step = Math.max(1, rest.length / options.cap);
  const sample = [
    ...listed.filter((run) => options.readAll.includes(run.type)),
    ...Array.from({ length: Math.min(options.cap, rest.length) }, (_, i) => rest[Math.floor(i * step)]!),
  ];
  const zero = (): HistoryTotals => ({ workflows: 0, sampled: 0, events: 0, bytes: 0, workflowTasks: 0, actions: 0 });
  const sums: Record<string, HistoryTotals> = {};
  for (const run of listed) (sums[run.type] ??= zero()).workflows++;
  const read = await runPool(sample.length, 8, async (i) => {
    const { workflowId, runId, type } = sample[i]!;
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = (history.events ?? []).filter((e) => timeMsOf(e) >= window.start && timeMsOf(e) < window.end);
    const counted = { ...countEvents(eventsOf({ events })), bytes: bytesOf(events) };
    sums[type]!.sampled++;
    for (const key of SUMMED) sums[type]![key] += counted[key];
  });
  if (read.errors.length > 0) throw new Error(`reading ${queue}'s histories: ${read.errors[0]}`);
  const total = zero();
  for (const sum of Object.values(sums)) {
    const scale = sum.sampled === 0 ? 0 : sum.workflows / sum.sampled;
    for (const key of SUMMED) sum[key] = Math.round(sum[key] * scale);
    for (const key of Object.keys(total) as Array<keyof HistoryTotals>) total[key] += sum[key];
  }
  return { ...total, byType: sums };
}
