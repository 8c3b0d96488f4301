/**
 * Scenario 7, traffic (BENCHMARKS.md, "What is measured"): an open loop stepped over a ramp of offered rates, both
 * sides at each, ours first, to find each side's knee; past the given rates the ramp doubles for a side not yet missed.
 */
import os from 'node:os';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { lapseOf } from '../../test/support/agent.js';
import { shardOf } from '../../core/fact-shards.js';
import { isTemporalUnreachable, temporalBusyReason } from '../../src/service/temporal-call.js';
import { factSignal, goSignal } from '../baseline/workflows.js';
import { backlogOf, drainedAt } from '../lib/backlog.js';
import { historyInWindow, type WindowTotals } from '../lib/history.js';
import { post, runPool } from '../lib/load.js';
import { runOpenLoop, retryAfterMs, type Attempt } from '../lib/open-loop.js';
import { artifactUpdate, expectationFor, factKeyOf, monthsAhead, runPrefix } from '../lib/payloads.js';
import { cpuMs, cpuSince, processCpuMs } from '../lib/proc.js';
import { delay, progress } from '../lib/progress.js';
import { perItem, summarise } from '../lib/stats.js';
import { judgeOurLapses, judgeRawLapses, satisfactionDelays, sendsOf } from '../lib/traffic-lapses.js';
import type { LapseReport, ObservedLapse } from '../lib/traffic-lapses.js';
import { feedOnly, planStep, type StepPlan, type TrafficRequest } from '../lib/traffic-plan.js';
import type { TrafficRig } from '../lib/traffic-rig.js';

/** `tailMs`: how long a step's outstanding requests may take after its schedule; `settleMs`, its queues to drain. */
export interface TrafficOptions {
  rates: number[];
  maxRate: number;
  stepMs: number;
  tailMs: number;
  settleMs: number;
  lapseWaitMs: number;
  /** Histories read per step and side (the rest is scaled). */
  historyCap: number;
  maxAttempts: number;
  attemptTimeoutMs: number;
  /** Facts only: raw then signals-with-start one of 64 `factStoreWorkflow`s per fact, so that both store every fact. */
  feedOnly: boolean;
}

type Side = 'ours' | 'raw';

type StepRun = Awaited<ReturnType<typeof runStep>>;
/** One side's step: what was offered and taken (items a second), answered and lost, its lapses, history and CPU. */
export type TrafficStep = StepRun['step'] & {
  lapses: LapseReport;
  /** From the fact's answer (or the raise's, when later) to satisfied, ms. */
  satisfied: ReturnType<typeof satisfactionDelays>;
  history: WindowTotals;
  perItem: { actions: number; bytes: number; events: number };
};
export type TrafficResult = Awaited<ReturnType<typeof runTraffic>>;

const itemsOf = (request: TrafficRequest) =>
  request.kind === 'raise' ? request.expectations.length : request.facts.length;

/** Sends to the bridge: raises with the agent's token, facts with the feed's (the same observedAt on a resend). */
function oursSender(rig: TrafficRig) {
  return async (request: TrafficRequest, signal: AbortSignal): Promise<Attempt> => {
    let response: Response;
    if (request.kind === 'raise') {
      const expectations = request.expectations.map((p) => p.expectation);
      const body = artifactUpdate(expectations, request.taskId);
      response = await post(`${rig.bridgeUrl}/a2a/events`, rig.agentTokens[request.agent]!, body, signal);
    } else {
      const observedAt = (request.observedAt ??= new Date().toISOString());
      const body = { facts: request.facts.map((fact) => ({ ...fact, observedAt })) };
      response = await post(`${rig.bridgeUrl}/v1/facts`, rig.feedToken, body, signal);
    }
    const { status } = response;
    const text = await response.text();
    if (status === 200) return { answer: '200' };
    if (status !== 429 && status !== 503) return { answer: 'other', detail: `HTTP ${status}: ${text}` };
    const retryAfter = response.headers.get('retry-after');
    const detail = `HTTP ${status} after ${retryAfter ?? '?'} s: ${text}`;
    return { answer: status === 429 ? '429' : '503', retryAfterMs: retryAfterMs(retryAfter), detail };
  };
}

/** Swallows an error of `type`, throws any other. */
const unless = (type: new (...args: never[]) => Error) => (error: unknown) => {
  if (!(error instanceof type)) throw error;
};

/**
 * The least raw Temporal does for the same request: a start per expectation, a signal per expectation a fact
 * satisfies, nothing for a fact nobody waits on; feed only, a signal-with-start per fact to the store of its key's shard.
 */
function rawSender(rig: TrafficRig, plan: StepPlan, feed: boolean) {
  const { client, rawQueue: taskQueue } = rig;
  const callsOf = (request: TrafficRequest): Array<() => Promise<unknown>> => {
    if (request.kind === 'raise')
      return request.expectations.map(({ expectation, rawDeadlineMs }) => () => {
        const workflowId = expectation.expectationId;
        const args = [workflowId, rawDeadlineMs];
        const started = client.workflow.start('deadlineWorkflow', { workflowId, taskQueue, args });
        return started.catch(unless(WorkflowExecutionAlreadyStartedError)); // a resend of a start that went through
      });
    if (feed)
      return request.facts.map(({ factKey }) => () => {
        const signalArgs: [string] = [factKey];
        const workflowId = `${taskQueue}-facts-${shardOf(factKey)}`;
        return client.workflow.signalWithStart('factStoreWorkflow', {
          workflowId,
          taskQueue,
          signal: factSignal,
          signalArgs,
        });
      });
    // A workflow closed already (satisfied or lapsed) makes the fact a no-op, as for ours.
    const waiting = request.facts.flatMap((fact) => plan.waiting.get(fact.factKey) ?? []);
    return waiting.map(
      (id) => () => client.workflow.getHandle(id).signal(goSignal).catch(unless(WorkflowNotFoundError)),
    );
  };
  return async (request: TrafficRequest, signal: AbortSignal): Promise<Attempt> => {
    const calls = callsOf(request);
    if (calls.length === 0) return { answer: '200', calls: 0 };
    try {
      await client.withAbortSignal(signal, () => Promise.all(calls.map((call) => call())));
      return { answer: '200', calls: calls.length };
    } catch (error) {
      // Classed as the bridge classes Temporal's errors: RESOURCE_EXHAUSTED is raw's 503; unreachable, no answer.
      if (temporalBusyReason(error) !== undefined) return { answer: '503', retryAfterMs: 1_000, calls: calls.length };
      if (isTemporalUnreachable(error)) return { answer: 'none', calls: calls.length };
      return { answer: 'other', detail: error instanceof Error ? error.message : String(error), calls: calls.length };
    }
  };
}

async function runStep(rig: TrafficRig, side: Side, rate: number, index: number, options: TrafficOptions) {
  const ours = side === 'ours';
  const { client } = rig;
  const { namespace } = rig.server;
  const queue = ours ? rig.watcherQueue : rig.rawQueue;
  const backlogAtStart = await backlogOf(client, namespace, queue);
  const otherBacklogAtStart = await backlogOf(client, namespace, ours ? rig.rawQueue : rig.watcherQueue);
  const t0 = Date.now() + 1_000;
  const prefix = `${runPrefix}-t${index}${ours ? '' : '-raw'}`;
  const agents = rig.agents.length;
  const planned = planStep({ prefix, ratePerSec: rate, durationMs: options.stepMs, t0, seed: 1_000 + index, agents });
  const plan = options.feedOnly ? feedOnly(planned) : planned;
  const { mix } = plan;
  progress(
    `traffic: ${side} at ${rate} raises/s for ${options.stepMs / 1000} s: ${mix.raises} expectations in ${mix.raiseRequests} requests, ${mix.facts} facts in ${mix.factRequests}` +
      (backlogAtStart || otherBacklogAtStart
        ? ` (backlog at start: ${backlogAtStart} here, ${otherBacklogAtStart} on the other side's queue)`
        : ''),
  );
  await delay(Math.max(0, t0 - Date.now()));
  const cpuUsed = cpuSince({
    worker: () => cpuMs(ours ? rig.pids.worker : rig.pids.rawWorker),
    bridge: ours ? () => cpuMs(rig.pids.bridge) : undefined,
    server: rig.server.serverCpuMs,
    database: rig.server.databaseCpuMs,
    load: processCpuMs,
  });
  const loadAtStart = os.loadavg()[0]!;
  const send = ours ? oursSender(rig) : rawSender(rig, plan, options.feedOnly);
  const loop = await runOpenLoop(plan.requests, send, { t0, durationMs: options.stepMs, ...options });
  // Settled: every answer in, and the side's queues drained (twice in a row).
  const { at: settledAt, backlog } = await drainedAt(client, namespace, queue, { timeoutMs: options.settleMs });
  const cpu = cpuUsed();
  const loadAverage = { start: Number(loadAtStart.toFixed(2)), end: Number(os.loadavg()[0]!.toFixed(2)) };
  const { answers } = loop;
  progress(
    `  ${side} at ${rate}/s: ${answers['200']}/${loop.sent.length} requests answered 200, ${answers['503']} × 503, ${answers['429']} × 429, ${answers.other} other, ${answers.none} unanswered attempts, ${loop.lost} lost (${loop.abandoned} at the tail's end); last answer ${((loop.lastAnswerAt - t0) / 1000).toFixed(1)} s, ` +
      (settledAt ? `settled at ${((settledAt - t0) / 1000).toFixed(1)} s` : `not settled (backlog ${backlog})`),
  );
  if (loop.details.length > 0) progress(`  first other answer: ${loop.details[0]}`);
  if (loop.refusals.length > 0) progress(`  first refusal: ${loop.refusals[0]}`);
  const offered = (n: number) => Number((n / (options.stepMs / 1000)).toFixed(1));
  const items = mix.raises + mix.facts;
  const answered = loop.sent.filter((s) => s.answeredAt !== undefined);
  const lost = loop.sent.filter((s) => s.answeredAt === undefined);
  const accepted = answered.reduce((sum, s) => sum + itemsOf(s.request), 0);
  const stored = answered.reduce((sum, s) => sum + (s.request.kind === 'facts' ? s.request.facts.length : 0), 0);
  const answerTimes = answered.filter((s) => s.calls > 0).map((s) => s.answeredAt! - s.sentAt);
  const settledMs = settledAt === undefined ? undefined : Math.max(settledAt, loop.lastAnswerAt) - t0;
  // Over the step, or until its last 200 (or its queues drained) when later.
  const perSec = (n: number, ms: number) => Number((n / (Math.max(ms, options.stepMs) / 1000)).toFixed(1));
  const step = {
    side,
    rate,
    mix,
    offeredPerSec: { raises: offered(mix.raises), facts: offered(mix.facts), items: offered(items) },
    acceptedPerSec: perSec(accepted, loop.lastAnswerAt - t0),
    settledPerSec: settledMs === undefined ? undefined : perSec(accepted, settledMs), // undefined: never drained
    answers,
    lostRequests: lost.length,
    lostItems: lost.reduce((sum, s) => sum + itemsOf(s.request), 0),
    abandonedRequests: loop.abandoned, // lost as still unanswered at the tail's end, not refused on every attempt
    answerMs: summarise(answerTimes, 0), // first send → 200, resends included, of requests that made a call
    backlogAtStart,
    otherBacklogAtStart,
    cpuMsPerItem: {
      worker: perItem(cpu.worker, items)!,
      bridge: perItem(cpu.bridge, items),
      server: perItem(cpu.server, items),
      database: perItem(cpu.database, items),
      load: perItem(cpu.load, items)!,
    },
    serverCpuMsPerStoredFact: perItem(cpu.server, stored),
    loadAverage,
  };
  return { index, plan, t0, sent: loop.sent, step };
}

/** The side took what the step offered: accepted ≥ 95 % of offered items, no 429 or 503, nothing lost. */
function kept(step: StepRun['step']): boolean {
  const { answers } = step;
  const took = step.acceptedPerSec >= 0.95 * step.offeredPerSec.items;
  return took && answers['503'] === 0 && answers['429'] === 0 && step.lostRequests === 0;
}

/** The knee: the highest offered rate at which the side took what was offered (`took`); or the lowest it missed at. */
function rateWhere(steps: TrafficStep[], took: boolean): number | undefined {
  const rates = steps.filter((s) => kept(s) === took).map((s) => s.rate);
  return rates.length === 0 ? undefined : took ? Math.max(...rates) : Math.min(...rates);
}

/** The lapses the agents received of this run's traffic, and those the records of lapse-capable expectations list. */
async function observedLapses(rig: TrafficRig, runs: StepRun[]) {
  const byKey = new Map<string, ObservedLapse>();
  const satisfiedAt = new Map<string, number>();
  const add = (l: ObservedLapse, receivedAt?: number) => {
    const key = `${l.expectationId}|${l.lapse}|${l.dueAt}`;
    if (receivedAt !== undefined || !byKey.has(key)) byKey.set(key, { ...l, receivedAt });
  };
  for (const received of rig.agents.flatMap((agent) => agent.received)) {
    const lapse = lapseOf(received) as ObservedLapse | undefined;
    if (lapse?.expectationId?.startsWith(`${runPrefix}-t`)) add(lapse, received.receivedAt.getTime());
  }
  const ids = runs
    .filter((run) => run.step.side === 'ours')
    .flatMap((run) => [...run.plan.expectations.values()])
    .filter((p) => p.deadlineMs !== undefined || p.expectation.horizon)
    .map((p) => p.expectation.expectationId);
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
      const record = (await response.json()) as { lapses?: Array<{ lapse: ObservedLapse }>; satisfiedAt?: string };
      for (const entry of record.lapses ?? []) add(entry.lapse);
      if (record.satisfiedAt) satisfiedAt.set(ids[i]!, Date.parse(record.satisfiedAt));
    },
    { maxErrors: Infinity },
  );
  return { lapses: [...byKey.values()], satisfiedAt, read, errors: pool.errors.length };
}

/** When each raw expectation closed on its signal (its workflow's close time); those whose timer fired are left out. */
async function rawSatisfiedAt(rig: TrafficRig, fired: ReadonlyMap<string, number>): Promise<Map<string, number>> {
  const closed = new Map<string, number>();
  const query = `TaskQueue = "${rig.rawQueue}" AND WorkflowType = "deadlineWorkflow" AND ExecutionStatus = "Completed"`;
  for await (const execution of rig.client.workflow.list({ query })) {
    if (!fired.has(execution.workflowId) && execution.closeTime)
      closed.set(execution.workflowId, execution.closeTime.getTime());
  }
  return closed;
}

/** One raise and one fact through the bridge from each agent (the cards fetched), one raw start and signal. */
async function warmUp(rig: TrafficRig): Promise<void> {
  const dueAt = monthsAhead();
  const ours = oursSender(rig);
  for (let agent = 0; agent < rig.agents.length; agent++) {
    const id = `${runPrefix}-twarm-${agent}`;
    const expectations = [{ expectation: expectationFor(id, `${id}-S`, dueAt), graceMs: 0, rawDeadlineMs: 0 }];
    const requests: TrafficRequest[] = [
      { kind: 'raise', atMs: 0, agent, taskId: `${id}-task`, expectations },
      { kind: 'facts', atMs: 0, facts: [{ factKey: factKeyOf(id) }] },
    ];
    for (const request of requests) {
      const { answer, detail } = await ours(request, AbortSignal.timeout(60_000));
      if (answer !== '200')
        throw new Error(`traffic: the warm-up ${request.kind} was answered ${answer}: ${detail ?? ''}`);
    }
  }
  const id = `${runPrefix}-twarm-raw`;
  const args = [id, Date.parse(dueAt)];
  const handle = await rig.client.workflow.start('deadlineWorkflow', { workflowId: id, taskQueue: rig.rawQueue, args });
  await handle.signal(goSignal);
  await handle.result();
}

/** Each rate of the ramp, each side's knee (undefined: none) and first miss (undefined: never, up to the top). */
export async function runTraffic(rig: TrafficRig, options: TrafficOptions) {
  progress(
    `traffic: ${options.rates.length} steps of ${options.stepMs / 1000} s at ${options.rates.join(', ')} raises/s (ten facts to a raise${options.feedOnly ? '; feed only: the facts alone, raw storing each with a signal-with-start' : ''}), ours then raw at each, then doubling for a side that has not missed up to ${options.maxRate}/s; ${rig.agents.length} agents; both workers ${JSON.stringify(rig.workers.ours)} (${rig.workers.nodeOptions})`,
  );
  await warmUp(rig);
  const runs: StepRun[] = [];
  const broken: Record<Side, boolean> = { ours: false, raw: false };
  const step = async (side: Side, rate: number, index: number) => {
    const run = await runStep(rig, side, rate, index, options);
    runs.push(run);
    if (kept(run.step) || broken[side]) return;
    progress(`  traffic: ${side} missed at ${rate} raises/s`);
    broken[side] = true;
  };
  let index = 0;
  for (const rate of options.rates) {
    await step('ours', rate, index);
    await step('raw', rate, index++);
  }
  // Until each side's knee is found: the rate doubles for the sides still unbroken, within the bound.
  for (let rate = Math.max(...options.rates) * 2; rate <= options.maxRate && (!broken.ours || !broken.raw); rate *= 2) {
    for (const side of ['ours', 'raw'] as const) if (!broken[side]) await step(side, rate, index);
    index++;
  }

  // The lapses still due: until every deadline of the run has passed and a few seconds went by without one.
  const deadlines = runs.flatMap((run) => [...run.plan.expectations.values()]);
  const horizonMs = (horizon: string | undefined) => (horizon ? Date.parse(horizon) : 0);
  const lastDeadline = Math.max(...deadlines.map((p) => Math.max(p.deadlineMs ?? 0, horizonMs(p.expectation.horizon))));
  const waitEnds = Date.now() + options.lapseWaitMs;
  const lapseCount = () => rig.agents.reduce((sum, agent) => sum + agent.received.length, 0) + rig.rawFiredAt().size;
  let count = lapseCount();
  let quietSince = Date.now();
  while (Date.now() < waitEnds && (Date.now() < lastDeadline + 10_000 || Date.now() - quietSince < 8_000)) {
    await delay(1_000);
    const now = lapseCount();
    if (now !== count) [count, quietSince] = [now, Date.now()];
  }
  const endMs = Date.now();
  progress('traffic: reading the records of every expectation that could lapse');
  const observed = await observedLapses(rig, runs);
  const fired = rig.rawFiredAt();
  const rawSatisfied = await rawSatisfiedAt(rig, fired);

  const steps: Array<{ rate: number; ours?: TrafficStep; raw?: TrafficStep }> = [];
  for (let i = 0; i < index; i++) {
    const reported: (typeof steps)[number] = { rate: 0 };
    for (const run of runs.filter((r) => r.index === i)) {
      const { side, rate, mix } = run.step;
      const sends = sendsOf(run.plan, run.sent);
      const lapses =
        side === 'ours'
          ? judgeOurLapses(run.plan, sends, observed.lapses, endMs)
          : judgeRawLapses(run.plan, sends, fired, endMs);
      const satisfied = satisfactionDelays(run.plan, sends, side === 'ours' ? observed.satisfiedAt : rawSatisfied);
      // By event time, from the step's start to the side's next step: the long-lived routers serve every step.
      const next = runs.find((r) => r.step.side === side && r.index > run.index);
      const window = { start: run.t0 - 1_000, end: next ? next.t0 - 1_000 : endMs + 60_000 };
      progress(`  traffic: reading what ${side}'s workflows wrote during its step at ${rate}/s`);
      const queue = side === 'ours' ? rig.watcherQueue : rig.rawQueue;
      const readAll = ['factRouterWorkflow', 'factStoreWorkflow'];
      const history = await historyInWindow(rig.client, queue, window, { cap: options.historyCap, readAll });
      const items = mix.raises + mix.facts;
      const per = (total: number) => Number((total / items).toFixed(2));
      const perItem = {
        actions: per(history.actions),
        bytes: Math.round(history.bytes / items),
        events: per(history.events),
      };
      reported.rate = rate;
      reported[side] = { ...run.step, lapses, satisfied, history, perItem };
    }
    steps.push(reported);
    const said = (s: TrafficStep | undefined) =>
      s
        ? `${s.lapses.seen} (backlog ${s.lapses.backlogTotal}, missing ${s.lapses.missing} of ${s.lapses.due} due), actions per item ${s.perItem.actions}`
        : 'not run';
    progress(`  traffic at ${reported.rate}/s: lapses ours ${said(reported.ours)}; raw ${said(reported.raw)}`);
    for (const example of reported.ours?.lapses.backlogExamples ?? [])
      progress(`    caused by the backlog: ${example}`);
  }
  const sideSteps = (side: Side) => steps.flatMap((s) => (s[side] ? [s[side]] : []));
  return {
    options,
    agents: rig.agents.length,
    steps,
    knee: { ours: rateWhere(sideSteps('ours'), true), raw: rateWhere(sideSteps('raw'), true) },
    firstMiss: { ours: rateWhere(sideSteps('ours'), false), raw: rateWhere(sideSteps('raw'), false) },
    workers: rig.workers,
    // The records read at the end for the lapses they list.
    recordsRead: observed.read,
    recordErrors: observed.errors,
  };
}
