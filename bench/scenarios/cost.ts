/**
 * Scenario 5, cost per lifecycle (BENCHMARKS.md, "What is measured"): what one expectation writes from raise to close,
 * with its share of the routers, beside the raw workflows that do the least of the same. The bridge's short fact
 * retention and late window close every expectation within the run: they move the last timer, not what is written.
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

export interface WorkflowCost {
  events: number;
  bytes: number;
  workflowTasks: number;
  actions: number;
}

type RawKind = 'signal' | 'timer + activity' | 'nothing';

/** Means per sample; the raw workflow compared with, and total / raw for events and bytes (none against nothing). */
interface LifecycleCost {
  lifecycle: string;
  samples: number;
  expectation: WorkflowCost;
  routers: WorkflowCost;
  total: WorkflowCost;
  raw: RawKind;
  ratios: { events?: number; bytes?: number };
}

export interface CostResult {
  settings: { factRetention: string; lateWindow: string };
  raw: { signal: WorkflowCost; timerActivity: WorkflowCost };
  lifecycles: LifecycleCost[];
}

const SETTINGS = { factRetention: 'PT2S', lateWindow: 'PT5S' };
const secondsAhead = (s: number) => instant(Date.now() + s * 1000 + 999);
type History = proto.temporal.api.history.v1.IHistory;

const KEYS = ['events', 'bytes', 'workflowTasks', 'actions'] as const;
const zero = (): WorkflowCost => ({ events: 0, bytes: 0, workflowTasks: 0, actions: 0 });
const add = (a: WorkflowCost, b: WorkflowCost): WorkflowCost =>
  Object.fromEntries(KEYS.map((key) => [key, a[key] + b[key]])) as unknown as WorkflowCost;
/** The mean per sample, to a tenth. */
const mean = (costs: WorkflowCost[]): WorkflowCost => {
  const sum = costs.reduce(add, zero());
  return Object.fromEntries(
    KEYS.map((key) => [key, Number((sum[key] / costs.length).toFixed(1))]),
  ) as unknown as WorkflowCost;
};

/** Every event of the workflow's history once it has closed (a run continued as new would be half of it). */
async function costOf(stack: Stack, workflowId: string): Promise<WorkflowCost> {
  const handle = stack.client.workflow.getHandle(workflowId);
  const closed = async () => (await handle.describe()).status.name !== 'RUNNING';
  await waitUntil(`${workflowId} to close`, closed, { timeoutMs: 180_000, intervalMs: 250 });
  const history = await handle.fetchHistory();
  if (history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes) {
    throw new Error(`${workflowId} continued as new during a cost sample: the figures would cover its last run only`);
  }
  const bytes = proto.temporal.api.history.v1.History.encode(history).finish().length;
  return { ...countEvents(eventsOf(history)), bytes };
}

/** The run's last workflow task completed: nothing the router was sent waits for a task. */
const idle = (history: History) =>
  eventsOf(history)
    .filter((event) => event.type.startsWith('EVENT_TYPE_WORKFLOW_TASK_'))
    .at(-1)?.type === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED';

/** The first payload of a signal in the history names `text`. */
const signalled = (history: History, name: string | undefined, text: string) =>
  (history.events ?? []).some((event) => {
    const signal = event.workflowExecutionSignaledEventAttributes;
    const payload = Buffer.from(signal?.input?.payloads?.[0]?.data ?? []).toString();
    return signal && (name === undefined || signal.signalName === name) && payload.includes(text);
  });

/** The expectation left its router: its unsubscribe (sent as it closed), or the fact the router sent it. */
const left = (expectationWorkflow: string) => (history: History) =>
  signalled(history, 'unsubscribe', expectationWorkflow) ||
  (history.events ?? []).some(
    (event) =>
      event.externalWorkflowExecutionSignaledEventAttributes?.workflowExecution?.workflowId === expectationWorkflow,
  );

/**
 * The share of the routers that concerns one expectation or fact (bench/lib/history.ts shareOfRuns, every run of
 * each), read once `done` holds for the key's router and no task of any of them is pending; a subject's router that
 * is the key's is counted once.
 */
async function routersCostOf(
  stack: Stack,
  routers: { key: string; subject?: string },
  mentions: readonly string[],
  done: (history: History) => boolean,
): Promise<WorkflowCost> {
  const ids = [...new Set([routers.key, ...(routers.subject ? [routers.subject] : [])])];
  let histories: History[][] = [];
  const ready = async () => {
    histories = await Promise.all(ids.map((id) => runHistories(stack.client, id)));
    // runHistories lists the current run first.
    return histories[0]!.some(done) && histories.every((runs) => idle(runs[0]!));
  };
  await waitUntil(`${mentions.join(', ')} to be done with ${ids.join(' and ')}`, ready, {
    timeoutMs: 60_000,
    intervalMs: 250,
  });
  const shares = histories.map((runs) => shareOfRuns(runs, mentions));
  return shares.map(({ count, bytes }) => ({ ...count, bytes })).reduce(add, zero());
}

/** Done driving: every workflow of `expectation` closes by itself from here, and is then counted; or a fact alone. */
type Driven = { expectation: Expectation; factOnSubject: boolean } | { fact: { factKey: string; subject: Subject } };

export async function runCost(stack: Stack, samples: number): Promise<CostResult> {
  const bridge = await stack.openBridge(SETTINGS);
  const prefix = `${runPrefix}-cost`;
  const queue = stack.watcherQueue;
  let n = 0;
  const raise = (expectations: Expectation[]) =>
    postJson(`${bridge}/a2a/events`, stack.tokens.agent, artifactUpdate(expectations, `${prefix}-task-${n++}`));
  // As a feed sends facts: no wait, answered 'accepted' once the routers stored them.
  const store = (factKey: string, subject: Subject) =>
    postJson(`${bridge}/v1/facts`, stack.tokens.feed, {
      facts: [{ factKey, observedAt: new Date().toISOString(), subject }],
    });
  const report = (e: Expectation) => store(e.satisfiedBy.factKey, e.subject);
  const fresh = (name: string, i: number, dueAt: string, extra: Partial<Expectation> = {}): Expectation => ({
    ...expectationFor(`${prefix}-${name}-${i}`, `${prefix}-${name}-S${i}`, dueAt),
    ...extra,
  });

  const drivers: Record<string, (i: number) => Promise<Driven>> = {
    satisfied: async (i) => {
      const e = fresh('sat', i, secondsAhead(3600));
      await raise([e]);
      await report(e);
      return { expectation: e, factOnSubject: true };
    },
    'overdue, then a late fact': async (i) => {
      const e = fresh('late', i, secondsAhead(2), { grace: 'PT0S' });
      await raise([e]);
      const lapsed = () => stack.agent.received.some((m) => lapseOf(m)?.expectationId === e.expectationId);
      await waitUntil('the overdue lapse to reach the agent', lapsed, { timeoutMs: 60_000, intervalMs: 100 });
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
      const url = `${bridge}/v1/expectations/${encodeURIComponent(e.expectationId)}/withdraw`;
      await postJson(url, stack.tokens.agent, { reason: 'cancelled' });
      return { expectation: e, factOnSubject: false };
    },
    'a fact nobody waits on': async (i) => {
      const subject = { type: 'shipment', id: `${prefix}-nobody-S${i}` };
      const fact = { factKey: `shipment/${prefix}-nobody-${i}/scanned`, subject };
      await store(fact.factKey, subject);
      return { fact };
    },
  };

  // The raw side: the least Temporal application for each outcome, on the same server.
  const rawSignal: WorkflowCost[] = [];
  const rawTimer: WorkflowCost[] = [];
  const start = (type: string, workflowId: string, args: unknown[]) =>
    stack.client.workflow.start(type, { workflowId, taskQueue: stack.baselineQueue, args });
  for (let i = 0; i < samples; i++) {
    const signalled = await start('signalWorkflow', `${prefix}-raw-signal-${i}`, []);
    await signalled.signal(goSignal);
    rawSignal.push(await costOf(stack, signalled.workflowId));
    const timerId = `${prefix}-raw-timer-${i}`;
    await start('timerWorkflow', timerId, [timerId, Date.now() + 1_000]);
    rawTimer.push(await costOf(stack, timerId));
  }
  const raw = { signal: mean(rawSignal), timerActivity: mean(rawTimer) };

  const lifecycles: LifecycleCost[] = [];
  for (const [lifecycle, drive] of Object.entries(drivers)) {
    progress(`cost per expectation: ${lifecycle}, ${samples} sample(s)`);
    // Driven all at once, counted once every workflow has closed.
    const driven = await Promise.all(Array.from({ length: samples }, (_, i) => drive(i)));
    const per = { expectation: [] as WorkflowCost[], routers: [] as WorkflowCost[], total: [] as WorkflowCost[] };
    for (const sample of driven) {
      let x = zero();
      let r: WorkflowCost;
      if ('fact' in sample) {
        const { factKey, subject } = sample.fact;
        const routers = { key: factRouterWorkflowId(factKey, queue), subject: subjectRouterWorkflowId(subject, queue) };
        const stored = (history: History) => signalled(history, undefined, JSON.stringify(factKey));
        r = await routersCostOf(stack, routers, [JSON.stringify(factKey)], stored);
      } else {
        const e = sample.expectation;
        const self = expectationWorkflowId(e.expectationId);
        const factKey = factKeyOf(e.expectationId);
        const subject = sample.factOnSubject ? { subject: subjectRouterWorkflowId(e.subject, queue) } : {};
        const routers = { key: factRouterWorkflowId(factKey, queue), ...subject };
        [x, r] = await Promise.all([
          costOf(stack, self),
          routersCostOf(stack, routers, [JSON.stringify(factKey), self], left(self)),
        ]);
      }
      per.expectation.push(x);
      per.routers.push(r);
      per.total.push(add(x, r));
    }
    const total = mean(per.total);
    const rawKind: RawKind =
      lifecycle === 'a fact nobody waits on'
        ? 'nothing'
        : lifecycle === 'satisfied' || lifecycle === 'withdrawn' || lifecycle === 'superseded'
          ? 'signal'
          : 'timer + activity';
    const base = rawKind === 'signal' ? raw.signal : rawKind === 'timer + activity' ? raw.timerActivity : undefined;
    const ratio = (key: 'events' | 'bytes') => Number((total[key] / base![key]).toFixed(2));
    lifecycles.push({
      lifecycle,
      samples,
      expectation: mean(per.expectation),
      routers: mean(per.routers),
      total,
      raw: rawKind,
      ratios: base ? { events: ratio('events'), bytes: ratio('bytes') } : {},
    });
    const said = (c: WorkflowCost) => `${c.events} events, ${c.bytes} bytes, ${c.actions} actions`;
    progress(`  ${lifecycle}: ${said(total)} (raw ${base ? `${rawKind}: ${said(base)}` : 'nothing'})`);
  }
  return { settings: SETTINGS, raw, lifecycles };
}
