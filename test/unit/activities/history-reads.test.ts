/**
 * The folds of activities/history-reads.ts over a router's run as read: which stored fact with a key satisfies an
 * overdue, and what a subject's stored facts say of a stall and of `lastFactAt`. `receivedAt` alone decides.
 */
import { describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  firstKeyFact,
  IN_FLIGHT_WAIT_MS,
  KEPT_READ_MS,
  MAX_KEPT_READ_BYTES,
  readRouterRun,
  RouterReads,
  RouterTaskInFlightError,
  SHARED_READ_MS,
  storedFacts,
  subjectFacts,
  type RouterEvent,
  type RouterRun,
} from '../../../activities/history-reads.js';
import type { Fact } from '../../../core/types.js';
import { factsSignal, type SubjectFact } from '../../../workflows/messages.js';
import { fact, subjectFact } from '../../support/fixtures.js';

const T = Date.parse('2026-12-01T00:00:00Z');
const HOUR_MS = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const subject = { type: 'shipment', id: 'S1' };
const self = 'expectation:e1';

const keyed = (factKey: string, receivedMs: number, extra: Partial<Fact> = {}): Fact =>
  fact(factKey, { observedAt: iso(T - 60_000), receivedAt: iso(receivedMs), ...extra });
const onSubject = (receivedMs: number, observedMs: number, of = subject): SubjectFact =>
  subjectFact(of, 'scan', observedMs, receivedMs);
const run = (events: RouterEvent[], complete = true): RouterRun => ({ events, complete });
const started = (
  carried?: NonNullable<Extract<RouterEvent, { kind: 'started' }>['input']['carried']>,
): RouterEvent => ({
  kind: 'started',
  input: { shard: 1, retention: 'P7D', ...(carried ? { carried } : {}) },
});
const batch = (facts: Fact[] = [], subjects: SubjectFact[] = []): RouterEvent => ({
  kind: 'facts',
  batch: { facts, subjects },
});

describe('firstKeyFact', () => {
  const query = { factKey: 'k', expectationWorkflowId: self, sinceMs: T, untilMs: T + 60_000 };

  it('finds the first fact with the key received between the raise and the deadline, by signal or by update', () => {
    const byUpdate = keyed('k', T + 20_000, { source: 'other' });
    const events = [started(), batch([keyed('other', T + 1_000)]), { kind: 'recordFact', fact: byUpdate } as const];
    expect(firstKeyFact(run(events), query)).toEqual(byUpdate);
    expect(
      firstKeyFact(run([started(), batch([keyed('k', T + 30_000), keyed('k', T + 10_000, { source: 'b' })])]), query)
        ?.receivedAt,
    ).toBe(iso(T + 10_000));
  });

  it('counts nothing received before the raise or after the deadline, whenever the server wrote it', () => {
    expect(
      firstKeyFact(run([batch([keyed('k', T - 1)]), batch([keyed('k', T + 60_001, { source: 'b' })])]), query),
    ).toBe(undefined);
  });

  it('never counts a re-delivery the router would answer duplicate, from this run or carried over', () => {
    const first = keyed('k', T - 5_000);
    const again = keyed('k', T + 5_000);
    expect(firstKeyFact(run([started(), batch([first]), batch([again])]), query)).toBe(undefined);
    const carried = started({
      keys: [{ factKey: 'k', subscribers: [], seen: [`${first.observedAt}|feed`] }],
    });
    expect(firstKeyFact(run([carried, batch([again])]), query)).toBe(undefined);
  });

  it('counts a fact received in time that only the carried dedupe window remembers: a later one became the latest before the router continued as new', () => {
    const inTime = keyed('k', T + 10_000, { observedAt: iso(T + 9_000) });
    const later = keyed('k', T + 70_000, { observedAt: iso(T + 69_000) });
    const carried = started({
      keys: [
        {
          factKey: 'k',
          subscribers: [],
          latest: later,
          seen: [`${inTime.observedAt}|feed`, `${later.observedAt}|feed`],
          seenAt: [T + 10_000, T + 70_000],
        },
      ],
    });
    expect(firstKeyFact(run([carried, batch([later])]), query)).toEqual({
      factKey: 'k',
      observedAt: inTime.observedAt,
      source: 'feed',
      receivedAt: inTime.receivedAt,
    });
    // Received before the raise, or at an instant the carried state does not know: not counted.
    const unknownAt = started({
      keys: [{ factKey: 'k', subscribers: [], latest: later, seen: [`${inTime.observedAt}|feed`] }],
    });
    expect(firstKeyFact(run([unknownAt]), query)).toBe(undefined);
    expect(firstKeyFact(run([carried]), { ...query, sinceMs: T + 11_000 })).toBe(undefined);
  });

  it('counts what the run carried over: a forward to this expectation still to send', () => {
    const forward = keyed('k', T + 1_000);
    const carried = started({ keys: [], outbox: [{ workflowId: self, fact: forward }] });
    expect(firstKeyFact(run([carried]), query)).toEqual(forward);
  });
});

describe('subjectFacts', () => {
  const query = { subject, sinceMs: T, untilMs: T + 120_000, horizonMs: T + 60_000 };

  it('rules a stall out with a fact on the subject received by the horizon, and gives the latest observed', () => {
    const events = [started(), batch([], [onSubject(T + 10_000, T + 5_000), onSubject(T + 90_000, T + 1_000)])];
    expect(subjectFacts(run(events), query)).toEqual({
      latest: onSubject(T + 10_000, T + 5_000),
      heardByHorizon: true,
    });
  });

  it('does not: with only facts received before the raise, after the horizon, or on another subject', () => {
    const events = [
      started(),
      batch(
        [],
        [onSubject(T - 1, T - 1), onSubject(T + 70_000, T + 70_000), onSubject(T + 1_000, T, { type: 'x', id: 'S1' })],
      ),
    ];
    expect(subjectFacts(run(events), query)).toEqual({
      latest: onSubject(T + 70_000, T + 70_000),
      heardByHorizon: false,
    });
  });

  it('says heard where it cannot tell: a read cut short, or the subject let go of after the raise', () => {
    expect(subjectFacts(run([batch()], false), query).heardByHorizon).toBe(true);
    const forgotten = started({ keys: [], subjectsForgottenThrough: iso(T + 1_000) });
    expect(subjectFacts(run([forgotten]), query).heardByHorizon).toBe(true);
    const forgottenBefore = started({ keys: [], subjectsForgottenThrough: iso(T - 1_000) });
    expect(subjectFacts(run([forgottenBefore]), query).heardByHorizon).toBe(false);
  });

  it('reads the subject carried over continue-as-new', () => {
    const fact = onSubject(T + 2_000, T + 2_000);
    const carried = started({ keys: [], subjects: [{ subject, latest: fact, lastReceived: fact }] });
    expect(subjectFacts(run([carried]), query)).toEqual({ latest: fact, heardByHorizon: true });
  });
});

describe('storedFacts before an overdue', () => {
  /** Reads that serve `events` for the key's router and record how far back each read was asked to reach. */
  function readsOf(events: RouterEvent[]) {
    const asked: Array<{ workflowId: string; sinceMs: number }> = [];
    const reads = {
      read: async (workflowId: string, sinceMs: number) => {
        asked.push({ workflowId, sinceMs });
        return run(events);
      },
    } as unknown as RouterReads;
    return { reads, asked };
  }
  const input = (earliestMs?: number) => ({
    expectationWorkflowId: self,
    sinceMs: T,
    untilMs: T + 63_000,
    key: { routerWorkflowId: 'facts:q:001', factKey: 'k', untilMs: T + 60_000, ...(earliestMs ? { earliestMs } : {}) },
  });

  it('counts an early fact the router kept before the raise, however late its forward: the read reaches back for it', async () => {
    const early = keyed('k', T - 2_000);
    const { reads, asked } = readsOf([started(), batch([early])]);
    await expect(storedFacts(reads, input(T - 7 * 24 * HOUR_MS))).resolves.toEqual({ fact: early });
    expect(asked).toEqual([{ workflowId: 'facts:q:001', sinceMs: T - 7 * 24 * HOUR_MS }]);
  });

  it('counts no fact received before the early window, nor one before the raise when no window is given', async () => {
    const old = keyed('k', T - 2 * HOUR_MS);
    await expect(storedFacts(readsOf([started(), batch([old])]).reads, input(T - HOUR_MS))).resolves.toEqual({});
    const early = keyed('k', T - 2_000);
    await expect(storedFacts(readsOf([started(), batch([early])]).reads, input())).resolves.toEqual({});
  });
});

describe('RouterReads', () => {
  /**
   * A client whose server holds, for every router, a run started at `startedMs` with one fact batch at T - 90 min
   * between its start and now (`payloadBytes` of data each), counting the reads (a backward read's first page).
   */
  function countingClient({ payloadBytes = 10, startedMs = T - 3 * HOUR_MS } = {}) {
    const counter = { reads: 0 };
    const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: 0 });
    const payload = (value: unknown) => {
      const json = JSON.stringify(value);
      return defaultPayloadConverter.toPayload(json + ' '.repeat(Math.max(0, payloadBytes - json.length - 2)));
    };
    const client = {
      options: {
        namespace: 'default',
        loadedDataConverter: { payloadCodecs: [], payloadConverter: defaultPayloadConverter },
      },
      workflowService: {
        describeWorkflowExecution: async () => ({}),
        getWorkflowExecutionHistoryReverse: async ({ nextPageToken }: { nextPageToken?: Uint8Array }) => {
          if (!nextPageToken) {
            counter.reads++;
            const signaled = { signalName: factsSignal.name, input: { payloads: [payload({ facts: [] })] } };
            return {
              history: {
                events: [{ eventTime: at(T - 90 * 60_000), workflowExecutionSignaledEventAttributes: signaled }],
              },
              nextPageToken: new Uint8Array([1]),
            };
          }
          const input = { payloads: [payload({ shard: 1, retention: 'P7D' })] };
          return {
            history: { events: [{ eventTime: at(startedMs), workflowExecutionStartedEventAttributes: { input } }] },
            nextPageToken: new Uint8Array(),
          };
        },
      },
    } as unknown as Client;
    return { client, counter };
  }

  it('reads a router once for the decisions of one instant, and again for a later one or one reaching further back', async () => {
    let now = T;
    const { client, counter } = countingClient();
    const reads = new RouterReads(client, () => now);

    await Promise.all([reads.read('facts:q:001', T - HOUR_MS, T), reads.read('facts:q:001', T - 60_000, T + 500)]);
    expect(counter.reads).toBe(1);
    await reads.read('facts:q:001', T - 2 * HOUR_MS, T);
    expect(counter.reads).toBe(2);
    now = T + SHARED_READ_MS + 1;
    await reads.read('facts:q:001', T - 60_000, now);
    expect(counter.reads).toBe(3);
    await reads.read('facts:q:002', T - 60_000, now);
    expect(counter.reads).toBe(4);
  });

  it('serves a decision however far back it looks once a read reached the run’s start', async () => {
    const { client, counter } = countingClient();
    const reads = new RouterReads(client, () => T);

    const whole = await reads.read('facts:q:001', T - 2 * HOUR_MS, T);
    expect(whole?.fromStart).toBe(true);
    await reads.read('facts:q:001', T - 7 * 24 * HOUR_MS, T);
    expect(counter.reads).toBe(1);
  });

  it(`serves decisions made late that were due by its start, for ${KEPT_READ_MS / 1000} s (a burst worked through)`, async () => {
    let now = T + 5_000;
    const { client, counter } = countingClient();
    const reads = new RouterReads(client, () => now);

    await reads.read('facts:q:001', T - 60_000, T);
    now = T + 5_000 + KEPT_READ_MS;
    await reads.read('facts:q:001', T - 60_000, T + 1_000);
    expect(counter.reads).toBe(1);
    now += 1;
    await reads.read('facts:q:001', T - 60_000, T + 1_000);
    expect(counter.reads).toBe(2);
  });

  it(`keeps at most ${MAX_KEPT_READ_BYTES / 1024 / 1024} MiB of payloads, letting go of the oldest reads first`, async () => {
    // A read back a minute stops at the batch 90 minutes old: four such reads fit the bound, and five do not.
    const payloadBytes = Math.floor(MAX_KEPT_READ_BYTES / 4.5);
    const { client, counter } = countingClient({ payloadBytes });
    const reads = new RouterReads(client, () => T);

    for (const shard of ['001', '002', '003', '004'])
      expect((await reads.read(`facts:q:${shard}`, T - 60_000, T))?.bytes).toBeGreaterThanOrEqual(payloadBytes);
    await reads.read('facts:q:001', T - 60_000, T);
    expect(counter.reads).toBe(4);
    await reads.read('facts:q:005', T - 60_000, T);
    await reads.read('facts:q:002', T - 60_000, T);
    expect(counter.reads).toBe(5);
    await reads.read('facts:q:001', T - 60_000, T);
    expect(counter.reads).toBe(6);
  });
});

describe('a read while a router’s workflow task is in flight', () => {
  /**
   * A server holding one router: started at T - 1 h, then whatever `events` holds (newest last), answering the
   * backward read newest first in pages of the size asked, and the description with `pending`; the clock is
   * `clock.ms`, moved by each call; `clock.calls` counts the reads.
   */
  function routerServer() {
    const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
    const input = { payloads: [defaultPayloadConverter.toPayload({ shard: 1, retention: 'P7D' })] };
    const events: object[] = [{ eventTime: at(T - HOUR_MS), workflowExecutionStartedEventAttributes: { input } }];
    const clock = { ms: T, calls: 0 };
    /** The server's pending workflow task, as DescribeWorkflowExecution tells it: started at `startedMs`, or none. */
    const pending: { startedMs?: number } = {};
    const add = {
      taskStarted: (ms: number) => events.push({ eventTime: at(ms), workflowTaskStartedEventAttributes: {} }),
      taskCompleted: (ms: number) => events.push({ eventTime: at(ms), workflowTaskCompletedEventAttributes: {} }),
      taskFailed: (ms: number) => events.push({ eventTime: at(ms), workflowTaskFailedEventAttributes: {} }),
      facts: (ms: number, facts: Fact[]) =>
        events.push({
          eventTime: at(ms),
          workflowExecutionSignaledEventAttributes: {
            signalName: factsSignal.name,
            input: { payloads: [defaultPayloadConverter.toPayload({ facts })] },
          },
        }),
    };
    /** What the server does meanwhile, one step at each call (a description or a read), as time goes by. */
    const onCall: Array<() => void> = [];
    const tick = () => {
      onCall.shift()?.();
      clock.ms += 300;
    };
    const client = {
      options: {
        namespace: 'default',
        loadedDataConverter: { payloadCodecs: [], payloadConverter: defaultPayloadConverter },
      },
      workflowService: {
        describeWorkflowExecution: async () => {
          tick();
          return pending.startedMs === undefined
            ? {}
            : { pendingWorkflowTask: { state: 2, startedTime: at(pending.startedMs) } };
        },
        getWorkflowExecutionHistoryReverse: async ({ maximumPageSize }: { maximumPageSize: number }) => {
          clock.calls++;
          tick();
          return { history: { events: [...events].reverse().slice(0, maximumPageSize) }, nextPageToken: undefined };
        },
      },
    } as unknown as Client;
    return { client, clock, add, onCall, pending };
  }

  const keyFact = (receivedMs: number) => keyed('k', receivedMs);

  /** A read that must hold everything stored by T - 1 s holds the fact signalled at T - 1.5 s, and says so. */
  async function expectBufferedFactHeld(client: Client, clock: { ms: number }): Promise<void> {
    const run = await readRouterRun(client, 'facts:q:001', T - HOUR_MS, T - 1_000, () => clock.ms);

    expect(firstKeyFact(run!, { factKey: 'k', expectationWorkflowId: self, sinceMs: T - HOUR_MS, untilMs: T })).toEqual(
      keyFact(T - 1_500),
    );
    expect(run!.storedThroughMs).toBeGreaterThanOrEqual(T);
  }

  it('waits for a retried task too, which the history does not show, then holds what the server buffered', async () => {
    const { client, clock, add, onCall, pending } = routerServer();
    // The first attempt failed; its retry started at T - 2 s is transient: no event of it until it completes.
    add.taskStarted(T - 3_000);
    add.taskFailed(T - 2_500);
    pending.startedMs = T - 2_000;
    // Signalled at T - 1.5 s, buffered while the retry runs; written with the retry's events once it completes.
    onCall.push(
      () => undefined,
      () => undefined,
      () => {
        pending.startedMs = undefined;
        add.taskStarted(T - 2_000);
        add.taskCompleted(T);
        add.facts(T, [keyFact(T - 1_500)]);
      },
    );

    await expectBufferedFactHeld(client, clock);
  });

  it('waits for the task to end, then holds the facts the server had buffered while it ran', async () => {
    const { client, clock, add, onCall } = routerServer();
    add.taskStarted(T - 2_000);
    // Signalled at T - 1.5 s, buffered by the server; written to the history once the task completes, two looks on.
    onCall.push(
      () => undefined,
      () => undefined,
      () => {
        add.taskCompleted(T);
        add.facts(T, [keyFact(T - 1_500)]);
      },
    );

    await expectBufferedFactHeld(client, clock);
  });

  it('does not wait for a task that started after the time it must hold everything stored by', async () => {
    const { client, clock, add } = routerServer();
    add.taskStarted(T - 500);

    const run = await readRouterRun(client, 'facts:q:001', T - HOUR_MS, T - 1_000, () => clock.ms);

    expect(clock.calls).toBe(1);
    expect(run!.storedThroughMs).toBe(T - 500);
  });

  it(`fails after ${IN_FLIGHT_WAIT_MS / 1000} s when the task is still in flight, rather than answer without its facts`, async () => {
    const { client, clock, add } = routerServer();
    add.taskStarted(T - 2_000);
    const now = () => (clock.ms += 5_000);

    await expect(readRouterRun(client, 'facts:q:001', T - HOUR_MS, T - 1_000, now)).rejects.toThrow(
      RouterTaskInFlightError,
    );
  });

  it('shares a kept read only with the decisions whose stored facts it holds', async () => {
    const { client, clock, add, onCall } = routerServer();
    add.taskStarted(T + 4_000);
    clock.ms = T + 5_000;
    const reads = new RouterReads(client, () => clock.ms);

    // Decided at T: everything stored by T - 1 s is needed, and the task in flight since T + 4 s holds it.
    expect((await reads.read('facts:q:001', T - HOUR_MS, T))?.storedThroughMs).toBe(T + 4_000);
    expect(clock.calls).toBe(1);
    // Decided at T + 6 s: stored by T + 5 s is needed, which the kept read does not hold; the task ends meanwhile.
    onCall.push(
      () => undefined,
      () => add.taskCompleted(T + 6_000),
    );
    const later = await reads.read('facts:q:001', T - HOUR_MS, T + 6_000);
    expect(clock.calls).toBeGreaterThan(1);
    expect(later!.storedThroughMs).toBeGreaterThanOrEqual(T + 5_000);
  });
});
