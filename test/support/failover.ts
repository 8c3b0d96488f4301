/**
 * Two of everything on one namespace and task queue (issue 47): two `src/bridge.ts` and two `src/worker.ts` processes,
 * each of which can be SIGKILLed and started again as it was; a client that sends every request round-robin over the
 * bridges, as behind a load balancer, waiting `Retry-After` on a 429 or 503 and sending the same request again after a
 * connection error; the traffic (raises, the facts that satisfy them, feeds of facts nobody waits on); and what that
 * client can tell at the end, from answers, records and the lapses its agent received. test/cluster/failover.test.ts
 * runs a short version, bench/failover.ts the full one.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { addDuration } from '../../core/duration.js';
import { lapseMessageId } from '../../core/message-id.js';
import type { Expectation, Subject } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { lapseOf, type TestAgent } from './agent.js';
import { writePrincipalsFile } from './agents.js';
import { artifactUpdate, sendFollowingRetryAfter, unique } from './bridge.js';
import { dueExpectation } from './fixtures.js';
import { spawnWorker, type WorkerProcess } from './faults.js';
import { freePort } from './net.js';
import { LOOPBACK_AGENTS_ENV } from './outbound.js';
import { spawnEntry, type Spawned } from './processes.js';

/** One process of the fleet, killed and started again as it was (a bridge on the same port). */
export interface Member {
  readonly name: string;
  /** Starts it; resolves once it runs, with how long that took (ms). */
  start(): Promise<number>;
  /** SIGKILLs it and all it started; resolves, once it is gone, with the instant (epoch ms) of the kill. */
  kill(): Promise<number>;
}

export interface Fleet {
  readonly bridgeUrls: string[];
  readonly bridges: Member[];
  readonly workers: Member[];
  /** Kills every process still running. */
  stop(): Promise<void>;
}

export interface FleetOptions {
  address: string;
  taskQueue: string;
  principalsFile: string;
  dataDir: string;
  /** A prebuilt workflow bundle (WATCHER_WORKFLOW_BUNDLE): a restarted worker polls within seconds. */
  workflowBundle?: string;
}

/** Two workers, then two bridges on free ports, each a process of its own, on `options.taskQueue`. */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const common = {
    TEMPORAL_ADDRESS: options.address,
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    WATCHER_PRINCIPALS_FILE: options.principalsFile,
    WATCHER_DATA_DIR: options.dataDir,
  };
  const workers = [1, 2].map((n): Member => {
    let running: WorkerProcess | undefined;
    const bundle: Record<string, string> = options.workflowBundle
      ? { WATCHER_WORKFLOW_BUNDLE: options.workflowBundle }
      : {};
    return {
      name: `worker ${n}`,
      start: timed(async () => {
        running = await spawnWorker(options.address, options.taskQueue, options.principalsFile, bundle);
      }),
      kill: async () => {
        const at = Date.now();
        await running?.kill9();
        return at;
      },
    };
  });
  const ports = [await freePort(), await freePort()];
  const bridges = ports.map((port, i): Member => {
    let running: Spawned | undefined;
    return {
      name: `bridge ${i + 1}`,
      start: timed(async () => {
        running = spawnEntry('src/bridge.ts', { ...common, ...LOOPBACK_AGENTS_ENV, PORT: String(port) });
        await running.waitFor(/"msg":"bridge listening"/, 120_000);
      }),
      kill: async () => {
        const at = Date.now();
        await running?.stop('SIGKILL');
        return at;
      },
    };
  });
  const fleet = {
    bridgeUrls: ports.map((port) => `http://127.0.0.1:${port}`),
    bridges,
    workers,
    stop: async () => void (await Promise.all([...bridges, ...workers].map((member) => member.kill()))),
  };
  try {
    for (const member of [...workers, ...bridges]) await member.start();
  } catch (error) {
    await fleet.stop();
    throw error;
  }
  return fleet;
}

const timed = (start: () => Promise<void>) => async () => {
  const t0 = Date.now();
  await start();
  return Date.now() - t0;
};

/** One request as its client saw it: the first send, the answer that ended it (2xx: `answeredAt`), what it retried. */
export interface Exchange {
  sentAt: number;
  answeredAt?: number;
  status?: number;
  body?: any;
  /** Why each attempt but the last was sent again: `503 <detail>`, `fetch failed (ECONNREFUSED)`, ... */
  retries: string[];
}

/**
 * A client of the bridges in turn: each attempt goes to the next, as `sendFollowingRetryAfter` sends it again (a 429
 * or 503 after its Retry-After, no answer after 250 ms, the same body each time). Gives up `giveUpMs` after the first
 * send.
 */
export function roundRobin(urls: readonly string[], giveUpMs = 120_000) {
  let turn = 0;
  return async function deliver(path: string, token: string, json?: unknown): Promise<Exchange> {
    const exchange: Exchange = { sentAt: Date.now(), retries: [] };
    const next = () => `${urls[turn++ % urls.length]!}${path}`;
    try {
      const answer = await sendFollowingRetryAfter(next, { token, json }, giveUpMs, (why) =>
        exchange.retries.push(why),
      );
      Object.assign(exchange, { status: answer.status, body: answer.body });
      if (answer.status < 300) exchange.answeredAt = Date.now();
    } catch {
      // No answer from any bridge before giving up: `status` stays unset.
    }
    return exchange;
  };
}

export type Deliver = ReturnType<typeof roundRobin>;

interface RaiseRequest {
  kind: 'raise';
  atMs: number;
  taskId: string;
  expectations: Expectation[];
}

interface FactRequest {
  kind: 'facts';
  atMs: number;
  facts: Array<{ factKey: string; subject?: Subject }>;
  /** The expectation this fact satisfies; none for a feed of facts nobody waits on. */
  satisfies?: Expectation;
}

export type TrafficRequest = RaiseRequest | FactRequest;

export interface TrafficOptions {
  /** Of every id and key, so that runs on one cluster do not meet. */
  prefix: string;
  durationMs: number;
  /** A request raising three every so often: one that lapses, one satisfied 9 s before its deadline, one due in an hour. */
  raiseEveryMs: number;
  /** A request of `feedSize` facts nobody waits on, a fifth on one hot subject, every so often. */
  feedEveryMs: number;
  feedSize: number;
  /** Feed requests sent at once, as a feed that catches up does (default 1): the same rate, in bursts. */
  feedBurst?: number;
}

/** Each request at its offset from `t0` (epoch ms, which dueAt counts from), and what must become of each expectation. */
export function planTraffic(options: TrafficOptions, t0: number) {
  const requests: TrafficRequest[] = [];
  const lapsing: Expectation[] = [];
  const satisfied: Expectation[] = [];
  const { prefix } = options;
  for (let atMs = 0, n = 0; atMs < options.durationMs; atMs += options.raiseEveryMs, n++) {
    const due = (ms: number) => new Date(t0 + atMs + ms);
    const lapses = dueExpectation(`${prefix}-lapse-${n}`, due(8_000), { grace: 'PT1S' });
    const near = dueExpectation(`${prefix}-near-${n}`, due(12_000), { grace: 'PT1S' });
    const far = dueExpectation(`${prefix}-far-${n}`, due(3_600_000));
    lapsing.push(lapses);
    satisfied.push(near, far);
    requests.push(
      { kind: 'raise', atMs, taskId: `${prefix}-task-${n}`, expectations: [lapses, near, far] },
      { kind: 'facts', atMs: atMs + 4_000, facts: [{ ...near.satisfiedBy, subject: near.subject }], satisfies: near },
      { kind: 'facts', atMs: atMs + 2_000, facts: [far.satisfiedBy], satisfies: far },
    );
  }
  const hot = { type: 'shipment', id: `${prefix}-hot` };
  for (let atMs = 0, n = 0; atMs < options.durationMs; atMs += options.feedEveryMs, n++) {
    const facts = Array.from({ length: options.feedSize }, (_, i) => ({
      factKey: `feed/${prefix}/${n}/${i}`,
      ...(i % 5 === 0
        ? { subject: hot }
        : i % 2 === 1
          ? { subject: { type: 'shipment', id: `${prefix}-${n}-${i}` } }
          : {}),
    }));
    const burst = options.feedBurst ?? 1;
    requests.push({ kind: 'facts', atMs: Math.floor(n / burst) * burst * options.feedEveryMs, facts });
  }
  return { requests: requests.sort((a, b) => a.atMs - b.atMs), lapsing, satisfied };
}

export interface Tokens {
  agent: string;
  reporter: string;
  admin: string;
}

/** The fleet's principals (an agent whose card is `cardUrl`, a reporter, an admin) with fresh tokens, in a new file. */
export function writeFleetPrincipals(cardUrl: string): { tokens: Tokens; principalsFile: string } {
  const tokens = { agent: `agent-${unique()}`, reporter: `carrier-${unique()}`, admin: `ops-${unique()}` };
  const principalsFile = writePrincipalsFile(
    [
      { id: 'shipping-agent', roles: ['agent'], cardUrl },
      { id: 'carrier', roles: ['reporter'] },
      { id: 'ops', roles: ['admin'] },
    ],
    { tokens: { 'shipping-agent': tokens.agent, carrier: tokens.reporter, ops: tokens.admin } },
  );
  return { tokens, principalsFile };
}

export interface SentRequest {
  request: TrafficRequest;
  exchange: Exchange;
  /** The facts' observedAt, the same for every resend. */
  observedAt?: string;
}

/** Sends every request at `t0 + atMs`, whatever is still outstanding; resolves once each has ended. */
export async function sendTraffic(
  requests: readonly TrafficRequest[],
  deliver: Deliver,
  tokens: Tokens,
  t0: number,
): Promise<SentRequest[]> {
  const pending: Array<Promise<SentRequest>> = [];
  for (const request of requests) {
    await sleep(t0 + request.atMs - Date.now());
    if (request.kind === 'raise') {
      const body = artifactUpdate({ expectations: request.expectations }, request.taskId, `ctx-${request.taskId}`);
      pending.push(deliver('/a2a/events', tokens.agent, body).then((exchange) => ({ request, exchange })));
    } else {
      const observedAt = new Date().toISOString();
      const body = { facts: request.facts.map((fact) => ({ ...fact, observedAt })) };
      pending.push(deliver('/v1/facts', tokens.reporter, body).then((exchange) => ({ request, exchange, observedAt })));
    }
  }
  return Promise.all(pending);
}

/**
 * After the traffic: raises, on the first key of every feed, an expectation due in an hour. Each must be satisfied at
 * once, by the early fact its router kept: so the feed's facts were stored, though nobody waited on them.
 */
export async function raiseProbes(sent: readonly SentRequest[], deliver: Deliver, tokens: Tokens, prefix: string) {
  const feeds = sent.filter((s) => s.request.kind === 'facts' && !s.request.satisfies);
  const probes = feeds.map((feed, n) => ({
    observedAt: feed.observedAt!,
    expectation: dueExpectation(`${prefix}-probe-${n}`, new Date(Date.now() + 3_600_000), {
      satisfiedBy: { factKey: (feed.request as FactRequest).facts[0]!.factKey },
    }),
  }));
  const raised: SentRequest[] = [];
  for (let i = 0; i < probes.length; i += 50) {
    const expectations = probes.slice(i, i + 50).map((probe) => probe.expectation);
    const request: RaiseRequest = { kind: 'raise', atMs: 0, taskId: `${prefix}-probes-${i}`, expectations };
    const body = artifactUpdate({ expectations }, request.taskId, `ctx-${request.taskId}`);
    raised.push({ request, exchange: await deliver('/a2a/events', tokens.agent, body) });
  }
  return { probes, raised };
}

/** What the client saw go wrong; every list empty is the pass. */
export interface Verdict {
  /** Requests never answered 2xx, or answered with an item neither raised/unchanged nor accepted. */
  notApplied: string[];
  /** Records not in the state their traffic gives (after `waitMs`). */
  wrongState: string[];
  /** Expectations that should lapse and reached the agent under no messageId, or not the one of DESIGN 3.8. */
  lost: string[];
  /** Expectations whose lapse reached the agent under two messageIds or more. */
  doubled: string[];
  /** A lapse, to the agent or in the record, of an expectation whose fact was answered before its deadline. */
  backlog: string[];
  counts: {
    requests: number;
    raised: number;
    facts: number;
    lapsed: number;
    /** Satisfied ones whose fact the client had answered before the deadline (no lapse allowed). */
    factBeforeDeadline: number;
    /** Those whose fact was answered after their deadline (or never): a lapse, then the late fact, is allowed. */
    factAfterDeadline: number;
    probes: number;
    /** Lapse messages the agent received for this run, resends of one messageId included. */
    lapseMessages: number;
  };
  /** Of each expectation that lapsed: its deadline (dueAt + grace) and when its lapse first reached the agent. */
  lapses: Array<{ expectationId: string; deadlineMs: number; receivedAt: number }>;
}

const deadlineOf = (e: Expectation) => addDuration(Date.parse(e.dueAt), e.grace ?? 'PT0S');

/**
 * Reads every expectation's record through the bridges until it is what its traffic gives (lapsed and delivered, or
 * satisfied) or `waitMs` passed, then judges the answers, the records and what `agent` received.
 */
export async function judge(
  run: {
    sent: SentRequest[];
    lapsing: Expectation[];
    satisfied: Expectation[];
    probes: Array<{ expectation: Expectation; observedAt: string }>;
  },
  deliver: Deliver,
  tokens: Tokens,
  agent: TestAgent,
  waitMs: number,
): Promise<Verdict> {
  const notApplied = run.sent.flatMap(({ request, exchange }) => {
    const results: Array<{ result: string }> =
      exchange.body?.[request.kind === 'raise' ? 'expectations' : 'facts'] ?? [];
    const wanted = request.kind === 'raise' ? request.expectations.length : request.facts.length;
    const applied = results.filter((r) => ['raised', 'unchanged', 'accepted'].includes(r.result)).length;
    if (exchange.answeredAt !== undefined && applied === wanted) return [];
    const what = request.kind === 'raise' ? request.taskId : request.facts[0]!.factKey;
    return [
      `${what}: ${exchange.status ?? 'no answer'} ${JSON.stringify(exchange.body)}; ${exchange.retries.join('; ')}`,
    ];
  });
  const factAnswered = new Map<string, number | undefined>();
  for (const { request, exchange } of run.sent)
    if (request.kind === 'facts' && request.satisfies)
      factAnswered.set(request.satisfies.expectationId, exchange.answeredAt);
  const lapsing = new Set(run.lapsing.map((e) => e.expectationId));
  // A probe is satisfied by the very fact its feed sent, observedAt and all.
  const observedAt = new Map(run.probes.map((p) => [p.expectation.expectationId, Date.parse(p.observedAt)]));
  const done = (id: string, record: ExpectationRecord) =>
    lapsing.has(id)
      ? record.state === 'lapsed' &&
        record.lapses.length > 0 &&
        record.lapses.every((l) => l.delivery.status === 'delivered')
      : record.state === 'satisfied' &&
        (!observedAt.has(id) || Date.parse(record.observedAt ?? '') === observedAt.get(id));

  const all = [...run.lapsing, ...run.satisfied, ...run.probes.map((p) => p.expectation)];
  const records = new Map<string, ExpectationRecord>();
  const ends = Date.now() + waitMs;
  for (let open = all; open.length > 0 && Date.now() < ends; await sleep(1_000)) {
    for (const e of open) {
      const read = await deliver(`/v1/expectations/${encodeURIComponent(e.expectationId)}`, tokens.admin);
      if (read.status === 200) records.set(e.expectationId, read.body as ExpectationRecord);
    }
    open = open.filter((e) => !records.has(e.expectationId) || !done(e.expectationId, records.get(e.expectationId)!));
  }

  const received = new Map<string, Array<{ messageId: string; receivedAt: number }>>();
  for (const message of agent.received) {
    const id = lapseOf(message)?.expectationId;
    if (id === undefined || !all.some((e) => e.expectationId === id)) continue;
    received.set(id, [
      ...(received.get(id) ?? []),
      { messageId: message.message.messageId, receivedAt: message.receivedAt.getTime() },
    ]);
  }
  const verdict: Verdict = {
    notApplied,
    wrongState: [],
    lost: [],
    doubled: [],
    backlog: [],
    counts: {
      requests: run.sent.length,
      raised: run.lapsing.length + run.satisfied.length,
      facts: run.sent.reduce((n, s) => n + (s.request.kind === 'facts' ? s.request.facts.length : 0), 0),
      lapsed: 0,
      factBeforeDeadline: 0,
      factAfterDeadline: 0,
      probes: run.probes.length,
      lapseMessages: [...received.values()].reduce((n, list) => n + list.length, 0),
    },
    lapses: [],
  };
  for (const e of all) {
    const id = e.expectationId;
    const record = records.get(id);
    const messageIds = [...new Set((received.get(id) ?? []).map((r) => r.messageId))];
    if (!record || !done(id, record)) verdict.wrongState.push(`${id}: ${JSON.stringify(record ?? 'never read')}`);
    if (lapsing.has(id)) {
      const expected = lapseMessageId(id, 'overdue', e.dueAt);
      if (!messageIds.includes(expected)) verdict.lost.push(`${id}: received ${JSON.stringify(messageIds)}`);
      else
        verdict.lapses.push({
          expectationId: id,
          deadlineMs: deadlineOf(e),
          receivedAt: received.get(id)![0]!.receivedAt,
        });
      if (messageIds.length > 1) verdict.doubled.push(`${id}: ${messageIds.join(', ')}`);
      if (record?.state === 'lapsed') verdict.counts.lapsed++;
      continue;
    }
    const answeredAt = factAnswered.get(id);
    // No lapse is allowed when the fact was answered before the deadline, nor for a probe (due in an hour, no fact
    // of its own); a fact never answered allows one (and is reported in notApplied).
    const beforeDeadline = !factAnswered.has(id) || (answeredAt !== undefined && answeredAt < deadlineOf(e));
    if (beforeDeadline && (messageIds.length > 0 || (record?.lapses.length ?? 0) > 0))
      verdict.backlog.push(
        `${id}: fact answered ${answeredAt ? new Date(answeredAt).toISOString() : 'never (a probe)'}, deadline ${e.dueAt} + ${e.grace}`,
      );
    if (messageIds.length > 1) verdict.doubled.push(`${id}: ${messageIds.join(', ')}`);
    if (factAnswered.has(id)) verdict.counts[beforeDeadline ? 'factBeforeDeadline' : 'factAfterDeadline']++;
  }
  return verdict;
}

export interface FailoverOptions extends TrafficOptions {
  /** When (from the traffic's start) the first bridge, then the first worker, is SIGKILLed and started again. */
  killBridgeAtMs: number;
  killWorkerAtMs: number;
  /** How long a request may be retried; how long the records may take to reach their end at the end. */
  giveUpMs: number;
  judgeWaitMs: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

/**
 * The traffic over `fleet`'s bridges, with one bridge then one worker SIGKILLed and started again beside it (the
 * operator's part: the clients never wait for the watcher's state before a request); then the probes of the feeds,
 * and the verdict.
 */
export async function runFailover(fleet: Fleet, agent: TestAgent, tokens: Tokens, options: FailoverOptions) {
  const log = options.log ?? (() => {});
  const t0 = Date.now() + 1_000;
  const plan = planTraffic(options, t0);
  const deliver = roundRobin(fleet.bridgeUrls, options.giveUpMs);
  const sending = sendTraffic(plan.requests, deliver, tokens, t0);
  const restart = async (member: Member, atMs: number) => {
    await sleep(t0 + atMs - Date.now());
    const at = await member.kill();
    const restartMs = await member.start();
    log(`${member.name} SIGKILLed and running again after ${restartMs} ms`);
    return { at, restartMs };
  };
  const kills = (async () => {
    const bridge = await restart(fleet.bridges[0]!, options.killBridgeAtMs);
    return { bridge, worker: await restart(fleet.workers[0]!, options.killWorkerAtMs) };
  })();
  const [sent, killed] = await Promise.all([sending, kills]);
  const trafficEnd = Date.now();
  log(`every request answered or given up; ${plan.lapsing.length} lapses to come; probing the feeds`);
  const { probes, raised } = await raiseProbes(sent, deliver, tokens, options.prefix);
  const verdict = await judge(
    { ...plan, sent: [...sent, ...raised], probes },
    deliver,
    tokens,
    agent,
    options.judgeWaitMs,
  );
  return { t0, plan, sent, killed, trafficEnd, verdict };
}
