/**
 * A fact that comes after the late window (DESIGN 3.3) on the real dev server, through the bridge, with a real
 * worker and a real @a2a-js/sdk agent: the lapsed expectation has closed and left its fact router, so the fact
 * satisfies nothing; the bridge counts it in `watcher_facts_after_late_window_total` and logs it with its key and
 * the expectation's id. An early fact, or one for an open expectation, is neither counted nor logged.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import { createMetrics, type WatcherMetrics } from '../../src/metrics.js';
import { pastLateWindowQuery } from '../../src/service/late-facts.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation, expectation } from '../support/fixtures.js';
import { artifactUpdate, request, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { countWorkflows, startWatcherWorker, type RunningWatcher } from '../support/watcher.js';

const taskQueue = `late-facts-${randomUUID()}`;
const LATE_MESSAGE =
  'fact after the late window: the expectation waiting on its key closed lapsed, so the fact satisfies nothing';

interface Bridge {
  app: BridgeApp;
  metrics: WatcherMetrics;
  /** Every JSON log line the bridge wrote. */
  lines: Array<Record<string, unknown>>;
}

let agent: TestAgent;
let watcher: RunningWatcher;
const bridges = new Map<string, Bridge>();

/** A bridge with a 2-second late window and the fact retention given, logging into `lines`. */
async function startBridge(factRetention: string): Promise<Bridge> {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const metrics = createMetrics();
  const app = await startBridgeApp(
    watcher.client,
    taskQueue,
    [
      { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'carrier-feed', roles: ['reporter'] },
    ],
    { settings: { lateWindow: 'PT2S', factRetention }, metrics, logger: pino({ level: 'info' }, sink) },
  );
  return { app, metrics, lines };
}

beforeAll(async () => {
  agent = await startTestAgent();
  watcher = await startWatcherWorker(taskQueue);
  for (const retention of ['P7D', 'PT0S']) bridges.set(retention, await startBridge(retention));
});

afterAll(async () => {
  for (const { app } of bridges.values()) await app.close();
  await watcher?.stop();
  await agent?.close();
});

const counted = async (bridge: Bridge) => (await bridge.metrics.factsAfterLateWindow.get()).values[0]?.value ?? 0;

async function raise(bridge: Bridge, e: ReturnType<typeof expectation>) {
  const answer = await request(`${bridge.app.url}/a2a/events`, {
    token: bridge.app.tokens['shipping-agent'],
    body: artifactUpdate({ expectations: [e] }),
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

const factOf = (factKey: string) => ({ factKey, observedAt: new Date(Date.now() - 1000).toISOString() });

async function report(bridge: Bridge, fact: { factKey: string; observedAt: string }) {
  // With wait=true: the bridge learns from the router that nobody waited, and only then asks the visibility store.
  const answer = await request(`${bridge.app.url}/v1/facts?wait=true`, {
    token: bridge.app.tokens['carrier-feed'],
    body: { facts: [fact] },
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.facts[0].result as string;
}

const readRecord = async (bridge: Bridge, id: string) =>
  (await request(`${bridge.app.url}/v1/expectations/${id}`, { token: bridge.app.tokens['shipping-agent'] })).body;

describe.each(['P7D', 'PT0S'])('a fact after the late window (fact retention %s)', (retention) => {
  it('is counted and logged with its key and the expectation it came for, and satisfies nothing', async () => {
    const bridge = bridges.get(retention)!;
    const e = dueExpectation(`late-window-${unique()}`, new Date(Date.now() + 1000));
    await raise(bridge, e);
    // Lapsed, its task delivered, closed two seconds later; and the visibility store knows it closed lapsed.
    await vi.waitFor(async () => expect((await readRecord(bridge, e.expectationId)).closedAt).toBeDefined(), {
      timeout: 30_000,
      interval: 250,
    });
    await vi.waitFor(
      async () =>
        expect(await countWorkflows(watcher.client, pastLateWindowQuery(taskQueue, e.satisfiedBy.factKey))).toBe(1),
      {
        timeout: 20_000,
        interval: 250,
      },
    );
    const before = await counted(bridge);

    const fact = factOf(e.satisfiedBy.factKey);
    const results = [await report(bridge, fact), await report(bridge, fact)];

    // The re-delivery: a router (P7D) knows it again; with PT0S nothing keeps the fact, so nothing can tell.
    const redelivered = retention === 'PT0S' ? 'recorded' : 'duplicate';
    expect(results).toEqual(['recorded', redelivered]);
    const times = redelivered === 'recorded' ? 2 : 1;
    expect((await counted(bridge)) - before).toBe(times);
    const logged = bridge.lines.filter((line) => line.msg === LATE_MESSAGE && line.factKey === e.satisfiedBy.factKey);
    expect(logged).toHaveLength(times);
    expect(logged[0]).toEqual(
      expect.objectContaining({
        level: 40,
        factKey: e.satisfiedBy.factKey,
        expectationId: e.expectationId,
        expectationIds: [e.expectationId],
        observedAt: fact.observedAt,
        source: 'carrier-feed',
      }),
    );
    const record = await readRecord(bridge, e.expectationId);
    expect(record.state).toBe('lapsed');
    expect(record.satisfiedBy).toBeUndefined();
    expect(record.lapses.map((entry: { lapse: { lapse: string } }) => entry.lapse.lapse)).toEqual(['overdue']);
  });

  it('is not what an early fact or a fact for an open expectation is: neither is counted nor logged', async () => {
    const bridge = bridges.get(retention)!;
    const open = expectation(`late-open-${unique()}`);
    await raise(bridge, open);
    const early = `shipment/early-${unique()}/delivered`;
    const before = await counted(bridge);

    const results = [await report(bridge, factOf(early)), await report(bridge, factOf(open.satisfiedBy.factKey))];

    expect(results).toEqual(['recorded', 'recorded']);
    await vi.waitFor(async () => expect((await readRecord(bridge, open.expectationId)).state).toBe('satisfied'), {
      timeout: 20_000,
      interval: 250,
    });
    expect((await counted(bridge)) - before).toBe(0);
    const keys = new Set([early, open.satisfiedBy.factKey]);
    expect(bridge.lines.filter((line) => keys.has(line.factKey as string))).toEqual([]);
  });
});
