/**
 * Which lapses of a traffic step the backlog caused, judged from what the client saw alone. The watcher decides by
 * when the bridge received a fact (DESIGN 3.2), so a lapse is the backlog's when: overdue, a fact with its key was
 * answered 200 before its deadline (dueAt + grace); stalled, a fact on its subject was sent after the raise was
 * answered and answered before the horizon; skipped, its fact was answered before its successor's was sent. Lapses
 * due and never seen count too. Raw is judged on its timer's activity: lapsed although its signal was answered before.
 */
import type { Sent } from './open-loop.js';
import { summarise } from './stats.js';
import { subjectKey, type StepPlan, type TrafficRequest } from './traffic-plan.js';

export type LapseKind = 'overdue' | 'stalled' | 'skipped';

/** A lapse as an agent received it (`receivedAt`, epoch ms) or a record lists it. */
export interface ObservedLapse {
  expectationId: string;
  lapse: LapseKind;
  dueAt: string;
  lapsedAt: string;
  satisfiedAfter?: string[];
  receivedAt?: number;
}

interface Send {
  sentAt: number;
  answeredAt?: number;
  observedAt?: string;
}

export type Sends = ReturnType<typeof sendsOf>;
export type LapseReport = ReturnType<typeof judgeOurLapses>;

const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => map.set(key, [...(map.get(key) ?? []), value]);

/** What the client sent and when it was answered, by expectation, fact key and subject. */
export function sendsOf(plan: StepPlan, sent: readonly Sent<TrafficRequest>[]) {
  const sends = {
    raiseSentAt: new Map<string, number>(),
    raiseAnsweredAt: new Map<string, number>(),
    byKey: new Map<string, Send[]>(),
    bySubject: new Map<string, Send[]>(),
  };
  for (const entry of sent) {
    const request = entry.request;
    if (request.kind === 'raise') {
      for (const p of request.expectations) {
        sends.raiseSentAt.set(p.expectation.expectationId, entry.sentAt);
        if (entry.answeredAt !== undefined) sends.raiseAnsweredAt.set(p.expectation.expectationId, entry.answeredAt);
      }
      continue;
    }
    const send: Send = { sentAt: entry.sentAt, answeredAt: entry.answeredAt, observedAt: request.observedAt };
    for (const fact of request.facts) {
      push(sends.byKey, fact.factKey, send);
      const subjects = new Set<string>(fact.subject ? [subjectKey(fact.subject)] : []);
      // A fact that satisfies an expectation is also a fact on that expectation's subject (DESIGN 3.2).
      for (const id of plan.waiting.get(fact.factKey) ?? [])
        subjects.add(subjectKey(plan.expectations.get(id)!.expectation.subject));
      for (const subject of subjects) push(sends.bySubject, subject, send);
    }
  }
  return sends;
}

/** The earliest answer, or the earliest before `ms`. */
const firstAnswered = (sends: Send[] | undefined, ms = Infinity) =>
  (sends ?? [])
    .filter((s) => s.answeredAt !== undefined && s.answeredAt < ms)
    .sort((a, b) => a.answeredAt! - b.answeredAt!)[0];
const firstSent = (sends: Send[] | undefined) => Math.min(...(sends ?? []).map((s) => s.sentAt));
const durationMs = (iso: string) => Number(/^PT(\d+)S$/.exec(iso)?.[1] ?? Number.NaN) * 1000;

/**
 * How long after the client had its fact answered (or its raise, when the fact came first) each expectation was
 * satisfied, by `satisfiedAt` (epoch ms): ours from its record (the workflow's time, so the routers' forward is in it),
 * raw's when its workflow closed on the signal. No lapse waits on this; an agent waiting to hear "satisfied" does.
 */
export function satisfactionDelays(plan: StepPlan, sends: Sends, satisfiedAt: ReadonlyMap<string, number>) {
  const delays: number[] = [];
  for (const [id, p] of plan.expectations) {
    const at = satisfiedAt.get(id);
    const fact = firstAnswered(sends.byKey.get(p.expectation.satisfiedBy.factKey));
    const raised = sends.raiseAnsweredAt.get(id);
    if (at === undefined || fact === undefined || raised === undefined) continue;
    delays.push(at - Math.max(fact.answeredAt!, raised));
  }
  return summarise(delays, 0);
}

/** The deadline an expectation is judged on: dueAt + grace, or, once its anchor's fact was answered, that fact's observedAt + offset + grace. */
function currentDeadline(plan: StepPlan, sends: Sends, id: string): number | undefined {
  const p = plan.expectations.get(id)!;
  if (p.deadlineMs === undefined) return undefined;
  const anchor = p.expectation.anchor;
  if (!anchor) return p.deadlineMs;
  const anchorKey = plan.expectations.get(anchor.expectationId)!.expectation.satisfiedBy.factKey;
  const observed = firstAnswered(sends.byKey.get(anchorKey))?.observedAt;
  return observed ? Date.parse(observed) + durationMs(anchor.offset) + p.graceMs : p.deadlineMs;
}

const zeroKinds = (): Record<LapseKind, number> => ({ overdue: 0, stalled: 0, skipped: 0 });

/**
 * Judges the watcher's lapses of one step, seen by `endMs`: due by the end, seen (agents' tasks and records' lapses,
 * each once), received by an agent, caused by the backlog by kind, due and never seen (missing); lateness is lapsedAt
 * minus the deadline, at the agent its arrival there minus the deadline.
 */
export function judgeOurLapses(plan: StepPlan, sends: Sends, lapses: readonly ObservedLapse[], endMs: number) {
  const backlog = zeroKinds();
  const backlogExamples: string[] = [];
  const lateness: number[] = [];
  const atAgent: number[] = [];
  const lapsed = new Set<string>();
  for (const l of lapses) {
    const p = plan.expectations.get(l.expectationId);
    if (!p) continue;
    lapsed.add(`${l.expectationId}|${l.lapse}`);
    const e = p.expectation;
    let deadline: number | undefined;
    let prevented: Send | undefined;
    if (l.lapse === 'overdue') {
      deadline = Date.parse(l.dueAt) + p.graceMs;
      prevented = firstAnswered(sends.byKey.get(e.satisfiedBy.factKey), deadline);
    } else if (l.lapse === 'stalled' && e.horizon) {
      deadline = Date.parse(e.horizon);
      const raisedAt = sends.raiseAnsweredAt.get(e.expectationId);
      const after = (sends.bySubject.get(subjectKey(e.subject)) ?? []).filter(
        (s) => raisedAt !== undefined && s.sentAt >= raisedAt,
      );
      prevented = firstAnswered(after, deadline);
    } else if (l.lapse === 'skipped') {
      const after = l.satisfiedAfter?.[0] ? plan.expectations.get(l.satisfiedAfter[0]) : undefined;
      const afterSends = after ? sends.byKey.get(after.expectation.satisfiedBy.factKey) : undefined;
      prevented = firstAnswered(sends.byKey.get(e.satisfiedBy.factKey), firstSent(afterSends));
      deadline = firstAnswered(afterSends)?.answeredAt;
    }
    if (prevented) {
      backlog[l.lapse]++;
      // A few of them by id, with the send that should have prevented each: where to look in the histories.
      if (backlogExamples.length < 5)
        backlogExamples.push(
          `${l.expectationId} ${l.lapse} (fact sent ${new Date(prevented.sentAt).toISOString()}, answered ${new Date(prevented.answeredAt!).toISOString()}; raise answered ${new Date(sends.raiseAnsweredAt.get(l.expectationId) ?? 0).toISOString()})`,
        );
    }
    if (deadline !== undefined) {
      lateness.push(Date.parse(l.lapsedAt) - deadline);
      if (l.receivedAt !== undefined) atAgent.push(l.receivedAt - deadline);
    }
  }

  // What should have lapsed by the end (with a few seconds' margin for the watcher's settle interval).
  let due = 0;
  let missing = 0;
  const judgedBy = endMs - 5_000;
  for (const [id, p] of plan.expectations) {
    const raisedAt = sends.raiseAnsweredAt.get(id);
    if (raisedAt === undefined) continue;
    const e = p.expectation;
    const deadline = currentDeadline(plan, sends, id);
    const keySends = sends.byKey.get(e.satisfiedBy.factKey);
    if (deadline !== undefined && deadline < judgedBy && !(keySends ?? []).some((s) => s.sentAt < deadline)) {
      due++;
      if (!lapsed.has(`${id}|overdue`)) missing++;
    }
    if (e.horizon && Date.parse(e.horizon) < judgedBy) {
      const horizon = Date.parse(e.horizon);
      const fed = (sends.bySubject.get(subjectKey(e.subject)) ?? []).some(
        (s) => s.sentAt < horizon && (s.answeredAt ?? Infinity) > sends.raiseSentAt.get(id)!,
      );
      if (!fed) {
        due++;
        if (!lapsed.has(`${id}|stalled`)) missing++;
      }
    }
  }
  // Skipped: a plan step whose fact never came before its successor's was answered.
  for (const p of plan.expectations.values()) {
    for (const before of p.expectation.after ?? []) {
      const successor = firstAnswered(sends.byKey.get(p.expectation.satisfiedBy.factKey));
      const beforeKey = plan.expectations.get(before)!.expectation.satisfiedBy.factKey;
      if (!successor || !sends.raiseAnsweredAt.has(before) || successor.answeredAt! >= judgedBy) continue;
      if ((sends.byKey.get(beforeKey) ?? []).some((s) => s.sentAt <= successor.answeredAt!)) continue;
      due++;
      if (!lapsed.has(`${before}|skipped`)) missing++;
    }
  }
  const backlogTotal = backlog.overdue + backlog.stalled + backlog.skipped;
  return {
    due,
    seen: lapses.filter((l) => plan.expectations.has(l.expectationId)).length,
    received: lapses.filter((l) => plan.expectations.has(l.expectationId) && l.receivedAt !== undefined).length,
    backlog,
    backlogTotal,
    backlogExamples,
    missing,
    latenessMs: summarise(lateness, 0),
    atAgentMs: summarise(atAgent, 0),
  };
}

/** Judges raw Temporal's lapses of one step (its timers' activities run: workflow id → epoch ms), seen by `endMs`. */
export function judgeRawLapses(
  plan: StepPlan,
  sends: Sends,
  firedAt: ReadonlyMap<string, number>,
  endMs: number,
): LapseReport {
  const backlog = zeroKinds();
  const lateness: number[] = [];
  let due = 0;
  let missing = 0;
  for (const [id, p] of plan.expectations) {
    const keySends = sends.byKey.get(p.expectation.satisfiedBy.factKey);
    const fired = firedAt.get(id);
    if (fired !== undefined) {
      lateness.push(fired - p.rawDeadlineMs);
      if (firstAnswered(keySends, p.rawDeadlineMs)) backlog.overdue++;
    }
    if (!sends.raiseAnsweredAt.has(id) || p.rawDeadlineMs >= endMs - 5_000) continue;
    if (!(keySends ?? []).some((s) => s.sentAt < p.rawDeadlineMs)) {
      due++;
      if (fired === undefined) missing++;
    }
  }
  return {
    due,
    seen: lateness.length,
    received: lateness.length,
    backlog,
    backlogTotal: backlog.overdue,
    backlogExamples: [] as string[],
    missing,
    latenessMs: summarise(lateness, 0),
    atAgentMs: summarise(lateness, 0),
  };
}
