/**
 * Reads workflow histories: events by type, workflow tasks, and the Temporal actions they bill (Temporal Cloud's
 * definition, counted from the history: starts, signals received, activities scheduled, timers, search-attribute
 * upserts, updates, child starts, markers).
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { routerTaskQueue } from '../../core/ids.js';
import { runPool } from './load.js';

const EventType = proto.temporal.api.enums.v1.EventType;

/**
 * Event types counted as actions. Per Temporal Cloud's documentation of actions (docs.temporal.io/cloud/actions):
 * a memo upsert (WORKFLOW_PROPERTIES_MODIFIED) is not an action, and a signal is one action, although it appears
 * twice when a workflow signals another (the sender's SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED and the
 * receiver's WORKFLOW_EXECUTION_SIGNALED): it is counted once, at the receiver, which is also where a signal from a
 * client shows. Before 2026-12-03 both were counted, so earlier results overstate actions by those events.
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
  type: string;
  timeMs: number;
  /** Activity type of a scheduled activity. */
  activityType?: string;
  scheduledEventId?: number;
  id: number;
}

export interface HistoryCount {
  events: number;
  workflowTasks: number;
  actions: number;
}

/** The events of the workflow's current run, in order. */
export async function historyEvents(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  return eventsOf(await client.workflow.getHandle(workflowId).fetchHistory());
}

/** The events of a history already fetched, in order. */
export function eventsOf(history: proto.temporal.api.history.v1.IHistory): HistoryEvent[] {
  return (history.events ?? []).map((event) => {
    const seconds = Number(event.eventTime?.seconds ?? 0);
    const nanos = event.eventTime?.nanos ?? 0;
    return {
      id: Number(event.eventId ?? 0),
      type: EventType[event.eventType ?? 0] ?? String(event.eventType),
      timeMs: seconds * 1000 + nanos / 1e6,
      activityType: event.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined,
      scheduledEventId: event.activityTaskStartedEventAttributes
        ? Number(event.activityTaskStartedEventAttributes.scheduledEventId)
        : undefined,
    };
  });
}

/** Events, workflow tasks and actions of one workflow's history. */
export async function countHistory(client: Client, workflowId: string): Promise<HistoryCount> {
  return countEvents(await historyEvents(client, workflowId));
}

/** Events, workflow tasks and actions of events already read. */
export function countEvents(events: HistoryEvent[]): HistoryCount {
  const count = (pass: (type: string) => boolean) => events.filter((event) => pass(event.type)).length;
  return {
    events: events.length,
    workflowTasks: count((type) => type === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED'),
    actions: count((type) => ACTION_EVENTS.has(type)),
  };
}

/** What the workflows of a task queue wrote, summed over all of them (estimated from a sample when many). */
export interface HistoryTotals {
  workflows: number;
  /** Histories read; the totals are scaled from them to `workflows`. */
  sampled: number;
  events: number;
  /** The histories as the server serves them (protobuf). */
  bytes: number;
  workflowTasks: number;
  actions: number;
}

/**
 * Every run of a workflow, the current one first: a router continues as new every ROUTER_EVENT_BUDGET events
 * (core/limits.ts), so what concerns one expectation or fact may sit in an earlier run than the current one.
 */
export async function runHistories(
  client: Client,
  workflowId: string,
): Promise<proto.temporal.api.history.v1.IHistory[]> {
  // Visibility lags the start of a run by a moment: the current run is read whatever the list says.
  const runs = new Set([(await client.workflow.getHandle(workflowId).describe()).runId]);
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.add(execution.runId);
  return Promise.all([...runs].map((runId) => client.workflow.getHandle(workflowId, runId).fetchHistory()));
}

/**
 * The share of a shared workflow's runs (a fact router serves many keys) that concerns one expectation or fact: the
 * events whose payloads name one of `mentions` (its fact key, its workflow id), and the three events of each workflow
 * task that handled one (an upper bound: a router handles many in one task). Bytes are the encoded size of those events.
 */
export function shareOfRuns(
  histories: readonly proto.temporal.api.history.v1.IHistory[],
  mentions: readonly string[],
): { count: HistoryCount; bytes: number } {
  const { HistoryEvent } = proto.temporal.api.history.v1;
  const kept: proto.temporal.api.history.v1.IHistoryEvent[] = [];
  for (const history of histories) {
    let related = false;
    let pendingTask: proto.temporal.api.history.v1.IHistoryEvent[] = [];
    for (const event of history.events ?? []) {
      const type = EventType[event.eventType ?? 0] ?? '';
      if (type.startsWith('EVENT_TYPE_WORKFLOW_TASK_')) {
        pendingTask.push(event);
        if (type === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED') {
          if (related) kept.push(...pendingTask);
          pendingTask = [];
          related = false;
        }
      } else {
        const text = Buffer.from(HistoryEvent.encode(event).finish()).toString('utf8');
        if (mentions.some((m) => text.includes(m))) {
          kept.push(event);
          related = true;
        }
      }
    }
  }
  const bytes = kept.reduce((sum, event) => sum + HistoryEvent.encode(event).finish().length, 0);
  return { count: countEvents(eventsOf({ events: kept })), bytes };
}

/** What one workflow type wrote in a window (HistoryTotals, by event time). */
export interface WindowTotals extends HistoryTotals {
  /** The same, per workflow type. */
  byType: Record<string, HistoryTotals>;
}

/**
 * What the workflows of `queue` wrote from `start` to `end` (epoch ms), by event time: every run open in the window
 * (visibility: started before its end, not closed before its start) adds the events it wrote inside it, so that a
 * long-lived router's history is counted in the step it was written in, not in the step that started the router.
 * Every run of a type in `readAll` is read (the routers: few, and each serves all of a step's traffic); of the other
 * runs at most `cap`, evenly spread over the list, their sums scaled to the whole list per type. Bytes: each event as
 * the server serves it (protobuf), summed.
 */
export async function historyInWindow(
  client: Client,
  queue: string,
  window: { start: number; end: number },
  options: { cap: number; readAll: readonly string[]; concurrency?: number },
): Promise<WindowTotals> {
  const iso = (ms: number) => new Date(ms).toISOString();
  const listed: Array<{ workflowId: string; runId: string; type: string }> = [];
  for await (const execution of client.workflow.list({
    query: `TaskQueue IN ('${queue}', '${routerTaskQueue(queue)}') AND StartTime < '${iso(window.end)}'`,
  })) {
    if (execution.closeTime !== undefined && execution.closeTime.getTime() < window.start) continue;
    listed.push({ workflowId: execution.workflowId, runId: execution.runId, type: execution.type });
  }
  const whole = listed.filter((run) => options.readAll.includes(run.type));
  const rest = listed.filter((run) => !options.readAll.includes(run.type));
  const step = Math.max(1, rest.length / options.cap);
  const sample = [
    ...whole,
    ...Array.from({ length: Math.min(options.cap, rest.length) }, (_, i) => rest[Math.floor(i * step)]!),
  ];
  const zero = () => ({ workflows: 0, sampled: 0, events: 0, bytes: 0, workflowTasks: 0, actions: 0 });
  const sums: Record<string, HistoryTotals> = {};
  for (const run of listed) (sums[run.type] ??= zero()).workflows++;
  const read = await runPool(sample.length, options.concurrency ?? 8, async (i) => {
    const { workflowId, runId, type } = sample[i]!;
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const inWindow = (history.events ?? []).filter((event) => {
      const ms = Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
      return ms >= window.start && ms < window.end;
    });
    const counted = countEvents(eventsOf({ events: inWindow }));
    const sum = sums[type]!;
    sum.sampled++;
    sum.events += counted.events;
    sum.bytes += inWindow.reduce(
      (total, event) => total + proto.temporal.api.history.v1.HistoryEvent.encode(event).finish().length,
      0,
    );
    sum.workflowTasks += counted.workflowTasks;
    sum.actions += counted.actions;
  });
  if (read.errors.length > 0) throw new Error(`reading ${queue}'s histories: ${read.errors[0]}`);
  const byType: Record<string, HistoryTotals> = {};
  const total = zero();
  for (const [type, sum] of Object.entries(sums)) {
    const scale = sum.sampled === 0 ? 0 : sum.workflows / sum.sampled;
    const scaled = {
      workflows: sum.workflows,
      sampled: sum.sampled,
      events: Math.round(sum.events * scale),
      bytes: Math.round(sum.bytes * scale),
      workflowTasks: Math.round(sum.workflowTasks * scale),
      actions: Math.round(sum.actions * scale),
    };
    byType[type] = scaled;
    for (const key of Object.keys(total) as Array<keyof HistoryTotals>) total[key] += scaled[key];
  }
  return { ...total, byType };
}
