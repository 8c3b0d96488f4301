/**
 * What a router stored, read backwards from its history when an expectation decides (DESIGN 3.3), so that the
 * watcher's own backlog never fabricates a lapse; the folds are pure (test/unit/activities/history-reads.test.ts), the
 * reads are tested on the recorded router histories (test/unit/activities/history-reads-recorded.test.ts).
 */
import type { Client } from '@temporalio/client';
import proto, { type temporal } from '@temporalio/proto';
import { decodePayloads } from './payloads.js';
import type { Fact } from '../core/types.js';
import { timestampMs } from '../core/timestamps.js';
import {
  factsSignal,
  recordFactUpdate,
  type FactBatch,
  type FactRouterInput,
  type RoutedFact,
  type SubjectFact,
} from '../workflows/messages.js';
import type { StoredFacts, StoredFactsInput } from '../workflows/activity-types.js';
import { carriedObservations, dedupeKey, observedFact } from '../workflows/key-observations.js';

/** The most events one read decodes (a router continues as new well before: core/limits.ts ROUTER_EVENT_BUDGET). */
export const MAX_READ_EVENTS = 5_000;

/** How far before the raise a backward read goes on, for a bridge clock up to a minute ahead of the server's. */
export const CLOCK_MARGIN_MS = 60_000;

/** One event of a router's run that matters to a read, decoded, oldest first. */
export type RouterEvent =
  | { kind: 'started'; input: FactRouterInput }
  | { kind: 'facts'; batch: FactBatch }
  | { kind: 'recordFact'; fact: Fact };

/**
 * A router's run as read: its events oldest first; `complete` when the read reached back past the raise or to the
 * run's start (whose carried state is then the first event), rather than stopping at MAX_READ_EVENTS; `fromStart` when
 * it reached the run's start, so that it serves a decision however far back it looks; `bytes`, the payload bytes of
 * the events it decoded.
 */
export interface RouterRun {
  events: RouterEvent[];
  complete: boolean;
  fromStart?: boolean;
  bytes?: number;
  /**
   * Epoch ms up to which the run holds everything stored in it: the read's start, or, while a workflow task of the
   * router was in flight, that task's start (what reached it since is buffered by the server, outside the history).
   */
  storedThroughMs?: number;
}

const receivedMs = (fact: { receivedAt?: string }): number =>
  fact.receivedAt === undefined ? Number.NaN : Date.parse(fact.receivedAt);
const within = (ms: number, sinceMs: number, untilMs: number): boolean => ms >= sinceMs && ms <= untilMs;

/**
 * The first fact with `factKey` that the router took as new (never a re-delivery it would answer `duplicate`) and that
 * a bridge received between `sinceMs` and `untilMs`; what the run carried over counts too (the key's latest fact, a
 * forward to `expectationWorkflowId` still to send, and each observation it remembers with when it was received: a
 * fact received in time but followed by a later one before the router continued as new is only there, 12-07).
 */
export function firstKeyFact(
  run: RouterRun,
  query: { factKey: string; expectationWorkflowId: string; sinceMs: number; untilMs: number },
): RoutedFact | undefined {
  const seen = new Set<string>();
  let first: RoutedFact | undefined;
  const consider = (fact: RoutedFact | undefined) => {
    if (!fact || fact.factKey !== query.factKey || !within(receivedMs(fact), query.sinceMs, query.untilMs)) return;
    if (!first || receivedMs(fact) < receivedMs(first)) first = fact;
  };
  const take = (fact: Fact) => {
    if (fact.factKey !== query.factKey) return;
    const key = dedupeKey(fact);
    if (seen.has(key)) return;
    seen.add(key);
    consider(fact);
  };
  for (const event of run.events) {
    if (event.kind === 'started') {
      const carried = event.input.carried;
      const state = carried?.keys.find((key) => key.factKey === query.factKey);
      for (const entry of carried?.outbox ?? [])
        if (entry.workflowId === query.expectationWorkflowId) consider(entry.fact);
      // The latest first: the same observation rebuilt from `seen` (received at the same instant) does not replace it.
      consider(state?.latest);
      for (const [observation, receivedAt] of carriedObservations(state)) {
        seen.add(observation);
        if (!Number.isNaN(receivedAt)) consider(observedFact(query.factKey, observation, receivedAt));
      }
    } else if (event.kind === 'facts') {
      for (const fact of event.batch.facts ?? []) take(fact);
    } else {
      take(event.fact);
    }
  }
  return first;
}

/** What a router stored of one subject's facts received in a window (StoredFacts.subject). */
export type SubjectHeard = NonNullable<StoredFacts['subject']>;

/** The facts on `subject` received between `sinceMs` and `untilMs`: the one observed last, and one by `horizonMs`. */
// Where the read cannot tell (the subject let go of, the read cut short), it says a fact was heard: never a stall.
export function subjectFacts(
  run: RouterRun,
  query: { subject: { type: string; id: string }; sinceMs: number; untilMs: number; horizonMs?: number },
): SubjectHeard {
  const same = (fact: SubjectFact) => fact.subject.type === query.subject.type && fact.subject.id === query.subject.id;
  let latest: SubjectFact | undefined;
  let heardByHorizon = false;
  let uncertain = !run.complete;
  const consider = (fact: SubjectFact | undefined) => {
    if (!fact || !same(fact) || !within(receivedMs(fact), query.sinceMs, query.untilMs)) return;
    if (!latest || Date.parse(fact.observedAt) > Date.parse(latest.observedAt)) latest = fact;
    if (query.horizonMs !== undefined && receivedMs(fact) <= query.horizonMs) heardByHorizon = true;
  };
  for (const event of run.events) {
    if (event.kind === 'started') {
      const carried = event.input.carried;
      const entry = carried?.subjects?.find((candidate) => same(candidate.latest));
      consider(entry?.latest);
      consider(entry?.lastReceived);
      // Carried over: facts received between the raise and the last one carried may be summarised away.
      if (entry && receivedMs(entry.lastReceived) >= query.sinceMs) uncertain = true;
      const forgotten = carried?.subjectsForgottenThrough;
      if (!entry && forgotten !== undefined && Date.parse(forgotten) >= query.sinceMs) uncertain = true;
    } else if (event.kind === 'facts') {
      for (const fact of event.batch.subjects ?? []) consider(fact);
    }
  }
  if (uncertain && query.horizonMs !== undefined && !heardByHorizon) heardByHorizon = true;
  return { ...(latest ? { latest } : {}), ...(query.horizonMs !== undefined ? { heardByHorizon } : {}) };
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** When the server wrote an event, epoch ms. */
function eventMs(event: HistoryEvent): number {
  return event.eventTime ? timestampMs(event.eventTime) : 0;
}

/** The first decoded payload, or undefined when it cannot be decoded (a removed key): skipped, never retried. */
async function decodedFirst(client: Client, payloads: temporal.api.common.v1.IPayload[] | null | undefined) {
  try {
    return (await decodePayloads(client, payloads))[0];
  } catch {
    return undefined;
  }
}

async function decodeEvent(client: Client, event: HistoryEvent): Promise<RouterEvent | undefined> {
  const started = event.workflowExecutionStartedEventAttributes;
  if (started) {
    const input = (await decodedFirst(client, started.input?.payloads)) as FactRouterInput | undefined;
    return input ? { kind: 'started', input } : undefined;
  }
  const signaled = event.workflowExecutionSignaledEventAttributes;
  if (signaled?.signalName === factsSignal.name) {
    const batch = (await decodedFirst(client, signaled.input?.payloads)) as FactBatch | undefined;
    return batch ? { kind: 'facts', batch } : undefined;
  }
  const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
  if (request?.name === recordFactUpdate.name) {
    const fact = (await decodedFirst(client, request.args?.payloads)) as Fact | undefined;
    return fact ? { kind: 'recordFact', fact } : undefined;
  }
  return undefined;
}

const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

/**
 * How long one read waits for a router's workflow task in flight to end before it fails (and its local activity
 * retries it): the server buffers what is signalled to a workflow while one of its tasks is in flight and writes it to
 * the history only once the task ends, so until then a read cannot see it. A router task ends within the routers'
 * workflow task timeout (core/limits.ts ROUTER_WORKFLOW_TASK_TIMEOUT_MS), timed out if need be.
 */
export const IN_FLIGHT_WAIT_MS = 20_000;

/** How often a read waiting for a router's task in flight looks again at the router's newest event. */
const IN_FLIGHT_POLL_MS = 250;

/** A router's workflow task has been in flight since before the time a read must hold everything stored by. */
export class RouterTaskInFlightError extends Error {
  constructor(workflowId: string, sinceMs: number, storedByMs: number) {
    super(
      `router ${workflowId} has had a workflow task in flight since ${new Date(sinceMs).toISOString()}: what was ` +
        `signalled to it since is buffered by the server, outside its history, so a read cannot hold everything ` +
        `stored by ${new Date(storedByMs).toISOString()} until the task ends (completed, failed or timed out)`,
    );
    this.name = 'RouterTaskInFlightError';
  }
}

/** When a workflow task of the run started, if the newest event read says one is in flight. */
function inFlightSinceMs(newest: HistoryEvent | undefined): number | undefined {
  return newest?.workflowTaskStartedEventAttributes ? eventMs(newest) : undefined;
}

/**
 * When the router's workflow task in flight started, as the server's mutable state says: the only place that knows of
 * a retry after a failed or timed-out task, whose events stay out of the history (transient) until it completes while
 * the server buffers what is signalled meanwhile; undefined when none is in flight or the server does not say.
 */
async function pendingTaskStartedMs(client: Client, workflowId: string): Promise<number | undefined> {
  const described = await client.workflowService.describeWorkflowExecution({
    namespace: client.options.namespace,
    execution: { workflowId },
  });
  const pending = described.pendingWorkflowTask;
  const started = proto.temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED;
  return pending?.state === started && pending.startedTime ? timestampMs(pending.startedTime) : undefined;
}

interface HistoryRead {
  oldestFirst: HistoryEvent[];
  complete: boolean;
  fromStart: boolean;
}

/**
 * The current run of router `workflowId`, read backwards from now until an event written CLOCK_MARGIN_MS before
 * `sinceMs`, the run's start, or MAX_READ_EVENTS; undefined when there is no such router (nothing was ever stored).
 * It holds everything stored in the router by `storedByMs`: while a task of the router that started earlier is in
 * flight (a first attempt, or a retry that only the server's description shows), the read waits for it to end
 * (IN_FLIGHT_WAIT_MS at most, then RouterTaskInFlightError).
 * A server without the backward read (the time-skipping test server) is read forwards, the newest MAX_READ_EVENTS kept.
 */
export async function readRouterRun(
  client: Client,
  workflowId: string,
  sinceMs: number,
  storedByMs = Number.NEGATIVE_INFINITY,
  now: () => number = Date.now,
): Promise<RouterRun | undefined> {
  const deadlineMs = now() + IN_FLIGHT_WAIT_MS;
  let read: HistoryRead;
  let storedThroughMs: number;
  try {
    for (;;) {
      const startedMs = now();
      // Asked before the read: a task not in flight then has flushed what it buffered into the history read after.
      const pendingMs = await pendingTaskStartedMs(client, workflowId);
      read = await readHistory(client, workflowId, sinceMs);
      const inFlightMs = pendingMs ?? inFlightSinceMs(read.oldestFirst.at(-1));
      storedThroughMs = inFlightMs ?? startedMs;
      if (inFlightMs === undefined || inFlightMs >= storedByMs) break;
      await taskEnded(client, workflowId, inFlightMs, () => {
        if (now() > deadlineMs) throw new RouterTaskInFlightError(workflowId, inFlightMs, storedByMs);
      });
    }
  } catch (error) {
    if ((error as { code?: number }).code === NOT_FOUND) return undefined;
    throw error;
  }
  const events: RouterEvent[] = [];
  let bytes = 0;
  for (const event of read.oldestFirst) {
    const decoded = await decodeEvent(client, event);
    if (!decoded) continue;
    events.push(decoded);
    bytes += payloadBytes(event);
  }
  return { events, complete: read.complete, fromStart: read.fromStart, bytes, storedThroughMs };
}

/** Backwards in pages of `pageSize` where the server can, forwards where it cannot. */
async function readHistory(client: Client, workflowId: string, sinceMs: number, pageSize = 500): Promise<HistoryRead> {
  try {
    return await readBackwards(client, workflowId, sinceMs, pageSize);
  } catch (error) {
    if ((error as { code?: number }).code !== UNIMPLEMENTED) throw error;
    return readForwards(client, workflowId);
  }
}

/**
 * Resolves once the task in flight since `inFlightMs` has ended: the server no longer has it started, and the router's
 * newest event is not its start (its buffered events are then in the history); `giveUp` throws when the wait has
 * lasted too long.
 */
async function taskEnded(client: Client, workflowId: string, inFlightMs: number, giveUp: () => void): Promise<void> {
  for (;;) {
    giveUp();
    await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_POLL_MS));
    if ((await pendingTaskStartedMs(client, workflowId)) === inFlightMs) continue;
    // One event: a backward read that must reach back past the future stops at its first page.
    const newest = (await readHistory(client, workflowId, Number.POSITIVE_INFINITY, 1)).oldestFirst.at(-1);
    if (inFlightSinceMs(newest) !== inFlightMs) return;
  }
}

async function readBackwards(
  client: Client,
  workflowId: string,
  sinceMs: number,
  pageSize: number,
): Promise<HistoryRead> {
  const newestFirst: HistoryEvent[] = [];
  let complete = false;
  let fromStart = false;
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    const page = await client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: client.options.namespace,
      execution: { workflowId },
      maximumPageSize: pageSize,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const event of page.history?.events ?? []) {
      newestFirst.push(event);
      if (event.workflowExecutionStartedEventAttributes) fromStart = true;
      if (fromStart || eventMs(event) < sinceMs - CLOCK_MARGIN_MS) complete = true;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    if (!nextPageToken) complete = fromStart = true;
    if (complete || newestFirst.length >= MAX_READ_EVENTS) break;
  }
  return { oldestFirst: newestFirst.reverse(), complete, fromStart };
}

async function readForwards(client: Client, workflowId: string): Promise<HistoryRead> {
  const events: HistoryEvent[] = [];
  let dropped = false;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId },
      maximumPageSize: 1000,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    events.push(...(page.history?.events ?? []));
    if (events.length > MAX_READ_EVENTS) {
      events.splice(0, events.length - MAX_READ_EVENTS);
      dropped = true;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { oldestFirst: events, complete: !dropped, fromStart: !dropped };
}

/** The bytes of the payload an event carries that a read decodes (a start's input, a signal's, an update's). */
function payloadBytes(event: HistoryEvent): number {
  const payloads =
    event.workflowExecutionStartedEventAttributes?.input?.payloads ??
    event.workflowExecutionSignaledEventAttributes?.input?.payloads ??
    event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads ??
    [];
  return payloads.reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
}

/**
 * How long before a decision everything a read serves it must hold was stored: a fact received by the deadline is
 * stored within the fact wait, and the settle interval keeps this margin beyond it (DESIGN 3.3).
 */
export const SHARED_READ_MS = 1_000;

/**
 * How long a read is kept for decisions made late, which it serves when it holds everything stored by them: a burst of
 * lapses due at one instant, worked through for minutes, reads each router once rather than once a lapse (at 100,000
 * open a read decodes a router's carried state, about 170 KB).
 */
export const KEPT_READ_MS = 60_000;

/** The most payload bytes the kept reads hold together, the oldest let go first. */
export const MAX_KEPT_READ_BYTES = 16 * 1024 * 1024;

interface KeptRead {
  startedMs: number;
  sinceMs: number;
  run: Promise<RouterRun | undefined>;
  /** Set once the read is done: it reached the run's start, the payload bytes it holds, and what it holds. */
  done?: { fromStart: boolean; bytes: number; storedThroughMs: number };
}

/**
 * The router reads of one worker: a read serves every decision that needs the same router and reaches no further back,
 * as long as it holds everything stored by the decision (less SHARED_READ_MS).
 */
export class RouterReads {
  /** By router, oldest read first. */
  private readonly reads = new Map<string, KeptRead>();

  constructor(
    private readonly client: Client,
    private readonly now: () => number = Date.now,
  ) {}

  async read(workflowId: string, sinceMs: number, decidedAtMs: number): Promise<RouterRun | undefined> {
    const storedByMs = decidedAtMs - SHARED_READ_MS;
    this.letGo(this.now());
    const found = this.reads.get(workflowId);
    const reaches = (entry: KeptRead) => entry.done?.fromStart === true || entry.sinceMs <= sinceMs;
    const holds = (entry: KeptRead) => entry.done !== undefined && entry.done.storedThroughMs >= storedByMs;
    if (found && reaches(found)) {
      if (!found.done && found.startedMs >= storedByMs) await found.run.catch(() => undefined);
      if (holds(found)) return found.run;
    }
    return this.fresh(workflowId, sinceMs, storedByMs);
  }

  private fresh(workflowId: string, sinceMs: number, storedByMs: number): Promise<RouterRun | undefined> {
    const startedMs = this.now();
    const run = readRouterRun(this.client, workflowId, sinceMs, storedByMs, this.now);
    const entry: KeptRead = { startedMs, sinceMs, run };
    this.reads.delete(workflowId);
    this.reads.set(workflowId, entry);
    run.then(
      (done) => {
        entry.done = {
          fromStart: done?.fromStart === true || done === undefined,
          bytes: done?.bytes ?? 0,
          storedThroughMs: done?.storedThroughMs ?? startedMs,
        };
        this.letGo(this.now());
      },
      () => {
        if (this.reads.get(workflowId) === entry) this.reads.delete(workflowId);
      },
    );
    return run;
  }

  /** Lets go of the reads kept past KEPT_READ_MS, then of the oldest while they hold over MAX_KEPT_READ_BYTES. */
  private letGo(nowMs: number): void {
    let bytes = 0;
    for (const [id, entry] of this.reads) {
      if (nowMs - entry.startedMs > KEPT_READ_MS) this.reads.delete(id);
      else bytes += entry.done?.bytes ?? 0;
    }
    for (const [id, entry] of this.reads) {
      if (bytes <= MAX_KEPT_READ_BYTES) break;
      bytes -= entry.done?.bytes ?? 0;
      this.reads.delete(id);
    }
  }
}

/** What the routers of an expectation stored for the decision it is about to make (ClientActivities.storedFacts). */
export async function storedFacts(reads: RouterReads, input: StoredFactsInput): Promise<StoredFacts> {
  const runOf = (workflowId: string) => reads.read(workflowId, input.sinceMs, input.untilMs);
  const result: StoredFacts = {};
  if (input.key) {
    // Back to the early facts' window: a fact the router kept before the raise satisfies too (DESIGN 3.2).
    const sinceMs = Math.min(input.key.earliestMs ?? input.sinceMs, input.sinceMs);
    const run = await reads.read(input.key.routerWorkflowId, sinceMs, input.untilMs);
    const fact =
      run &&
      firstKeyFact(run, {
        factKey: input.key.factKey,
        expectationWorkflowId: input.expectationWorkflowId,
        sinceMs,
        untilMs: input.key.untilMs,
      });
    if (fact) result.fact = fact;
  }
  if (input.subject) {
    const run = await runOf(input.subject.routerWorkflowId);
    const query = {
      subject: input.subject.subject,
      sinceMs: input.sinceMs,
      untilMs: input.untilMs,
      ...(input.subject.horizonMs !== undefined ? { horizonMs: input.subject.horizonMs } : {}),
    };
    result.subject = run
      ? subjectFacts(run, query)
      : input.subject.horizonMs !== undefined
        ? { heardByHorizon: false }
        : {};
  }
  return result;
}
