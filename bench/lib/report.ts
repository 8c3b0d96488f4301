/**
 * The run's results as JSON and as markdown tables (scenario, ours, raw Temporal, ratio, target; BENCHMARKS.md's goals
 * table gives the verdicts), written under bench/results/ with a timestamp. Every table names its run and the commit
 * it measured, so that a figure copied out of it still says where it came from.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CostResult, WorkflowCost } from '../scenarios/cost.js';
import type { FactLatencyResult } from '../scenarios/fact-latency.js';
import type { LapseResult, Stages } from '../scenarios/lapse-lateness.js';
import type { ProcessCost, ScaleResult, ScaleSide } from '../scenarios/scale.js';
import type { ThroughputResult } from '../scenarios/throughput.js';
import type { TrafficResult, TrafficStep } from '../scenarios/traffic.js';
import { repoRoot } from './child.js';
import type { Machine } from './proc.js';
import type { Summary } from './stats.js';

/** A run: `scenarios` when `--only` left some out; `changedFiles` behind a `+dirty` commit; SDK warnings by message. */
export interface BenchResults {
  mode: 'quick' | 'full';
  scenarios?: string[];
  startedAt: string;
  commit: string;
  changedFiles?: string[];
  durationSec: number;
  server: string;
  serverKind?: 'dev' | 'cluster' | 'external';
  machine: Machine;
  throughput?: ThroughputResult;
  factLatency?: FactLatencyResult;
  lapse?: LapseResult[];
  scale?: ScaleResult;
  cost?: CostResult;
  traffic?: TrafficResult;
  notes: string[];
  sdkWarnings?: Record<string, number>;
}

const ms = (s: Summary) => `${s.p50} / ${s.p95} / ${s.p99} ms`;
const msMax = (s: Summary) => `${s.p50} / ${s.p95} / ${s.p99} / ${s.max} ms`;
const n = (value: number) => value.toLocaleString('en-US');
const cost = (c: ProcessCost | undefined) => (c ? `${c.rssMiB} MiB (empty ${c.emptyRssMiB}, peak ${c.peakMiB})` : '—');
const cpu = (c: ProcessCost | undefined) => (c ? `${c.idleCpuPct} %` : '—');
const mib = (value: number | undefined) => (value === undefined ? '—' : `${value} MiB`);
const kib = (value: number | undefined) => (value === undefined ? '—' : `${value} KiB`);

const STAGES: Array<[keyof Stages, string]> = [
  ['timer', 'due → timer fired'],
  ['decide', 'timer fired → activity scheduled'],
  ['queue', 'scheduled → activity started'],
  ['activity', 'activity started → at the agent / recorded'],
];

/** Which run and commit a figure comes from, as every table of the markdown names them. */
const provenance = (results: Pick<BenchResults, 'startedAt' | 'commit'>): string =>
  `run ${results.startedAt}, commit ${results.commit}`;

/** The markdown of one run: the main table, then where the time goes. */
export function markdown(results: BenchResults): string {
  const m = results.machine;
  const stamp = provenance(results);
  const lines = [
    `Run: \`${results.mode}\`, ${results.startedAt}, commit ${results.commit}, ${Math.round(results.durationSec / 60)} min; server: ${results.server}.`,
    `Machine: ${m.cpus} cores (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}, ${m.temporal}; load average at start ${m.loadAverageAtStart.join(' ')}.`,
  ];
  const changed = results.changedFiles ?? [];
  if (changed.length > 0)
    lines.push(`Uncommitted changes at the start (${results.commit}): ${changed.map((f) => `\`${f}\``).join(', ')}.`);
  lines.push(
    '',
    `| Scenario (${stamp}) | Watcher | Raw Temporal, same server | Ratio | Target |`,
    '|---|---|---|---|---|',
  );
  const serverLabel = results.serverKind === 'cluster' ? 'Temporal services (4 processes)' : 'dev server';
  const t = results.throughput;
  if (t) {
    const c = t.options.concurrency;
    const raw = `${t.rawAcceptedPerSec}/s starts (settled ${t.rawSettledPerSec}/s)`;
    lines.push(
      `| Raise, 1 expectation per request, concurrency ${c} | ${t.single.acceptedPerSec}/s accepted (settled ${t.single.settledPerSec}/s) | ${raw} | ${t.ratios.single} (settled ${t.ratios.singleSettled}) | ≥ 0.5 |`,
      `| Raise, 10 per request, concurrency ${c} | ${t.batch.acceptedPerSec}/s accepted (settled ${t.batch.settledPerSec}/s) | ${raw} | ${t.ratios.batch} (settled ${t.ratios.batchSettled}) | ≥ 0.5 |`,
    );
  }
  const f = results.factLatency;
  if (f) {
    lines.push(
      `| Fact → satisfied, p50 / p95 / p99 (${f.samples} samples) | ${ms(f.oursMs)} | signal → result ${ms(f.rawMs)} | p50 ${f.ratios.p50}, p99 ${f.ratios.p99} | p99 ≤ 250 ms |`,
    );
  }
  for (const l of results.lapse ?? []) {
    lines.push(
      `| Lapse lateness, ${n(l.count)} due at once, p50 / p95 / p99 / max | ${msMax(l.oursMs)} | timer → activity ${msMax(l.rawMs)} | p99 ${l.ratios.p99}, max ${l.ratios.max} | p99 ≤ 1 s at 200 |`,
    );
  }
  const s = results.scale;
  if (s) {
    // A run of one side (`--scale-sides`) shows a dash for the other, and no ratio.
    const ours: Partial<ScaleSide> = s.ours ?? { via: '—' };
    const raw: Partial<ScaleSide> = s.raw ?? {};
    const raising = (side: Partial<ScaleSide>) =>
      side.raisePerSec === undefined ? '—' : `${side.raisePerSec}/s, settled in ${side.settledSec} s`;
    const raisingRatio = s.ours && s.raw ? (s.ours.raisePerSec / s.raw.raisePerSec).toFixed(2) : '—';
    const label = `Scale, ${n(s.count)} open`;
    lines.push(
      `| ${label}: worker RSS | ${cost(ours.worker)} | ${cost(raw.worker)} | ${s.ratios.workerRss ?? '—'} | ≤ 400 MB at 100,000 |`,
      `| ${label}: ${serverLabel} RSS | ${cost(ours.server)} | ${cost(raw.server)} | ${s.ratios.serverRss ?? '—'} | |`,
      `| ${label}: bridge RSS | ${cost(ours.bridge)} | — | | |`,
      ...(ours.growth && ours.growth.length > 0
        ? [
            `| ${label}: worker / bridge RSS while raising | ${ours.growth.map((g) => `${n(g.raised)}: ${g.workerMiB} / ${g.bridgeMiB}`).join('; ')} MiB | — | | |`,
          ]
        : []),
      `| ${label}: database on disk (SQLite + WAL, or PostgreSQL's data directory); per open expectation | ${mib(ours.databaseMiB)}; ${kib(ours.databaseKiBPerOpen)} | ${mib(raw.databaseMiB)}; ${kib(raw.databaseKiBPerOpen)} | ${s.ratios.database ?? '—'} | |`,
      `| ${label}: idle CPU over 30 s, worker / bridge / server | ${cpu(ours.worker)} / ${cpu(ours.bridge)} / ${cpu(ours.server)} | ${cpu(raw.worker)} / — / ${cpu(raw.server)} | | |`,
      `| ${label}: raising (${ours.via}) | ${raising(ours)} | ${raising(raw)} | ${raisingRatio} | |`,
      ...(ours.burst
        ? [
            `| ${label}: a burst of ${n(ours.burst.count)} due at one instant on top, due → lapse at the agent p50 / p99 / last | ${ours.burst.lateness.p50} / ${ours.burst.lateness.p99} / ${ours.burst.drainMs} ms${ours.burst.raisedLate ? ' (raising ran past the instant)' : ''} | — | | |`,
            ...(ours.burst.workerAfter
              ? [
                  `| ${label}: worker RSS once the burst drained (every router in its cache) | ${ours.burst.workerAfter.rssMiB} MiB (peak ${ours.burst.workerAfter.peakMiB}) | — | | ≤ 400 MB at 100,000 |`,
                ]
              : []),
          ]
        : []),
    );
  }

  const tr = results.traffic;
  if (tr) {
    const ran = (side: 'ours' | 'raw') => tr.steps.flatMap((step) => (step[side] ? [step.rate] : []));
    const knee = (side: 'ours' | 'raw') => {
      const rate = tr.knee[side];
      const miss = tr.firstMiss[side];
      const rates = ran(side);
      if (miss === undefined) return `≥ ${Math.max(...rates)} raises/s (never missed; the ramp's top)`;
      return rate === undefined ? `below ${Math.min(...rates)} raises/s` : `${rate} raises/s (first miss at ${miss})`;
    };
    // A side unbroken at its top: its knee is higher, so the ratio is a bound.
    const kneeRatio =
      tr.knee.ours !== undefined && tr.knee.raw !== undefined
        ? `${tr.firstMiss.raw === undefined ? '≤ ' : tr.firstMiss.ours === undefined ? '≥ ' : ''}${(tr.knee.ours / tr.knee.raw).toFixed(2)}`
        : '—';
    lines.push(
      `| Traffic${tr.options.feedOnly ? ', feed only (10 facts/s per raise/s, no raises)' : ''}, open loop at ${tr.steps.map((step) => step.rate).join(', ')} raises/s with 10 facts each: knee (accepted ≥ 95 % of offered, no 429 / 503, none lost) | ${knee('ours')} | ${knee('raw')} | ${kneeRatio} | |`,
    );
  }

  if (t || f || (results.lapse ?? []).length > 0) {
    lines.push('', `#### Where the time goes (${stamp})`, '', '| Measure | Watcher | Raw Temporal |', '|---|---|---|');
  }
  if (t) {
    const [expectation, routers] = t.histories.ours;
    const db = t.single.cpuMsPerItem.database !== undefined;
    const cpuCell = (c: { node: number; server?: number; database?: number }) =>
      `${c.node} / ${c.server ?? '—'}${db ? ` / ${c.database ?? '—'}` : ''} ms`;
    const split = (key: 'events' | 'workflowTasks' | 'actions') =>
      `${expectation![key] + routers![key]} (${expectation![key]} + ${routers![key]}) | ${t.histories.raw[key]}`;
    lines.push(
      `| Workflows per raise (1 per request) | 1: the expectation (and a share of its key's router, one of a fixed set) | 1 |`,
      `| History events per raise (expectation + its share of the routers) | ${split('events')} |`,
      `| Workflow tasks per raise | ${split('workflowTasks')} |`,
      `| Temporal actions per raise, from the histories | ${split('actions')} |`,
      `| CPU per expectation, 1 per request: benchmark process (bridge + worker + load) / ${serverLabel}${db ? ' / PostgreSQL' : ''} | ${cpuCell(t.single.cpuMsPerItem)} | ${cpuCell(t.raw[0]!.cpuMsPerItem)} |`,
      `| CPU per expectation, 10 per request | ${cpuCell(t.batch.cpuMsPerItem)} | |`,
      `| Request latency p50 / p95 / p99, 1 per request | ${ms(t.single.latencyMs)} | start ${ms(t.raw[0]!.latencyMs)} |`,
      `| Request latency p50 / p95 / p99, 10 per request | ${ms(t.batch.latencyMs)} | |`,
    );
  }
  if (f) {
    lines.push(`| Fact POST → workflow's satisfiedAt (workflow clock) p50 / p95 / p99 | ${ms(f.decidedMs)} | |`);
  }
  for (const { count, oursStages: ours, rawStages: raw } of results.lapse ?? []) {
    for (const [stage, what] of STAGES)
      lines.push(
        `| Lapse ${n(count)}: ${what} (p50 / p99) | ${ours[stage].p50} / ${ours[stage].p99} ms | ${raw[stage].p50} / ${raw[stage].p99} ms |`,
      );
  }
  if (results.cost) lines.push('', ...costRows(results.cost, stamp));
  if (tr) lines.push('', ...trafficRows(tr, stamp));
  const warnings = Object.entries(results.sdkWarnings ?? {});
  if (warnings.length > 0) {
    lines.push('', 'Temporal SDK warnings during the run:', '');
    for (const [message, count] of warnings) lines.push(`- ${count} × ${message.replace(/\s+/g, ' ').slice(0, 140)}`);
  }
  if (results.notes.length > 0) lines.push('', ...results.notes.map((note) => `- ${note}`));
  return `${lines.join('\n')}\n`;
}

const costCell = (c: WorkflowCost) => `${c.events} / ${n(Math.round(c.bytes))} B / ${c.workflowTasks} / ${c.actions}`;

/** Scenario 5: what one expectation writes into Temporal from raise to close, per lifecycle. */
function costRows(cost: CostResult, stamp: string): string[] {
  const rows = [
    `#### Cost per expectation, raise to close (events / history bytes / workflow tasks / actions, mean per expectation; ${stamp})`,
    '',
    '| Lifecycle | Expectation | Its share of the routers | Total | Raw Temporal, same server | Ratio, events / bytes |',
    '|---|---|---|---|---|---|',
  ];
  const raws = {
    signal: ['a signal completes a waiting workflow', cost.raw.signal],
    'timer + activity': ['a timer, then one activity', cost.raw.timerActivity],
    nothing: ['nothing (no workflow waits on it)', { events: 0, bytes: 0, workflowTasks: 0, actions: 0 }],
  } as const;
  for (const l of cost.lifecycles) {
    const [rawLabel, raw] = raws[l.raw];
    const ratios = l.ratios.events === undefined ? '—' : `${l.ratios.events} / ${l.ratios.bytes}`;
    const expectation = l.raw === 'nothing' ? '— (none)' : costCell(l.expectation);
    rows.push(
      `| ${l.lifecycle} (${l.samples}) | ${expectation} | ${costCell(l.routers)} | ${costCell(l.total)} | ${rawLabel}: ${costCell(raw)} | ${ratios} |`,
    );
  }
  rows.push(
    '',
    `- Raised through a bridge with fact retention ${cost.settings.factRetention} and late window ${cost.settings.lateWindow}, so that every expectation closes within the run; longer settings move the last timer, not what is written. Bytes: the histories as the server serves them (protobuf). Actions: Temporal Cloud's billable actions, counted from the histories.`,
    "- The routers' share: the events of its key's router and, when a fact named its subject, of its subject's router (one of the same fixed set, counted once when it is the key's) whose payloads name its fact key or its workflow, plus the three events of each workflow task that handled one (an upper bound: a router handles many signals in one task). Facts are sent as a feed sends them, `POST /v1/facts` without `wait`.",
    "- Superseded: the replacement's own expectation and its fact are not counted, only what the old one left in its router.",
  );
  return rows;
}

const side = (s: TrafficStep) => (s.side === 'ours' ? 'watcher' : 'raw');
/** p50 / p99 of a summary, or a dash when it has no samples. */
const p50p99 = (summary: Summary) => (summary.count === 0 ? '—' : `${summary.p50} / ${summary.p99} ms`);
const kinds = (k: Record<string, number>) => `${k.overdue ?? 0} / ${k.stalled ?? 0} / ${k.skipped ?? 0}`;

/** Scenario 7: per offered rate, each side's answers, then its lapses and costs. */
function trafficRows(traffic: TrafficResult, stamp: string): string[] {
  const o = traffic.options;
  const ran = traffic.steps.flatMap((step) => [step.ours, step.raw].filter((s): s is TrafficStep => s !== undefined));
  const rows = [
    `#### Traffic${traffic.options.feedOnly ? ', feed only' : ''}, open loop: steps of ${o.stepMs / 1000} s at ${o.rates.join(', ')} raises/s, the watcher then raw Temporal at each, then doubling for a side that had not missed, up to ${o.maxRate} (${stamp})`,
    '',
    '| Offered raises/s | Side | Offered items/s (raises + facts) | Accepted / settled items/s | Answers 200 / 429 / 503 / other / none | Lost requests (items; abandoned at the tail) | Answer p50 / p99 | Task backlog at start: this side / the other | Machine load average (1 min), start / end |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const s of ran) {
    const a = s.answers;
    const settled =
      s.settledPerSec === undefined ? `not within ${(o.settleMs / 1000).toFixed(0)} s` : `${s.settledPerSec}`;
    rows.push(
      `| ${s.rate} | ${side(s)} | ${s.offeredPerSec.items} (${s.offeredPerSec.raises} + ${s.offeredPerSec.facts}) | ${s.acceptedPerSec} / ${settled} | ${a['200']} / ${a['429']} / ${a['503']} / ${a.other} / ${a.none} | ${s.lostRequests} (${s.lostItems}; ${s.abandonedRequests}) | ${p50p99(s.answerMs)} | ${s.backlogAtStart ?? '—'} / ${s.otherBacklogAtStart ?? '—'} | ${s.loadAverage.start} / ${s.loadAverage.end} |`,
    );
  }
  rows.push(
    '',
    `| Offered raises/s | Side | Lapses due / seen (tasks at an agent) | Caused by the backlog: overdue / stalled / skipped | Due, never seen | Lateness p50 / p99 (lapsedAt − deadline: dueAt + grace) | At the agent p50 / p99 | Fact answered → satisfied p50 / p99 (expectations) | Per offered item: actions (routers' part) / history bytes / events / workflow tasks (routers' part) | CPU ms per offered item: worker / bridge / server / load | Server CPU ms per stored fact |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const s of ran) {
    const l = s.lapses;
    const c = s.cpuMsPerItem;
    const db = c.database === undefined ? '' : ` (+ PostgreSQL ${c.database})`;
    const items = s.mix.raises + s.mix.facts;
    const routers = s.history.byType.factRouterWorkflow;
    const perItem = (count: number) => (count / Math.max(items, 1)).toFixed(2);
    const routerPart = routers ? ` (${perItem(routers.actions)})` : '';
    const routerTasks = routers ? ` (${perItem(routers.workflowTasks)})` : '';
    rows.push(
      `| ${s.rate} | ${side(s)} | ${l.due} / ${l.seen} (${l.received}) | ${s.side === 'raw' ? `${l.backlog.overdue} (timers only)` : `**${l.backlogTotal}**: ${kinds(l.backlog)}`} | ${l.missing} | ${p50p99(l.latenessMs)} | ${p50p99(l.atAgentMs)} | ${p50p99(s.satisfied)} (${s.satisfied.count}) | ${s.perItem.actions}${routerPart} / ${n(s.perItem.bytes)} B / ${s.perItem.events} / ${perItem(s.history.workflowTasks)}${routerTasks} (${n(s.history.workflows)} runs, ${n(s.history.sampled)} read) | ${c.worker} / ${c.bridge ?? '—'} / ${c.server ?? '—'}${db} / ${c.load} | ${s.serverCpuMsPerStoredFact ?? '—'} |`,
    );
  }
  const mixOf = (rate: number, m: TrafficStep['mix']) =>
    `${rate}/s: ${m.raises} expectations (${m.hotKeyWaiters} on one fact key, ${m.singles} singles, ${m.batches} batches of 10, ${m.plans} plans of 3; ${m.withHorizon} with a horizon; ${m.dueInRun} due inside the run, ${m.factBeforeDeadline} with their fact 2–4 s before the deadline), ${m.facts} facts (${m.unexpectedFacts} matching no expectation, ${m.hotSubjectFacts} on the hot subject, ${m.factsWithSubject} with a subject)`;
  const w = traffic.workers;
  rows.push(
    '',
    `- Open loop: each request is sent at its instant whatever is outstanding; a 429 or 503 is resent after its Retry-After, a request without an answer (${o.attemptTimeoutMs / 1000} s) after 1 s, ${o.maxAttempts} attempts at most; lost: never answered 200 (refused on every attempt, or still unanswered ${o.tailMs / 1000} s after the step's schedule: abandoned). Accepted: items of requests answered 200 over max(step, last 200); settled: until the side's task queues had no backlog (twice, 0.5 s apart), waited for ${o.settleMs / 1000} s at most. Answer time: first send → 200, resends included (raw: requests that made a call).`,
    `- The ramp: both sides at ${o.rates.join(', ')} raises/s, then the rate doubled for each side that had not yet missed (accepted < 95 % of offered, a 429 or 503, a lost request), up to ${o.maxRate} raises/s. A side that never missed has its knee at or above its last rate.`,
    `- Both workers ran with NODE_OPTIONS \`${w.nodeOptions}\` and reported the same bounds: the watcher's heap limit ${w.ours.heapLimitMiB} MiB and cache ${w.ours.maxCachedWorkflows} workflows, raw's ${w.raw.heapLimitMiB} MiB and ${w.raw.maxCachedWorkflows}.`,
    traffic.options.feedOnly
      ? "- Feed only: no raises, the facts of each step alone (ten to a raise of the rate); the watcher stores every fact in its routers (its key's and its subject's), raw signals-with-start one of 64 `factStoreWorkflow`s per fact (by the key's shard), so that both store every fact."
      : '- Raw stores a fact only when an expectation waits on it (a signal to each waiting `deadlineWorkflow`); a fact nobody waits on costs it nothing, while the watcher stores every fact (issue 44).',
    `- Mix per step, from ${traffic.agents} agents and one feed: ${traffic.steps.map((step) => mixOf(step.rate, (step.ours ?? step.raw)!.mix)).join('; ')}. The hot key takes at most two fifths of a step's raises (80 at most) and the hot subject 10, so that a low rate has deadlines that lapse too.`,
    "- Caused by the backlog: an overdue lapse of an expectation whose fact the bridge had answered 200 before the deadline (dueAt + grace), a stall although a fact on the subject was answered after the raise and before the horizon, a skip although the skipped step's fact was answered before its successor's was sent. Raw does the least: a timer and a signal per expectation, no stall or skip, so only its timers can lapse; a raw lapse is the backlog's when its signal had been answered before the deadline. The watcher settles a deadline for WATCHER_FACT_WAIT (PT2S) + 1 s before it lapses, so its lateness starts at about 3 s.",
    "- Fact answered → satisfied: for each expectation satisfied in the step, from the client's 200 for its first satisfying fact (or for its raise, when that came later) to its record's `satisfiedAt` (the workflow's time: the router's forward and the expectation's task are in it), over the records read for the lapses (those with a deadline or a horizon); raw's from its signal's answer to its workflow's close time. No lapse waits on it; an agent waiting to hear \"satisfied\" does.",
    `- Actions and history bytes: the events every run of the side's task queue wrote during the step (by event time, from the step's start to the side's next step), so that the long-lived routers' events count in the step they were written in; every router run read, up to ${n(o.historyCap)} other histories read and scaled; actions as Temporal Cloud bills them (bench/lib/history.ts) and workflow tasks (completed), the routers' part in parentheses. Records read at the end: ${traffic.recordsRead} (${traffic.recordErrors} failed).`,
  );
  return rows;
}

/** A run's name: its mode, `cluster-` on the cluster, and the scenarios when not all ran. */
const sectionOf = (results: BenchResults) =>
  `${results.serverKind === 'cluster' ? 'cluster-' : ''}${results.mode}${results.scenarios ? `-${results.scenarios.join('-')}` : ''}`;

/**
 * Writes `bench/results/<stamp>-<section>.{json,md}`, to be folded into BENCHMARKS.md's scenario table by hand; keep
 * only the newest run of a scenario there (git keeps the rest).
 */
export function writeResults(results: BenchResults): { json: string; md: string } {
  const dir = path.join(repoRoot, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = results.startedAt.replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const base = path.join(dir, `${stamp}-${sectionOf(results)}`);
  writeFileSync(`${base}.json`, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(`${base}.md`, `### Benchmark ${sectionOf(results)}, ${provenance(results)}\n\n${markdown(results)}`);
  return { json: `${base}.json`, md: `${base}.md` };
}
