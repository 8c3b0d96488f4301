/**
 * One step of the traffic scenario, planned before it starts, each request at its offset. At `ratePerSec` raises a
 * second: up to 80 on one fact key (satisfied by one fact at half time; at most two fifths of the step, so that a low
 * rate still has deadlines that lapse), 10 on a hot subject with a horizon, then singles,
 * batches of 10 and plans of three (`after`, `anchor`), some due inside the run with their fact shortly before the
 * deadline or never. Ten facts to a raise: a fifth satisfy or re-deliver, four fifths match no expectation (five to a
 * request, as a feed sends them), a fifth of all on the hot subject. The same seed gives ours and raw the same traffic.
 */
import type { Expectation, Subject } from '../../core/schemas/extension.js';
import { expectationFor, instant, monthsAhead } from './payloads.js';

export interface PlannedExpectation {
  expectation: Expectation;
  graceMs: number;
  /** dueAt + grace (epoch ms) when it falls inside the run, as raised (an anchor may move it). */
  deadlineMs?: number;
  /** What the raw baseline sleeps until (epoch ms): the deadline, the anchored one as scheduled, or months away. */
  rawDeadlineMs: number;
}

interface PlannedFact {
  factKey: string;
  subject?: Subject;
}

/** A request and its offset from the step's start; a fact request keeps its observedAt for every resend. */
export type TrafficRequest =
  | { kind: 'raise'; atMs: number; agent: number; taskId: string; expectations: PlannedExpectation[] }
  | { kind: 'facts'; atMs: number; facts: PlannedFact[]; observedAt?: string };

/** What the step offers, counted for the report (`factBeforeDeadline`: due inside the run, its fact scheduled before). */
const MIX_KEYS = [
  'raises',
  'facts',
  'raiseRequests',
  'factRequests',
  'singles',
  'batches',
  'plans',
  'withHorizon',
  'dueInRun',
  'factBeforeDeadline',
  'unexpectedFacts',
  'hotSubjectFacts',
  'factsWithSubject',
  'hotKeyWaiters',
] as const;
export type TrafficMix = Record<(typeof MIX_KEYS)[number], number>;
const noMix = () => Object.fromEntries(MIX_KEYS.map((key) => [key, 0])) as TrafficMix;

export interface StepPlan {
  requests: TrafficRequest[];
  expectations: Map<string, PlannedExpectation>;
  /** Fact key → the expectations waiting on it. */
  waiting: Map<string, string[]>;
  mix: TrafficMix;
}

const GRACE = 'PT2S';
const GRACE_MS = 2_000;
/** Expectations on the hot key, at most, and the share of a step's raises they take at most (in tens, 10 at least). */
const HOT_KEY_WAITERS = 80;
const HOT_KEY_SHARE = 0.4;
/** A deadline or horizon inside the run needs this much of the step after its raise. */
const DEADLINE_ROOM_MS = 22_000;
const HORIZON_ROOM_MS = 16_000;
const PLAN_ROOM_MS = 25_000;
/** A single's fate by a uniform draw: the first whose bound the draw is below. */
const FATES = [
  [0.35, 'soon'],
  [0.5, 'open'],
  [0.75, 'fact-before-deadline'],
  [0.85, 'no-fact'],
  [0.95, 'fed'],
  [1, 'starved'],
] as const;

/** The step without its raises (`--traffic-feed-only`): the same fact requests, none of them awaited. */
export function feedOnly(plan: StepPlan): StepPlan {
  const { facts, factRequests, hotSubjectFacts, factsWithSubject } = plan.mix;
  return {
    requests: plan.requests.filter((request) => request.kind === 'facts'),
    expectations: new Map(),
    waiting: new Map(),
    mix: { ...noMix(), facts, factRequests, hotSubjectFacts, factsWithSubject, unexpectedFacts: facts },
  };
}

/** mulberry32: a small seeded generator, so that a step's traffic is the same for both sides. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const subjectKey = (subject: Subject): string => `${subject.type}/${subject.id}`;

/** The step's traffic from `t0` (epoch ms: dueAt and horizon are instants), by offset. */
export function planStep(options: {
  prefix: string;
  ratePerSec: number;
  durationMs: number;
  t0: number;
  seed: number;
  agents: number;
}): StepPlan {
  const random = seeded(options.seed);
  const between = (low: number, high: number) => low + random() * (high - low);
  const D = options.durationMs;
  const total = Math.round((options.ratePerSec * D) / 1000);
  const far = monthsAhead();
  const farMs = Date.parse(far);
  const at = (offsetMs: number) => instant(options.t0 + offsetMs);
  const inStep = (offsetMs: number) => Math.min(Math.max(offsetMs, 0), D - 200);
  const shipment = (id: string): Subject => ({ type: 'shipment', id });
  const hotSubject = shipment(`${options.prefix}-HOT`);

  const requests: TrafficRequest[] = [];
  const expectations = new Map<string, PlannedExpectation>();
  const waiting = new Map<string, string[]>();
  /** Subjects that random facts may fall on, from an instant on (raised by then); starved horizons are not here. */
  const pool: Array<{ atMs: number; subject: Subject }> = [];
  /** Satisfying facts: each in a request of its own, at its instant. */
  const satisfying: Array<{ atMs: number; fact: PlannedFact }> = [];
  /** Facts a feed sends five to a request. */
  const loose: Array<{ atMs: number; fact: PlannedFact }> = [];
  const mix = noMix();
  let agent = 0;

  const planned = (expectation: Expectation, rawDeadlineMs?: number): PlannedExpectation => {
    const graceMs = expectation.grace ? GRACE_MS : 0;
    const dueMs = Date.parse(expectation.dueAt) + graceMs;
    const deadlineMs = dueMs < farMs ? dueMs : undefined;
    return { expectation, graceMs, deadlineMs, rawDeadlineMs: rawDeadlineMs ?? deadlineMs ?? farMs };
  };
  const raise = (atMs: number, list: PlannedExpectation[]) => {
    const taskId = `${options.prefix}-task-${requests.length}`;
    requests.push({ kind: 'raise', atMs, agent: agent++ % options.agents, taskId, expectations: list });
    for (const p of list) {
      expectations.set(p.expectation.expectationId, p);
      const key = p.expectation.satisfiedBy.factKey;
      waiting.set(key, [...(waiting.get(key) ?? []), p.expectation.expectationId]);
      if (p.expectation.horizon) mix.withHorizon++;
      if (p.deadlineMs !== undefined) mix.dueInRun++;
    }
    mix.raises += list.length;
  };
  /** The satisfying fact of `e` at `atMs`, with its subject four times in five. */
  const satisfy = (atMs: number, e: Expectation) => {
    if (atMs >= D) return;
    satisfying.push({
      atMs: inStep(atMs),
      fact: { factKey: e.satisfiedBy.factKey, ...(random() < 0.8 ? { subject: e.subject } : {}) },
    });
  };
  const deadlineSoon = (offsetMs: number, low: number, high: number) => at(offsetMs + between(low, high));

  // Up to 80 expectations on one key, in the step's first fifth; one fact at half time satisfies them all, 10 s before
  // they are due. Fewer at a low rate, so that the rest of the mix (with its lapses) is there at every step.
  const hotKey = `${options.prefix}/hot-key`;
  const hotKeyFactMs = D / 2;
  const hotBatches = Math.max(1, Math.min(HOT_KEY_WAITERS / 10, Math.floor((HOT_KEY_SHARE * total) / 10)));
  for (let b = 0; b < hotBatches; b++) {
    const list = Array.from({ length: 10 }, (_, i) =>
      planned({
        ...expectationFor(`${options.prefix}-k${b}-${i}`, `${options.prefix}-K${b}`, at(hotKeyFactMs + 8_000), GRACE),
        satisfiedBy: { factKey: hotKey },
      }),
    );
    raise((b * 0.2 * D) / hotBatches, list);
    pool.push({ atMs: (b * 0.2 * D) / hotBatches + 1_000, subject: shipment(`${options.prefix}-K${b}`) });
    mix.hotKeyWaiters += 10;
  }
  satisfying.push({ atMs: hotKeyFactMs, fact: { factKey: hotKey } });

  // Ten on the hot subject with a horizon (it gets a fifth of all facts: none should stall), satisfied late.
  const hotRaiseMs = 0.1 * D;
  const onHot = Array.from({ length: 10 }, (_, i) =>
    planned({ ...expectationFor(`${options.prefix}-h${i}`, hotSubject.id, far), horizon: at(hotRaiseMs + 10_000) }),
  );
  raise(hotRaiseMs, onHot);
  for (const p of onHot)
    satisfying.push({ atMs: 0.8 * D, fact: { factKey: p.expectation.satisfiedBy.factKey, subject: hotSubject } });

  // The steady mix, spread over the step in a shuffled order.
  const rest = Math.max(0, total - mix.raises);
  const singles = Math.round(0.3 * rest);
  const batches = Math.round((0.5 * rest) / 10);
  const plans = Math.max(0, Math.round((rest - singles - batches * 10) / 3));
  const kinds = [...Array<string>(singles).fill('single'), ...Array<string>(batches).fill('batch')];
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  kinds.forEach((kind, k) => {
    const t = ((k + random()) * D) / kinds.length;
    if (kind === 'single') {
      mix.singles++;
      const id = `${options.prefix}-s${k}`;
      const subject = `${options.prefix}-S${k}`;
      const draw = random();
      let fate = FATES.find(([below]) => draw < below)![1];
      // A deadline or horizon that would fall past the step's end: satisfied soon instead.
      if ((fate === 'fact-before-deadline' || fate === 'no-fact') && t > D - DEADLINE_ROOM_MS) fate = 'soon';
      if ((fate === 'fed' || fate === 'starved') && t > D - HORIZON_ROOM_MS) fate = 'soon';
      if (fate === 'soon' || fate === 'open') {
        // Due months away; satisfied 2–15 s after its raise, or never.
        const p = planned(expectationFor(id, subject, far));
        raise(t, [p]);
        if (fate === 'soon') satisfy(t + between(2_000, 15_000), p.expectation);
        pool.push({ atMs: t + 1_000, subject: shipment(subject) });
      } else if (fate === 'fact-before-deadline' || fate === 'no-fact') {
        // Due 10–18 s after its raise, grace 2 s: its fact 2–4 s before the deadline, or never.
        const p = planned(expectationFor(id, subject, deadlineSoon(t, 10_000, 18_000), GRACE));
        raise(t, [p]);
        if (fate === 'fact-before-deadline') {
          satisfy(p.deadlineMs! - options.t0 - between(2_000, 4_000), p.expectation);
          mix.factBeforeDeadline++;
        }
        pool.push({ atMs: t + 1_000, subject: shipment(subject) });
      } else {
        // A horizon 8–14 s ahead: a fact on its subject before it (fed), or none at all (starved: a stall).
        const horizonMs = t + between(8_000, 14_000);
        const p = planned({ ...expectationFor(id, subject, far), horizon: at(horizonMs) });
        raise(t, [p]);
        if (fate === 'fed') {
          loose.push({
            atMs: inStep(t + between(2_000, horizonMs - t - 3_000)),
            fact: { factKey: `${options.prefix}/evt-fed-${k}`, subject: shipment(subject) },
          });
          pool.push({ atMs: t + 1_000, subject: shipment(subject) });
        }
      }
    } else {
      mix.batches++;
      const subject = `${options.prefix}-B${k}`;
      const inRun = random() < 0.5 && t <= D - DEADLINE_ROOM_MS;
      const horizon = random() < 1 / 3 && t <= D - HORIZON_ROOM_MS ? { horizon: at(t + 12_000) } : {};
      const dueAt = inRun ? deadlineSoon(t, 12_000, 20_000) : far;
      const list = Array.from({ length: 10 }, (_, i) =>
        planned({
          ...expectationFor(`${options.prefix}-b${k}-${i}`, subject, dueAt, inRun ? GRACE : undefined),
          ...horizon,
        }),
      );
      raise(t, list);
      list.forEach((p, i) => {
        if (inRun && i < 7) {
          satisfy(p.deadlineMs! - options.t0 - between(2_000, 4_000), p.expectation);
          mix.factBeforeDeadline++;
        } else if (!inRun && i < 5) satisfy(t + between(2_000, 15_000), p.expectation);
      });
      if (horizon.horizon)
        loose.push({
          atMs: inStep(t + between(3_000, 9_000)),
          fact: { factKey: `${options.prefix}/evt-batch-${k}`, subject: shipment(subject) },
        });
      pool.push({ atMs: t + 1_000, subject: shipment(subject) });
    }
  });

  // Plans of three on one shipment: pickup due 12 s on; transit after it and anchored on it (+10 s); delivery after it.
  for (let k = 0; k < plans; k++) {
    mix.plans++;
    const t = ((k + random()) * Math.max(D - PLAN_ROOM_MS, 1_000)) / plans;
    const subject = `${options.prefix}-P${k}`;
    const id = (step: string) => `${options.prefix}-p${k}-${step}`;
    const pickup = planned(expectationFor(id('a'), subject, at(t + 12_000), GRACE));
    const pickupFactMs = random() < 0.75 ? t + between(3_000, 6_000) : undefined;
    const transitProjected = at(t + 20_000);
    const transit = planned(
      {
        ...expectationFor(id('b'), subject, transitProjected, GRACE),
        after: [id('a')],
        anchor: { expectationId: id('a'), offset: 'PT10S' },
      },
      pickupFactMs === undefined ? undefined : options.t0 + pickupFactMs + 10_000 + GRACE_MS,
    );
    const delivery = planned({ ...expectationFor(id('c'), subject, far), after: [id('b')] });
    raise(t, [pickup, transit, delivery]);
    if (pickupFactMs !== undefined) {
      satisfy(pickupFactMs, pickup.expectation);
      mix.factBeforeDeadline++;
      // Transit's fact before its anchored deadline for two in three.
      if (random() < 2 / 3) {
        satisfy(pickupFactMs + between(6_000, 9_000), transit.expectation);
        mix.factBeforeDeadline++;
      }
    } else {
      // No pickup reported: transit's fact skips it.
      satisfy(t + between(7_000, 10_000), transit.expectation);
    }
    pool.push({ atMs: t + 1_000, subject: shipment(subject) });
  }

  // Re-deliveries of satisfying facts make the matching fifth; the hot key's and the hot subject's are not repeated
  // (the hot subject's share stays a fifth).
  const factTotal = mix.raises * 10;
  const firstSends = satisfying.filter((s) => s.fact.factKey !== hotKey && s.fact.subject?.id !== hotSubject.id);
  const repeats = Math.max(0, Math.round(factTotal / 5) - satisfying.length);
  for (let i = 0; i < repeats && firstSends.length > 0; i++) {
    const original = firstSends[Math.floor(random() * firstSends.length)]!;
    if (original.atMs + 1_000 < D)
      loose.push({ atMs: inStep(original.atMs + between(1_000, 8_000)), fact: original.fact });
  }

  // The unexpected rest: a fifth of all facts on the hot subject, the others with a subject five times in six.
  pool.sort((a, b) => a.atMs - b.atMs);
  /** How many of the pool were raised by `t`. */
  const raisedBy = (t: number) => {
    const later = pool.findIndex((entry) => entry.atMs > t);
    return later === -1 ? pool.length : later;
  };
  const hotFacts = Math.round(factTotal / 5);
  for (let i = 0; i < hotFacts; i++) {
    loose.push({
      atMs: random() * D,
      fact: { factKey: `${options.prefix}/hot-evt-${Math.floor(random() * Math.max(total, 1))}`, subject: hotSubject },
    });
  }
  const planSoFar = satisfying.length + loose.length;
  const unexpected = Math.max(0, factTotal - planSoFar);
  for (let i = 0; i < unexpected; i++) {
    const t = random() * D;
    const key = `${options.prefix}/evt-${Math.floor(random() * Math.max(3 * total, 1))}`;
    const draw = random();
    const known = raisedBy(t);
    let subject: Subject | undefined;
    if (draw < 0.5 && known > 0) subject = pool[Math.floor(random() * known)]!.subject;
    else if (draw < 5 / 6) subject = shipment(`${options.prefix}-U${Math.floor(random() * Math.max(total, 1))}`);
    loose.push({ atMs: t, fact: { factKey: key, ...(subject ? { subject } : {}) } });
  }

  for (const s of satisfying) requests.push({ kind: 'facts', atMs: s.atMs, facts: [s.fact] });
  loose.sort((a, b) => a.atMs - b.atMs);
  for (let i = 0; i < loose.length; i += 5) {
    const chunk = loose.slice(i, i + 5);
    requests.push({ kind: 'facts', atMs: chunk[0]!.atMs, facts: chunk.map((c) => c.fact) });
  }
  requests.sort((a, b) => a.atMs - b.atMs);

  for (const request of requests) {
    if (request.kind === 'raise') {
      mix.raiseRequests++;
      continue;
    }
    mix.factRequests++;
    for (const fact of request.facts) {
      mix.facts++;
      if (!waiting.has(fact.factKey)) mix.unexpectedFacts++;
      if (fact.subject) mix.factsWithSubject++;
      if (fact.subject?.id === hotSubject.id) mix.hotSubjectFacts++;
    }
  }
  return { requests, expectations, waiting, mix };
}
