/**
 * Scenario 5, cost per expectation: the history one expectation writes from its raise to the close of its workflow,
 * plus its share of the routers (its key's router, and its subject's router when a fact on the subject was stored
 * there: both of the fixed set of long-lived fact routers), for each lifecycle, driven through a bridge as agents and
 * reporters drive it: events, bytes (the histories as the server serves them, protobuf), workflow tasks and Temporal
 * actions (bench/lib/history.ts). And a fact nobody waits on: its share of its key's and its subject's routers, which
 * is all it writes. Beside them, the raw Temporal workflows that do the least of the same: a signal that completes a
 * waiting workflow (satisfied), a timer followed by one activity (a lapse), and nothing for a fact nobody waits on.
 *
 * The bridge it raises through has a short fact retention and late window (PT2S, PT5S), so that every expectation
 * closes within the run; retention and late window only move the instant of the last timer, not what is written.
 */
import proto from '@temporalio/proto';
import { lapseOf } from '../../test/support/agent.js';
import { expectationWorkflowId, factRouterWorkflowId, subjectRouterWorkflowId } from '../../core/ids.js';
import type { Expectation, Subject } from '../../core/schemas/extension.js';
import { countEvents, eventsOf, runHistories, shareOfRuns } from '../lib/history.js';
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
  | 'withdrawn'
  | 'a fact nobody waits on';

export interface WorkflowCost {
  events: number;
  bytes: number;
  workflowTasks: number;
  actions: number;
}

export interface LifecycleCost {
  lifecycle: Lifecycle;
  samples: number;
  /** Mean per sample: the expectation's own workflow (none for a fact nobody waits on), its share of the routers, their sum. */
  expectation: WorkflowCost;
  /** The share of its key's router and, when another, of its subject's router (bench/lib/history.ts shareOfRuns). */
  routers: WorkflowCost;
  total: WorkflowCost;
  /** The raw workflow it is compared with, and total / raw for events and bytes (none against nothing). */
  raw: 'signal' | 'timer + activity' | 'nothing';
  ratios: { events?: number; bytes?: number };
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
  const counted = countEvents(eventsOf(history));
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

type History = proto.temporal.api.history.v1.IHistory;

/** The run's last workflow task completed: nothing the router was sent waits for a task. */
function idle(history: History): boolean {
  const { EventType } = proto.temporal.api.enums.v1;
  const tasks = [
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  ];
  const lastTask = (history.events ?? []).filter((event) => tasks.includes(event.eventType ?? 0)).at(-1);
  return lastTask?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;
}

/** The expectation left its router: its unsubscribe (sent as it closed) or the fact the router sent it is in the history. */
const left = (expectationWorkflow: string) => (history: History) =>
  (history.events ?? []).some(
    (event) =>
      (event.workflowExecutionSignaledEventAttributes?.signalName === 'unsubscribe' &&
        Buffer.from(event.workflowExecutionSignaledEventAttributes.input?.payloads?.[0]?.data ?? [])
          .toString()
          .includes(expectationWorkflow)) ||
      event.externalWorkflowExecutionSignaledEventAttributes?.workflowExecution?.workflowId === expectationWorkflow,
  );

/** The fact is stored in the router: a signal carrying its key is in the history. */
const stored = (factKey: string) => (history: History) =>
  (history.events ?? []).some((event) =>
    Buffer.from(event.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0]?.data ?? [])
      .toString()
      .includes(JSON.stringify(factKey)),
  );

/**
 * The share of the routers that concerns one expectation or fact (bench/lib/history.ts shareOfRuns, every run of each):
 * the routers serve many keys and never close, so the share is read once `done` holds for the key's router (the
 * expectation left it, or the fact is stored) and no task of any of them is pending. A subject router that is the
 * key's router is counted once.
 */
async function routersCostOf(
  stack: Stack,
  routers: { key: string; subject?: string },
  mentions: readonly string[],
  done: (history: History) => boolean,
): Promise<WorkflowCost> {
  const ids = [...new Set([routers.key, ...(routers.subject ? [routers.subject] : [])])];
  let histories: History[][] = [];
  await waitUntil(
    `${mentions.join(', ')} to be done with ${ids.join(' and ')}`,
    async () => {
      histories = await Promise.all(ids.map((id) => runHistories(stack.client, id)));
      // runHistories lists the current run first.
      return histories[0]!.some(done) && histories.every((runs) => idle(runs[0]!));
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  return histories
    .map((runs) => {
      const { count, bytes } = shareOfRuns(runs, mentions);
      return { events: count.events, bytes, workflowTasks: count.workflowTasks, actions: count.actions };
    })
    .reduce(add, zero());
}

const KEYS = ['events', 'bytes', 'workflowTasks', 'actions'] as const;
const zero = (): WorkflowCost => ({ events: 0, bytes: 0, workflowTasks: 0, actions: 0 });
const add = (a: WorkflowCost, b: WorkflowCost): WorkflowCost =>
  Object.fromEntries(KEYS.map((key) => [key, a[key] + b[key]])) as unknown as WorkflowCost;
/** The mean per sample, to a tenth. */
const mean = (costs: WorkflowCost[]): WorkflowCost => {
  const sum = costs.reduce(add, zero());
  const n = Math.max(costs.length, 1);
  return Object.fromEntries(KEYS.map((key) => [key, Number((sum[key] / n).toFixed(1))])) as unknown as WorkflowCost;
};

/** Done driving: every workflow of `expectation` closes by itself from here, and is then counted; or a fact alone. */
type Driven = { expectation: Expectation; factOnSubject: boolean } | { fact: { factKey: string; subject: Subject } };

export async function runCost(stack: Stack, samples: number): Promise<CostResult> {
  const bridge = await stack.openBridge(SETTINGS);
  const prefix = `${runPrefix}-cost`;
  let n = 0;
  const raise = async (expectations: Expectation[]) => {
    const task = `${prefix}-task-${n++}`;
    await postJson(`${bridge}/a2a/events`, stack.tokens.agent, artifactUpdate(expectations, task));
  };
  // As a feed sends facts: no wait, answered 'accepted' once the routers stored them.
  const store = (factKey: string, subject: Subject) =>
    postJson(`${bridge}/v1/facts`, stack.tokens.feed, {
      facts: [{ factKey, observedAt: new Date().toISOString(), subject }],
    });
  const report = (e: Expectation) => store(e.satisfiedBy.factKey, e.subject);
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
      return { expectation: e, factOnSubject: true };
    },
    'overdue, then a late fact': async (i) => {
      const e = fresh('late', i, secondsAhead(2), { grace: 'PT0S' });
      await raise([e]);
      await waitUntil('the overdue lapse to reach the agent', async () => lapsesOf(e) >= 1, {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      await report(e);
      return { expectation: e, factOnSubject: true };
    },
    'stalled, overdue, closed by its late window': async (i) => {
      const e = fresh('stall', i, secondsAhead(3), { grace: 'PT0S', horizon: secondsAhead(1) });
      await raise([e]);
      return { expectation: e, factOnSubject: false };
    },
    superseded: async (i) => {
      const e = fresh('old', i, secondsAhead(3600));
      await raise([e]);
      const replacement = { ...fresh('new', i, secondsAhead(7200)), subject: e.subject, supersedes: e.expectationId };
      await raise([replacement]);
      // The replacement is satisfied so that it closes too; its fact names the shared subject, not the old key.
      await report(replacement);
      return { expectation: e, factOnSubject: true };
    },
    withdrawn: async (i) => {
      const e = fresh('wd', i, secondsAhead(3600));
      await raise([e]);
      await postJson(`${bridge}/v1/expectations/${encodeURIComponent(e.expectationId)}/withdraw`, stack.tokens.agent, {
        reason: 'cancelled',
      });
      return { expectation: e, factOnSubject: false };
    },
    'a fact nobody waits on': async (i) => {
      const fact = {
        factKey: `shipment/${prefix}-nobody-${i}/scanned`,
        subject: { type: 'shipment', id: `${prefix}-nobody-S${i}` },
      };
      await store(fact.factKey, fact.subject);
      return { fact };
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

  const queue = stack.watcherQueue;
  const lifecycles: LifecycleCost[] = [];
  for (const [lifecycle, drive] of Object.entries(drivers) as Array<[Lifecycle, (i: number) => Promise<Driven>]>) {
    progress(`cost per expectation: ${lifecycle}, ${samples} sample(s)`);
    // Driven all at once, counted once every workflow has closed.
    const driven = await Promise.all(Array.from({ length: samples }, (_, i) => drive(i)));
    const per = { expectation: [] as WorkflowCost[], routers: [] as WorkflowCost[], total: [] as WorkflowCost[] };
    for (const sample of driven) {
      let x: WorkflowCost;
      let r: WorkflowCost;
      if ('fact' in sample) {
        const { factKey, subject } = sample.fact;
        x = zero();
        r = await routersCostOf(
          stack,
          { key: factRouterWorkflowId(factKey, queue), subject: subjectRouterWorkflowId(subject, queue) },
          [JSON.stringify(factKey)],
          stored(factKey),
        );
      } else {
        const e = sample.expectation;
        const self = expectationWorkflowId(e.expectationId);
        const factKey = factKeyOf(e.expectationId);
        [x, r] = await Promise.all([
          costOf(stack, self),
          routersCostOf(
            stack,
            {
              key: factRouterWorkflowId(factKey, queue),
              ...(sample.factOnSubject ? { subject: subjectRouterWorkflowId(e.subject, queue) } : {}),
            },
            [JSON.stringify(factKey), self],
            left(self),
          ),
        ]);
      }
      per.expectation.push(x);
      per.routers.push(r);
      per.total.push(add(x, r));
    }
    const total = mean(per.total);
    const rawKind: LifecycleCost['raw'] =
      lifecycle === 'a fact nobody waits on'
        ? 'nothing'
        : lifecycle === 'satisfied' || lifecycle === 'withdrawn' || lifecycle === 'superseded'
          ? 'signal'
          : 'timer + activity';
    const base = rawKind === 'signal' ? raw.signal : rawKind === 'timer + activity' ? raw.timerActivity : undefined;
    lifecycles.push({
      lifecycle,
      samples,
      expectation: mean(per.expectation),
      routers: mean(per.routers),
      total,
      raw: rawKind,
      ratios: base
        ? {
            events: Number((total.events / base.events).toFixed(2)),
            bytes: Number((total.bytes / base.bytes).toFixed(2)),
          }
        : {},
    });
    progress(
      `  ${lifecycle}: ${total.events} events, ${total.bytes} bytes, ${total.actions} actions` +
        (base
          ? ` (raw ${rawKind}: ${base.events} events, ${base.bytes} bytes, ${base.actions} actions)`
          : ' (raw: nothing)'),
    );
  }
  return { settings: SETTINGS, raw, lifecycles };
}
