/**
 * Scenario 7, traffic: an open loop at a ramp of offered rates (raises a second, with ten facts to each raise; see
 * bench/lib/traffic-plan.ts for the mix), through the bridge's HTTP API only, from several real A2A agents and a
 * fact feed, to find the knee: the highest offered rate at which accepted ≈ offered with no 503. Beside it, raw
 * Temporal on the same server doing the least for the same traffic (one `deadlineWorkflow` start per expectation,
 * one signal per expectation an expected fact satisfies, nothing for unexpected facts), step by step at the same
 * rates, ours first, then raw. Past the given rates, the ramp goes on doubling the rate for each side that has not
 * yet missed (up to `maxRate`), so that both knees are found, raw's too. Per step and side: offered, accepted and
 * settled rates, answers by status, lost requests, answer time, lapses caused by the backlog
 * (bench/lib/traffic-lapses.ts) and their lateness, actions and history bytes per offered item (the events every
 * workflow of the side's task queue wrote during the step, long-lived routers included, by event time), and the CPU
 * of worker, bridge, server and the load generator per offered item.
 */
import os from 'node:os';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { lapseOf } from '../../test/support/agent.js';
import { shardOf } from '../../core/fact-shards.js';
import { isTemporalUnreachable, temporalBusyReason } from '../../src/service/temporal-call.js';
import { factSignal, goSignal } from '../baseline/workflows.js';
import { backlogOf, drainedAt } from '../lib/backlog.js';
import { historyInWindow, type WindowTotals } from '../lib/history.js';
import { runPool } from '../lib/load.js';
import { runOpenLoop, retryAfterMs, type AnswerClass, type Attempt, type OpenLoopResult } from '../lib/open-loop.js';
import { artifactUpdate, expectationFor, factKeyOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { summarise, type Summary } from '../lib/stats.js';
import {
  judgeOurLapses,
  judgeRawLapses,
  sendsOf,
  type LapseKind,
  type LapseReport,
  type ObservedLapse,
} from '../lib/traffic-lapses.js';
import { feedOnly, planStep, type StepPlan, type TrafficMix, type TrafficRequest } from '../lib/traffic-plan.js';
import type { TrafficRig } from '../lib/traffic-rig.js';
import type { WorkerBounds } from '../lib/watcher-processes.js';

export interface TrafficOptions {
  /** Offered raises a second, one step each, in order: both sides at each. */
  rates: number[];
  /**
   * Past `rates`, the rate doubles for each side that has not missed yet (accepted < 95 % of offered, a 429 or 503,
   * a lost request) while it stays at most this: a side unbroken here has its knee at or above the ramp's top.
   */
  maxRate: number;
  stepMs: number;
  /** How long a step's outstanding requests may take after its schedule. */
  tailMs: number;
  /** How long to wait after the tail for the side's task queues to drain ("settled"). */
  settleMs: number;
  /** How long to wait at the end for the lapses still due. */
  lapseWaitMs: number;
  /** Histories read per step and side (the rest is scaled). */
  historyCap: number;
  maxAttempts: number;
  attemptTimeoutMs: number;
  /**
   * Facts only, no raises (`--traffic-feed-only`): the watcher stores every fact in its routers; raw, which otherwise
   * stores only the facts an expectation waits on, signals-with-start one of as many `factStoreWorkflow`s per fact.
   */
  feedOnly: boolean;
}

export type Side = 'ours' | 'raw';

export interface TrafficStep {
  side: Side;
  rate: number;
  mix: TrafficMix;
  offeredPerSec: { raises: number; facts: number; items: number };
  acceptedPerSec: number;
  /** Undefined when the side's task queues did not drain within the settle wait. */
  settledPerSec?: number;
  answers: Record<AnswerClass, number>;
  lostRequests: number;
  lostItems: number;
  /** Lost requests still unanswered when the tail ended; the others were refused on every attempt. */
  abandonedRequests: number;
  /** First send → 200, resends included, of requests that made a call (raw: fact requests with no expected fact make none). */
  answerMs: Summary;
  /** The task backlog of this side's queues and of the other's when the step started (left from the step before). */
  backlogAtStart?: number;
  otherBacklogAtStart?: number;
  lapses: LapseReport;
  /** What the side's workflows wrote during the step (by event time), and per workflow type. */
  history: WindowTotals;
  perItem: { actions: number; bytes: number; events: number };
  /** CPU per offered item, ms, over the step (start → settled or the end of the settle wait). */
  cpuMsPerItem: { worker: number; bridge?: number; server?: number; database?: number; load: number };
  /** The server's CPU over the step per fact stored (in a request answered 200), ms. */
  serverCpuMsPerStoredFact?: number;
  /** The machine's 1-minute load average at the step's start and end: other work on it shows here. */
  loadAverage: { start: number; end: number };
}

export interface TrafficResult {
  options: TrafficOptions;
  agents: number;
  /** Each rate of the ramp; past the given rates only the sides that had not missed yet ran. */
  steps: Array<{ rate: number; ours?: TrafficStep; raw?: TrafficStep }>;
  /** Highest offered rate with accepted ≥ 95 % of offered items, no 429 or 503 and nothing lost; undefined: none. */
  knee: { ours?: number; raw?: number };
  /** The lowest offered rate the side missed at; undefined: it never did, up to the ramp's top. */
  firstMiss: { ours?: number; raw?: number };
  /** Both workers' NODE_OPTIONS and the heap limit and workflow cache each reported: the same for both. */
  workers: { nodeOptions: string; ours: WorkerBounds; raw: WorkerBounds };
  /** Records read at the end for the lapses they list, and reads that failed. */
  recordsRead: number;
  recordErrors: number;
}

/** One step run: its figures so far, and what judging its lapses and reading its histories needs at the end. */
interface StepRun {
  /** The ramp's step: both sides' runs at one rate share it. */
  index: number;
  plan: StepPlan;
  t0: number;
  loop: OpenLoopResult<TrafficRequest>;
  step: Omit<TrafficStep, 'lapses' | 'history' | 'perItem'>;
}

const ACCEPTED_SHARE = 0.95;

/** The items (expectations, facts) of a request. */
const itemsOf = (request: TrafficRequest) =>
  request.kind === 'raise' ? request.expectations.length : request.facts.length;

/** Sends to the bridge: raises from the agent's token, facts from the feed's. */
function oursSender(rig: TrafficRig) {
  return async (request: TrafficRequest, signal: AbortSignal): Promise<Attempt> => {
    let url: string;
    let token: string;
    let body: unknown;
    if (request.kind === 'raise') {
      url = `${rig.bridgeUrl}/a2a/events`;
      token = rig.agentTokens[request.agent]!;
      body = artifactUpdate(
        request.expectations.map((p) => p.expectation),
        request.taskId,
      );
    } else {
      request.observedAt ??= new Date().toISOString();
      const observedAt = request.observedAt;
      url = `${rig.bridgeUrl}/v1/facts`;
      token = rig.feedToken;
      body = { facts: request.facts.map((fact) => ({ ...fact, observedAt })) };
    }
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
    const text = await response.text();
    if (response.status === 200) return { answer: '200' };
    if (response.status === 429 || response.status === 503) {
      return {
        answer: String(response.status) as '429' | '503',
        retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
        detail: `HTTP ${response.status} after ${response.headers.get('retry-after') ?? '?'} s: ${text}`,
      };
    }
    return { answer: 'other', detail: `HTTP ${response.status}: ${text}` };
  };
}

/**
 * The least raw Temporal does for the same request: a start per expectation, a signal per expectation a fact
 * satisfies, nothing for a fact nobody waits on; feed only, a signal-with-start per fact to the store of its key's shard.
 */
function rawSender(rig: TrafficRig, plan: StepPlan, feed: boolean) {
  const store = (factKey: string) =>
    rig.client.workflow.signalWithStart('factStoreWorkflow', {
      workflowId: `${rig.rawQueue}-facts-${shardOf(factKey)}`,
      taskQueue: rig.rawQueue,
      signal: factSignal,
      signalArgs: [factKey],
    });
  return async (request: TrafficRequest, signal: AbortSignal): Promise<Attempt> => {
    const calls: Array<() => Promise<unknown>> =
      request.kind === 'facts' && feed
        ? request.facts.map((fact) => () => store(fact.factKey))
        : request.kind === 'raise'
          ? request.expectations.map(
              (p) => () =>
                rig.client.workflow
                  .start('deadlineWorkflow', {
                    workflowId: p.expectation.expectationId,
                    taskQueue: rig.rawQueue,
                    args: [p.expectation.expectationId, p.rawDeadlineMs],
                  })
                  .catch((error: unknown) => {
                    // A resend of a start that went through.
                    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
                  }),
            )
          : request.facts
              .flatMap((fact) => plan.waiting.get(fact.factKey) ?? [])
              .map(
                (id) => () =>
                  rig.client.workflow
                    .getHandle(id)
                    .signal(goSignal)
                    .catch((error: unknown) => {
                      // Closed already (satisfied or lapsed): the fact is a no-op, as for ours.
                      if (!(error instanceof WorkflowNotFoundError)) throw error;
                    }),
              );
    if (calls.length === 0) return { answer: '200', calls: 0 };
    try {
      await rig.client.withAbortSignal(signal, () => Promise.all(calls.map((call) => call())));
      return { answer: '200', calls: calls.length };
    } catch (error) {
      // Classed as the bridge classes Temporal's errors: RESOURCE_EXHAUSTED is raw's 503; unreachable, no answer.
      if (temporalBusyReason(error) !== undefined) return { answer: '503', retryAfterMs: 1_000, calls: calls.length };
      if (isTemporalUnreachable(error)) return { answer: 'none', calls: calls.length };
      return { answer: 'other', detail: error instanceof Error ? error.message : String(error), calls: calls.length };
    }
  };
}

/** CPU so far (ms) of the processes a side is measured by. */
function cpuNow(rig: TrafficRig, side: Side) {
  const usage = process.cpuUsage();
  return {
    worker: cpuMs(side === 'ours' ? rig.pids.worker : rig.pids.rawWorker),
    bridge: side === 'ours' ? cpuMs(rig.pids.bridge) : undefined,
    server:
      rig.server.serverPids().length > 0
        ? rig.server.serverPids().reduce((sum, pid) => sum + cpuMs(pid), 0)
        : undefined,
    database: rig.server.databaseCpuMs?.(),
    load: (usage.user + usage.system) / 1000,
  };
}

const perItem = (before: number | undefined, after: number | undefined, items: number) =>
  before === undefined || after === undefined ? undefined : Number(((after - before) / Math.max(items, 1)).toFixed(2));

async function runStep(
  rig: TrafficRig,
  side: Side,
  rate: number,
  index: number,
  options: TrafficOptions,
): Promise<StepRun> {
  const queue = side === 'ours' ? rig.watcherQueue : rig.rawQueue;
  const client = rig.client;
  const namespace = rig.server.namespace;
  const backlogAtStart = await backlogOf(client, namespace, queue);
  const otherBacklogAtStart = await backlogOf(client, namespace, side === 'ours' ? rig.rawQueue : rig.watcherQueue);
  const t0 = Date.now() + 1_000;
  const planned = planStep({
    prefix: `${runPrefix}-t${index}${side === 'raw' ? '-raw' : ''}`,
    ratePerSec: rate,
    durationMs: options.stepMs,
    t0,
    seed: 1_000 + index,
    agents: rig.agents.length,
  });
  const plan = options.feedOnly ? feedOnly(planned) : planned;
  progress(
    `traffic: ${side} at ${rate} raises/s for ${options.stepMs / 1000} s: ${plan.mix.raises} expectations in ${plan.mix.raiseRequests} requests, ${plan.mix.facts} facts in ${plan.mix.factRequests}` +
      (backlogAtStart || otherBacklogAtStart
        ? ` (backlog at start: ${backlogAtStart} here, ${otherBacklogAtStart} on the other side's queue)`
        : ''),
  );
  await delay(Math.max(0, t0 - Date.now()));
  const cpu0 = cpuNow(rig, side);
  const loadAtStart = os.loadavg()[0]!;
  const send = side === 'ours' ? oursSender(rig) : rawSender(rig, plan, options.feedOnly);
  const loop = await runOpenLoop(plan.requests, send, {
    t0,
    durationMs: options.stepMs,
    tailMs: options.tailMs,
    maxAttempts: options.maxAttempts,
    attemptTimeoutMs: options.attemptTimeoutMs,
  });
  // Settled: every answer in, and the side's queues drained (twice in a row).
  const { at: settledAt, backlog } = await drainedAt(client, namespace, queue, { timeoutMs: options.settleMs });
  const cpu1 = cpuNow(rig, side);
  const loadAverage = { start: Number(loadAtStart.toFixed(2)), end: Number(os.loadavg()[0]!.toFixed(2)) };
  const items = plan.mix.raises + plan.mix.facts;
  const cpu = {
    worker: perItem(cpu0.worker, cpu1.worker, items)!,
    bridge: perItem(cpu0.bridge, cpu1.bridge, items),
    server: perItem(cpu0.server, cpu1.server, items),
    database: perItem(cpu0.database, cpu1.database, items),
    load: perItem(cpu0.load, cpu1.load, items)!,
  };
  const stored = loop.sent.reduce(
    (sum, s) => sum + (s.answeredAt && s.request.kind === 'facts' ? s.request.facts.length : 0),
    0,
  );
  progress(
    `  ${side} at ${rate}/s: ${loop.answers['200']}/${loop.sent.length} requests answered 200, ${loop.answers['503']} × 503, ${loop.answers['429']} × 429, ${loop.answers.other} other, ${loop.answers.none} unanswered attempts, ${loop.lost} lost (${loop.abandoned} at the tail's end); last answer ${((loop.lastAnswerAt - t0) / 1000).toFixed(1)} s, ` +
      (settledAt ? `settled at ${((settledAt - t0) / 1000).toFixed(1)} s` : `not settled (backlog ${backlog})`),
  );
  if (loop.details.length > 0) progress(`  first other answer: ${loop.details[0]}`);
  if (loop.refusals.length > 0) progress(`  first refusal: ${loop.refusals[0]}`);
  const seconds = options.stepMs / 1000;
  const answered = loop.sent.filter((s) => s.answeredAt !== undefined);
  const lost = loop.sent.filter((s) => s.answeredAt === undefined);
  const accepted = answered.reduce((sum, s) => sum + itemsOf(s.request), 0);
  const settledMs = settledAt === undefined ? undefined : Math.max(settledAt, loop.lastAnswerAt) - t0;
  // Over the step, or until its last 200 (or its queues drained) when later.
  const perSec = (n: number, ms: number) => Number((n / (Math.max(ms, options.stepMs) / 1000)).toFixed(1));
  const step: StepRun['step'] = {
    side,
    rate,
    mix: plan.mix,
    offeredPerSec: {
      raises: Number((plan.mix.raises / seconds).toFixed(1)),
      facts: Number((plan.mix.facts / seconds).toFixed(1)),
      items: Number((items / seconds).toFixed(1)),
    },
    acceptedPerSec: perSec(accepted, loop.lastAnswerAt - t0),
    settledPerSec: settledMs === undefined ? undefined : perSec(accepted, settledMs),
    answers: loop.answers,
    lostRequests: lost.length,
    lostItems: lost.reduce((sum, s) => sum + itemsOf(s.request), 0),
    abandonedRequests: loop.abandoned,
    answerMs: summarise(
      answered.filter((s) => s.calls > 0).map((s) => s.answeredAt! - s.sentAt),
      0,
    ),
    backlogAtStart,
    otherBacklogAtStart,
    cpuMsPerItem: cpu,
    serverCpuMsPerStoredFact: perItem(cpu0.server, cpu1.server, stored),
    loadAverage,
  };
  return { index, plan, t0, loop, step };
}

/** The side took what the step offered: accepted ≥ 95 % of offered items, no 429 or 503, nothing lost. */
function kept(step: Pick<TrafficStep, 'acceptedPerSec' | 'offeredPerSec' | 'answers' | 'lostRequests'>): boolean {
  return (
    step.acceptedPerSec >= ACCEPTED_SHARE * step.offeredPerSec.items &&
    step.answers['503'] === 0 &&
    step.answers['429'] === 0 &&
    step.lostRequests === 0
  );
}

/** The fields of a lapse the judging reads. */
const pick = (l: ObservedLapse): ObservedLapse => ({
  expectationId: l.expectationId,
  lapse: l.lapse as LapseKind,
  dueAt: l.dueAt,
  lapsedAt: l.lapsedAt,
  ...(l.satisfiedAfter ? { satisfiedAfter: l.satisfiedAfter } : {}),
});

/** The lapses the agents received of this run's traffic, and those the records of lapse-capable expectations list. */
async function observedLapses(
  rig: TrafficRig,
  runs: StepRun[],
): Promise<{ lapses: ObservedLapse[]; read: number; errors: number }> {
  const byKey = new Map<string, ObservedLapse>();
  const keyOf = (l: { expectationId: string; lapse: string; dueAt: string }) =>
    `${l.expectationId}|${l.lapse}|${l.dueAt}`;
  for (const agent of rig.agents) {
    for (const received of agent.received) {
      const lapse = lapseOf(received) as ObservedLapse | undefined;
      if (!lapse?.expectationId?.startsWith(`${runPrefix}-t`)) continue;
      byKey.set(keyOf(lapse), { ...pick(lapse), receivedAt: received.receivedAt.getTime() });
    }
  }
  const ids = runs
    .filter((run) => run.step.side === 'ours')
    .flatMap((run) =>
      [...run.plan.expectations.values()]
        .filter((p) => p.deadlineMs !== undefined || p.expectation.horizon)
        .map((p) => p.expectation.expectationId),
    );
  let read = 0;
  const pool = await runPool(
    ids.length,
    8,
    async (i) => {
      const response = await fetch(`${rig.bridgeUrl}/v1/expectations/${encodeURIComponent(ids[i]!)}`, {
        headers: { authorization: `Bearer ${rig.feedToken}` },
        signal: AbortSignal.timeout(15_000),
      });
      if (response.status === 404) return; // never raised (its raise was lost)
      if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
      read++;
      const record = (await response.json()) as { lapses?: Array<{ lapse: ObservedLapse }> };
      for (const entry of record.lapses ?? []) {
        if (!byKey.has(keyOf(entry.lapse))) byKey.set(keyOf(entry.lapse), pick(entry.lapse));
      }
    },
    { maxErrors: Infinity },
  );
  return { lapses: [...byKey.values()], read, errors: pool.errors.length };
}

/** The step's report, once the run is over: its lapses, and what its side's workflows wrote in its window. */
async function reportStep(
  rig: TrafficRig,
  run: StepRun,
  lapses: LapseReport,
  window: { start: number; end: number },
  options: TrafficOptions,
): Promise<TrafficStep> {
  const { side, rate, mix } = run.step;
  const items = mix.raises + mix.facts;
  progress(`  traffic: reading what ${side}'s workflows wrote during its step at ${rate}/s`);
  // By event time: the routers are long-lived and serve every step, so each step counts the events written in it.
  const history = await historyInWindow(rig.client, side === 'ours' ? rig.watcherQueue : rig.rawQueue, window, {
    cap: options.historyCap,
    readAll: ['factRouterWorkflow', 'factStoreWorkflow'],
  });
  return {
    ...run.step,
    lapses,
    history,
    perItem: {
      actions: Number((history.actions / items).toFixed(2)),
      bytes: Math.round(history.bytes / items),
      events: Number((history.events / items).toFixed(2)),
    },
  };
}

/** The knee: the highest offered rate at which the side took what was offered (`took`); or the lowest it missed at. */
function rateWhere(steps: TrafficStep[], took: boolean): number | undefined {
  const rates = steps.filter((s) => kept(s) === took).map((s) => s.rate);
  return rates.length === 0 ? undefined : took ? Math.max(...rates) : Math.min(...rates);
}

/** One raise and one fact through the bridge from each agent (the cards fetched), one raw start and signal. */
async function warmUp(rig: TrafficRig): Promise<void> {
  const dueAt = monthsAhead();
  const ours = oursSender(rig);
  for (let agent = 0; agent < rig.agents.length; agent++) {
    const id = `${runPrefix}-twarm-${agent}`;
    const raised = await ours(
      {
        kind: 'raise',
        atMs: 0,
        agent,
        taskId: `${id}-task`,
        expectations: [{ expectation: expectationFor(id, `${id}-S`, dueAt), graceMs: 0, rawDeadlineMs: 0 }],
      },
      AbortSignal.timeout(60_000),
    );
    if (raised.answer !== '200')
      throw new Error(`traffic: the warm-up raise was answered ${raised.answer}: ${raised.detail ?? ''}`);
    const fact = await ours(
      { kind: 'facts', atMs: 0, facts: [{ factKey: factKeyOf(id) }] },
      AbortSignal.timeout(60_000),
    );
    if (fact.answer !== '200')
      throw new Error(`traffic: the warm-up fact was answered ${fact.answer}: ${fact.detail ?? ''}`);
  }
  const id = `${runPrefix}-twarm-raw`;
  const handle = await rig.client.workflow.start('deadlineWorkflow', {
    workflowId: id,
    taskQueue: rig.rawQueue,
    args: [id, Date.parse(dueAt)],
  });
  await handle.signal(goSignal);
  await handle.result();
}

export async function runTraffic(rig: TrafficRig, options: TrafficOptions): Promise<TrafficResult> {
  progress(
    `traffic: ${options.rates.length} steps of ${options.stepMs / 1000} s at ${options.rates.join(', ')} raises/s (ten facts to a raise${options.feedOnly ? '; feed only: the facts alone, raw storing each with a signal-with-start' : ''}), ours then raw at each, then doubling for a side that has not missed up to ${options.maxRate}/s; ${rig.agents.length} agents; both workers ${JSON.stringify(rig.workers.ours)} (${rig.workers.nodeOptions})`,
  );
  await warmUp(rig);
  const runs: StepRun[] = [];
  const broken: Record<Side, boolean> = { ours: false, raw: false };
  const step = async (side: Side, rate: number, index: number) => {
    const run = await runStep(rig, side, rate, index, options);
    runs.push(run);
    if (!kept(run.step)) {
      if (!broken[side]) progress(`  traffic: ${side} missed at ${rate} raises/s`);
      broken[side] = true;
    }
  };
  let index = 0;
  for (const rate of options.rates) {
    await step('ours', rate, index);
    await step('raw', rate, index);
    index++;
  }
  // Until each side's knee is found: the rate doubles for the sides still unbroken, within the bound.
  for (let rate = Math.max(...options.rates) * 2; rate <= options.maxRate && (!broken.ours || !broken.raw); rate *= 2) {
    for (const side of ['ours', 'raw'] as const) if (!broken[side]) await step(side, rate, index);
    index++;
  }

  // The lapses still due: until every deadline of the run has passed and a few seconds went by without one.
  const lastDeadline = Math.max(
    ...runs.flatMap((run) =>
      [...run.plan.expectations.values()].map((p) =>
        Math.max(p.deadlineMs ?? 0, p.expectation.horizon ? Date.parse(p.expectation.horizon) : 0),
      ),
    ),
  );
  const waitEnds = Date.now() + options.lapseWaitMs;
  const lapseCount = () => rig.agents.reduce((sum, agent) => sum + agent.received.length, 0) + rig.rawFiredAt().size;
  let count = lapseCount();
  let quietSince = Date.now();
  while (Date.now() < waitEnds && (Date.now() < lastDeadline + 10_000 || Date.now() - quietSince < 8_000)) {
    await delay(1_000);
    const now = lapseCount();
    if (now !== count) {
      count = now;
      quietSince = Date.now();
    }
  }
  const endMs = Date.now();
  progress('traffic: reading the records of every expectation that could lapse');
  const observed = await observedLapses(rig, runs);
  const fired = rig.rawFiredAt();

  const steps: TrafficResult['steps'] = [];
  for (let i = 0; i < index; i++) {
    const reported: { rate?: number; ours?: TrafficStep; raw?: TrafficStep } = {};
    for (const run of runs.filter((r) => r.index === i)) {
      const sends = sendsOf(run.plan, run.loop.sent);
      const lapses =
        run.step.side === 'ours'
          ? judgeOurLapses(run.plan, sends, observed.lapses, endMs)
          : judgeRawLapses(run.plan, sends, fired, endMs);
      // A step's window on its side's queue: from its start to the side's next step, or to the end of the run.
      const next = runs.find((r) => r.step.side === run.step.side && r.index > run.index);
      reported[run.step.side] = await reportStep(
        rig,
        run,
        lapses,
        { start: run.t0 - 1_000, end: next ? next.t0 - 1_000 : endMs + 60_000 },
        options,
      );
      reported.rate = run.step.rate;
    }
    const { ours, raw } = reported;
    steps.push({ rate: reported.rate!, ...(ours ? { ours } : {}), ...(raw ? { raw } : {}) });
    const said = (s: TrafficStep | undefined) =>
      s
        ? `${s.lapses.seen} (backlog ${s.lapses.backlogTotal}, missing ${s.lapses.missing} of ${s.lapses.due} due), actions per item ${s.perItem.actions}`
        : 'not run';
    progress(`  traffic at ${reported.rate}/s: lapses ours ${said(ours)}; raw ${said(raw)}`);
  }
  const sideSteps = (side: Side) => steps.flatMap((s) => (s[side] ? [s[side]] : []));
  return {
    options,
    agents: rig.agents.length,
    steps,
    knee: { ours: rateWhere(sideSteps('ours'), true), raw: rateWhere(sideSteps('raw'), true) },
    firstMiss: { ours: rateWhere(sideSteps('ours'), false), raw: rateWhere(sideSteps('raw'), false) },
    workers: rig.workers,
    recordsRead: observed.read,
    recordErrors: observed.errors,
  };
}
