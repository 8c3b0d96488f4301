/**
 * The history reader (activities/history-reads.ts) on the routers' recorded histories (test/histories/v6 and
 * v6-encrypted): a read backwards in pages, decoded as a worker's client decodes, then the folds a lapse decides on.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { CLOCK_MARGIN_MS, firstKeyFact, readRouterRun, subjectFacts } from '../../../activities/history-reads.js';
import { loadCodecKeys } from '../../../src/temporal/codec-keys.js';
import { EncryptionCodec } from '../../../src/temporal/encryption-codec.js';

const { History } = proto.temporal.api.history.v1;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const histories = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../histories');
const PAGE = 40;

function eventsOf(folder: string, file: string): HistoryEvent[] {
  return History.fromObject(JSON.parse(readFileSync(path.join(histories, folder, file), 'utf8'))).events;
}

const eventMs = (event: HistoryEvent) =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);

/** A client whose server holds one history and answers the reverse read in pages of PAGE events. */
function serverOf(events: HistoryEvent[], payloadCodecs: PayloadCodec[] = []) {
  const pagesAsked: number[] = [];
  const client = {
    options: {
      namespace: 'default',
      loadedDataConverter: { payloadCodecs, payloadConverter: defaultPayloadConverter },
    },
    workflowService: {
      // No task in flight: the server's description has no pending workflow task started.
      describeWorkflowExecution: async () => ({}),
      getWorkflowExecutionHistoryReverse: async ({ nextPageToken }: { nextPageToken?: Uint8Array }) => {
        const from = nextPageToken ? Number(new TextDecoder().decode(nextPageToken)) : 0;
        pagesAsked.push(from);
        const newestFirst = [...events].reverse();
        const to = from + PAGE;
        const more = to < newestFirst.length;
        return {
          history: { events: newestFirst.slice(from, to) },
          nextPageToken: more ? new TextEncoder().encode(String(to)) : new Uint8Array(),
        };
      },
    },
  } as unknown as Client;
  return { client, pagesAsked };
}

/** What the reader must find, counted from the raw events: the facts signals and the accepted recordFact updates. */
function storedCount(events: HistoryEvent[]): number {
  return events.filter(
    (event) =>
      event.workflowExecutionSignaledEventAttributes?.signalName === 'facts' ||
      event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'recordFact',
  ).length;
}

const routerFiles = (folder: string) =>
  readdirSync(path.join(histories, folder)).filter((file) => file.startsWith('fact-router-') && file.endsWith('.json'));

describe('a read of a recorded router history', () => {
  it.each(routerFiles('v6'))('%s: decodes the run from its start, every stored fact in order', async (file) => {
    const events = eventsOf('v6', file);
    const run = await readRouterRun(serverOf(events).client, 'facts:q:001', 0);

    expect(run?.complete).toBe(true);
    expect(run?.events[0]).toMatchObject({ kind: 'started', input: { shard: expect.any(Number) } });
    expect(run?.events.slice(1).every((event) => event.kind !== 'started')).toBe(true);
    expect(run!.events.length - 1).toBe(storedCount(events));
  });

  it('stops a clock margin before the raise, short of the run’s start, having read only the pages it needed', async () => {
    const events = eventsOf('v6', 'fact-router-busy-subject.json');
    const server = serverOf(events);
    const middle = events[Math.floor(events.length / 2)]!;
    const sinceMs = eventMs(middle) + CLOCK_MARGIN_MS;

    const run = await readRouterRun(server.client, 'facts:q:062', sinceMs);

    expect(run?.complete).toBe(true);
    expect(run?.events.some((event) => event.kind === 'started')).toBe(false);
    const needed = events.filter((event) => eventMs(event) >= eventMs(middle));
    expect(run!.events.length).toBeGreaterThanOrEqual(storedCount(needed));
    expect(run!.events.length).toBeLessThan(storedCount(events));
    expect(server.pagesAsked.length).toBeLessThan(Math.ceil(events.length / PAGE));
  });

  it('finds the satisfying key fact a bridge stored within the window, and none past it', async () => {
    const run = (await readRouterRun(serverOf(eventsOf('v6', 'fact-router-satisfied.json')).client, 'r', 0))!;
    const batch = run.events.find((event) => event.kind === 'facts' && event.batch.facts?.length);
    const stored = batch?.kind === 'facts' ? batch.batch.facts![0]! : undefined;
    const receivedMs = Date.parse(stored!.receivedAt!);
    const query = { factKey: stored!.factKey, expectationWorkflowId: 'expectation:x', sinceMs: receivedMs };

    expect(firstKeyFact(run, { ...query, untilMs: receivedMs })).toEqual(stored);
    expect(firstKeyFact(run, { ...query, untilMs: receivedMs - 1 })).toBeUndefined();
  });

  it('finds the subject’s latest fact and rules a stall out only by the horizon', async () => {
    const run = (await readRouterRun(serverOf(eventsOf('v6', 'fact-router-subject-satisfied.json')).client, 'r', 0))!;
    const onSubject = run.events.flatMap((event) => (event.kind === 'facts' ? (event.batch.subjects ?? []) : []));
    const first = onSubject[0]!;
    const window = { subject: first.subject, sinceMs: 0, untilMs: Number.MAX_SAFE_INTEGER };
    const latest = onSubject
      .filter((fact) => fact.subject.id === first.subject.id)
      .reduce((a, b) => (Date.parse(b.observedAt) > Date.parse(a.observedAt) ? b : a));

    expect(subjectFacts(run, { ...window, horizonMs: Date.parse(first.receivedAt) })).toEqual({
      latest,
      heardByHorizon: true,
    });
    expect(subjectFacts(run, { ...window, horizonMs: Date.parse(first.receivedAt) - 1 }).heardByHorizon).toBe(false);
  });

  it('reads a continued run’s carried subject, and says heard where the carry may have summarised facts away', async () => {
    const events = eventsOf('v6', 'fact-router-busy-subject-run2.json');
    const run = (await readRouterRun(serverOf(events).client, 'r', 0))!;
    const started = run.events[0]!.kind === 'started' ? run.events[0]!.input : undefined;
    const carried = started!.carried!.subjects![0]!;
    const sinceMs = Date.parse(carried.lastReceived.receivedAt) - 1;

    const heard = subjectFacts(run, { subject: carried.subject, sinceMs, untilMs: sinceMs + 2, horizonMs: sinceMs });

    expect(heard).toEqual({ latest: carried.latest, heardByHorizon: true });
  });
});

describe('a read of a history written with the payload codec', () => {
  const codec = new EncryptionCodec(loadCodecKeys(path.join(histories, 'codec-keys.json')));

  it.each(routerFiles('v6-encrypted'))('%s: decodes through the codec, across its key rotation', async (file) => {
    const events = eventsOf('v6-encrypted', file);
    const run = await readRouterRun(serverOf(events, [codec]).client, 'r', 0);

    expect(run!.events[0]?.kind).toBe('started');
    expect(run!.events.length - 1).toBe(storedCount(events));
  });

  it('skips, never fails on, payloads it cannot decode (a removed key)', async () => {
    const events = eventsOf('v6-encrypted', routerFiles('v6-encrypted')[0]!);
    const run = await readRouterRun(serverOf(events).client, 'r', 0);

    expect(run).toEqual({ events: [], complete: true, fromStart: true, bytes: 0, storedThroughMs: expect.any(Number) });
  });
});
