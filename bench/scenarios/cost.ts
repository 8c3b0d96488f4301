/**
 * Scenario 5, cost per expectation: the history one expectation writes from its raise to the close of every
 * workflow it started (the expectation, its subject ledger) and its share of its fact router's, for each lifecycle, driven through a
 * bridge as agents and reporters drive it: events, bytes (the histories as the server serves them, protobuf), workflow
 * tasks and Temporal actions (bench/lib/history.ts). Beside it, the raw Temporal workflows that do the least of the
 * same: a signal that completes a waiting workflow (satisfied), and a timer followed by one activity (a lapse).
 *
 * The bridge it raises through has a short fact retention and late window (PT2S, PT5S), so that every ledger closes
 * within the run; retention and late window only move the instant of the last timer, not what is written.
 */
import proto from '@temporalio/proto';
import { lapseOf } from '../../test/support/agent.js';
import { expectationWorkflowId, factRouterWorkflowId, subjectLedgerWorkflowId } from '../../core/ids.js';
import type { Expectation } from '../../core/schemas/extension.js';
import { countEvents, eventsOf, shareOf } from '../lib/history.js';
import { postJson } from '../lib/load.js';
import { artifactUpdate, expectationFor, factKeyOf, instant, runPrefix } from '../lib/payloads.js';
import { progress, waitUntil } from '../lib/progress.js';
import type { Stack } from '../lib/stack.js';
import { goSignal } from '../baseline/workflows.js';

export type Lifecycle =
  | 'satisfied'
  | 'overdue, then a late fact'
  | 'stalled, overdue, closed by its late window'
  | 'superseded'
  | 'withdrawn';

export interface WorkflowCost {
  events: number;
  bytes: number;
  workflowTasks: number;
  actions: number;
}

export interface LifecycleCost {
  lifecycle: Lifecycle;
  samples: number;
  /** Mean per sample, each workflow and their sum. */
  expectation: WorkflowCost;
  factRouter: WorkflowCost;
  subjectLedger: WorkflowCost;
  total: WorkflowCost;
  /** The raw workflow it is compared with, and total / raw for events and bytes. */
  raw: 'signal' | 'timer + activity';
  ratios: { events: number; bytes: number };
}

export interface CostResult {
  settings: { factRetention: string; lateWindow: string };
  raw: { signal: WorkflowCost; timerActivity: WorkflowCost };
  lifecycles: LifecycleCost[];
}

const SETTINGS = { factRetention: 'PT2S', lateWindow: 'PT5S' };
const secondsAhead = (s: number) => instant(Date.now() + s * 1000 + 999);

/** Every run of the workflow's chain (continue-as-new included), once it has closed. */
async function costOf(stack: Stack, workflowId: string): Promise<WorkflowCost> {
  const handle = stack.client.workflow.getHandle(workflowId);
  await waitUntil(`${workflowId} to close`, async () => (await handle.describe()).status.name !== 'RUNNING', {
    timeoutMs: 180_000,
    intervalMs: 250,
  });
  const history = await handle.fetchHistory();
  const counted = countEvents(workflowId, eventsOf(history));
  if (history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes) {
    throw new Error(`${workflowId} continued as new during a cost sample: the figures would cover its last run only`);
  }
  return {
    events: counted.events,
    bytes: proto.temporal.api.history.v1.History.encode(history).finish().length,
    workflowTasks: counted.workflowTasks,
    actions: counted.actions,
  };
}

/**
 * The expectation's share of its fact router's history (bench/lib/history.ts shareOf): the router serves many keys
 * and never closes, so the share is read once the expectation has left it: its unsubscribe (sent as it closed) or the
 * fact the router sent it (after which the router drops it) is in the history, and no task of the router is pending.
 */
async function routerCostOf(
  stack: Stack,
  routerId: string,
  factKey: string,
  expectationWorkflow: string,
): Promise<WorkflowCost> {
  const handle = stack.client.workflow.getHandle(routerId);
  const left = (history: proto.temporal.api.history.v1.IHistory) => {
    const events = history.events ?? [];
    const { EventType } = proto.temporal.api.enums.v1;
    const tasks = [
      EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
      EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    ];
    const lastTask = events.filter((event) => tasks.includes(event.eventType ?? 0)).at(-1);
    const idle = lastTask?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;
    const gone = events.some(
      (event) =>
        (event.workflowExecutionSignaledEventAttributes?.signalName === 'unsubscribe' &&
          Buffer.from(event.workflowExecutionSignaledEventAttributes.input?.payloads?.[0]?.data ?? [])
            .toString()
            .includes(expectationWorkflow)) ||
        event.externalWorkflowExecutionSignaledEventAttributes?.workflowExecution?.workflowId === expectationWorkflow,
    );
    return idle && gone;
  };
  let history = await handle.fetchHistory();
  await waitUntil(
    `${expectationWorkflow} to leave ${routerId}`,
    async () => left((history = await handle.fetchHistory())),
    {
      timeoutMs: 60_000,
      intervalMs: 250,
    },
  );
  const { count, bytes } = shareOf(history, [JSON.stringify(factKey), expectationWorkflow]);
  return { events: count.events, bytes, workflowTasks: count.workflowTasks, actions: count.actions };
}

const zero = (): WorkflowCost => ({ events: 0, bytes: 0, workflowTasks: 0, actions: 0 });
const add = (a: WorkflowCost, b: WorkflowCost): WorkflowCost => ({
  events: a.events + b.events,
  bytes: a.bytes + b.bytes,
  workflowTasks: a.workflowTasks + b.workflowTasks,
  actions: a.actions + b.actions,
});
const mean = (costs: WorkflowCost[]): WorkflowCost => {
  const sum = costs.reduce(add, zero());
  const n = Math.max(costs.length, 1);
  const round = (v: number) => Number((v / n).toFixed(1));
  return {
    events: round(sum.events),
    bytes: round(sum.bytes),
    workflowTasks: round(sum.workflowTasks),
    actions: round(sum.actions),
  };
};

/** Done driving: every workflow of `expectation` closes by itself from here, and is then counted. */
interface Driven {
  expectation: Expectation;
}

export async function runCost(stack: Stack, samples: number): Promise<CostResult> {
  const bridge = await stack.openBridge(SETTINGS);
  const prefix = `${runPrefix}-cost`;
  let n = 0;
  const raise = async (expectations: Expectation[]) => {
    const task = `${prefix}-task-${n++}`;
    await postJson(`${bridge}/a2a/events`, stack.tokens.agent, artifactUpdate(expectations, task));
  };
  const report = (e: Expectation) =>
    postJson(`${bridge}/v1/facts`, stack.tokens.feed, {
      facts: [{ factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString(), subject: e.subject }],
    });
  const lapsesOf = (e: Expectation) =>
    stack.agent.received.filter((m) => lapseOf(m)?.expectationId === e.expectationId).length;
  const fresh = (name: string, i: number, dueAt: string, extra: Partial<Expectation> = {}): Expectation => ({
    ...expectationFor(`${prefix}-${name}-${i}`, `${prefix}-${name}-S${i}`, dueAt),
    ...extra,
  });

  const drivers: Record<Lifecycle, (i: number) => Promise<Driven>> = {
    satisfied: async (i) => {
      const e = fresh('sat', i, secondsAhead(3600));
      await raise([e]);
      await report(e);
      return { expectation: e };
    },
    'overdue, then a late fact': async (i) => {
      const e = fresh('late', i, secondsAhead(2), { grace: 'PT0S' });
      await raise([e]);
      await waitUntil('the overdue lapse to reach the agent', async () => lapsesOf(e) >= 1, {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      await report(e);
      return { expectation: e };
    },
    'stalled, overdue, closed by its late window': async (i) => {
      const e = fresh('stall', i, secondsAhead(3), { grace: 'PT0S', horizon: secondsAhead(1) });
      await raise([e]);
      return { expectation: e };
    },
    superseded: async (i) => {
      const e = fresh('old', i, secondsAhead(3600));
      await raise([e]);
      const replacement = { ...fresh('new', i, secondsAhead(7200)), subject: e.subject, supersedes: e.expectationId };
      await raise([replacement]);
      // The replacement shares the subject ledger; once it is satisfied that ledger closes too.
      await report(replacement);
      return { expectation: e };
    },
    withdrawn: async (i) => {
      const e = fresh('wd', i, secondsAhead(3600));
      await raise([e]);
      await postJson(`${bridge}/v1/expectations/${encodeURIComponent(e.expectationId)}/withdraw`, stack.tokens.agent, {
        reason: 'cancelled',
      });
      return { expectation: e };
    },
  };

  // The raw side: the least Temporal application for each outcome, on the same server.
  const rawSignal: WorkflowCost[] = [];
  const rawTimer: WorkflowCost[] = [];
  for (let i = 0; i < samples; i++) {
    const signalled = await stack.client.workflow.start('signalWorkflow', {
      workflowId: `${prefix}-raw-signal-${i}`,
      taskQueue: stack.baselineQueue,
      args: [],
    });
    await signalled.signal(goSignal);
    rawSignal.push(await costOf(stack, signalled.workflowId));
    const timed = await stack.client.workflow.start('timerWorkflow', {
      workflowId: `${prefix}-raw-timer-${i}`,
      taskQueue: stack.baselineQueue,
      args: [`${prefix}-raw-timer-${i}`, Date.now() + 1_000],
    });
    rawTimer.push(await costOf(stack, timed.workflowId));
  }
  const raw = { signal: mean(rawSignal), timerActivity: mean(rawTimer) };

  const lifecycles: LifecycleCost[] = [];
  for (const [lifecycle, drive] of Object.entries(drivers) as Array<[Lifecycle, (i: number) => Promise<Driven>]>) {
    progress(`cost per expectation: ${lifecycle}, ${samples} sample(s)`);
    // Driven all at once, counted once every workflow has closed.
    const driven = await Promise.all(Array.from({ length: samples }, (_, i) => drive(i)));
    const per = {
      expectation: [] as WorkflowCost[],
      factRouter: [] as WorkflowCost[],
      subjectLedger: [] as WorkflowCost[],
      total: [] as WorkflowCost[],
    };
    for (const { expectation: e } of driven) {
      const [x, f, s] = await Promise.all([
        costOf(stack, expectationWorkflowId(e.expectationId)),
        routerCostOf(
          stack,
          factRouterWorkflowId(factKeyOf(e.expectationId), stack.watcherQueue),
          factKeyOf(e.expectationId),
          expectationWorkflowId(e.expectationId),
        ),
        costOf(stack, subjectLedgerWorkflowId(e.subject)),
      ]);
      per.expectation.push(x);
      per.factRouter.push(f);
      per.subjectLedger.push(s);
      per.total.push(add(add(x, f), s));
    }
    const total = mean(per.total);
    const rawKind =
      lifecycle === 'satisfied' || lifecycle === 'withdrawn' || lifecycle === 'superseded'
        ? 'signal'
        : 'timer + activity';
    const base = rawKind === 'signal' ? raw.signal : raw.timerActivity;
    lifecycles.push({
      lifecycle,
      samples,
      expectation: mean(per.expectation),
      factRouter: mean(per.factRouter),
      subjectLedger: mean(per.subjectLedger),
      total,
      raw: rawKind,
      ratios: {
        events: Number((total.events / base.events).toFixed(2)),
        bytes: Number((total.bytes / base.bytes).toFixed(2)),
      },
    });
    progress(
      `  ${lifecycle}: ${total.events} events, ${total.bytes} bytes, ${total.actions} actions (raw ${rawKind}: ${base.events} events, ${base.bytes} bytes)`,
    );
  }
  return { settings: SETTINGS, raw, lifecycles };
}
