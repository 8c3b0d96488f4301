/**
 * The cluster tier: the watcher on a real Temporal cluster (server 1.31.2 on PostgreSQL, its four
 * services as separate processes), driven as a client drives it: through a bridge of `startCluster`, with two worker
 * processes and a real @a2a-js/sdk agent. The core lifecycle end to end, then the faults a cluster has: a worker
 * killed mid-delivery, the history service killed and restarted, PostgreSQL restarted. The cluster starts once, in
 * a temporary directory, and everything it started is stopped in `afterAll`, even after a failure.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lapseMessageId } from '../../core/message-id.js';
import { startCluster, type Cluster } from '../../dev/cluster/cluster.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { Expectation } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, unique } from '../support/bridge.js';
import { spawnWorker, waitUntil, type WorkerProcess } from '../support/faults.js';
import { freePort } from '../support/net.js';

const taskQueue = `cluster-${unique()}`;
const tokens = { 'shipping-agent': `agent-${unique()}`, carrier: `carrier-${unique()}`, ops: `ops-${unique()}` };
// As root, PostgreSQL runs as the `postgres` user: the directory must be searchable by it (mkdtemp makes it 0700).
const dir = mkdtempSync(path.join(os.tmpdir(), 'watcher-cluster-test-'));
chmodSync(dir, 0o755);
const progress: string[] = [];

let agent: TestAgent;
let principalsFile: string;
let starting: Promise<Cluster> | undefined;
let cluster: Cluster;
let bridge: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  agent = await startTestAgent();
  const principals: PrincipalSpec[] = [
    { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'carrier', roles: ['reporter'] },
    { id: 'ops', roles: ['admin'] },
  ];
  principalsFile = writePrincipalsFile(principals, { tokens });
  const config = loadConfig({
    WATCHER_DATA_DIR: dir,
    WATCHER_PRINCIPALS_FILE: principalsFile,
    TEMPORAL_TASK_QUEUE: taskQueue,
    WATCHER_LOG_LEVEL: 'warn',
  });
  const ports = { frontend: await freePort(), ui: await freePort() };
  // The bridge logs every refused request while a service is down; the assertions say what matters.
  starting = startCluster({ ...config, port: await freePort() }, createLogger('silent'), {
    dir: path.join(dir, 'cluster'),
    ports,
    workers: 0,
    bridges: 1,
    log: (line) => progress.push(line),
  });
  cluster = await starting.catch((error: unknown) => {
    throw new Error(`the Temporal cluster did not start (${progress.join('; ')}): ${(error as Error).message}`, {
      cause: error,
    });
  });
  bridge = cluster.bridges[0]!.url;
  // Two worker processes on the queue; they deliver to the agents of the principals file.
  workers.push(
    ...(await Promise.all([1, 2].map(() => spawnWorker(cluster.temporal.address, taskQueue, principalsFile)))),
  );
}, 300_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.kill9()));
  // A start still under way (a hook timeout) is awaited: whatever it started is stopped, by it or by us.
  const started = await starting?.catch(() => undefined);
  await started?.stop();
  await agent?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(path.dirname(principalsFile ?? dir), { recursive: true, force: true });
}, 300_000);

/** Raises `expectations` as the shipping agent, through the bridge's push endpoint. */
async function raise(expectations: Expectation[]): Promise<void> {
  const answer = await send(`${bridge}/a2a/events`, {
    token: tokens['shipping-agent'],
    json: artifactUpdate({ expectations }),
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** Reports, as the carrier, that the fact of each expectation was observed at `observedAt`. */
async function report(expectations: Expectation[], observedAt = new Date().toISOString()): Promise<void> {
  const facts = expectations.map((e) => ({ factKey: e.satisfiedBy.factKey, observedAt, source: 'carrier-feed' }));
  const answer = await send(`${bridge}/v1/facts`, { token: tokens.carrier, json: { facts } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** The record as the bridge answers it, or undefined while it cannot (not started yet, a service down). */
async function recordOf(id: string): Promise<ExpectationRecord | undefined> {
  const answer = await send(`${bridge}/v1/expectations/${encodeURIComponent(id)}`, { token: tokens.ops });
  return answer.status === 200 ? (answer.body as ExpectationRecord) : undefined;
}

/** Waits until the record of `id` holds `done`, and answers it. */
const recordWhen = (id: string, done: (record: ExpectationRecord) => boolean, timeoutMs = 45_000) =>
  waitUntil(
    `the record of ${id} to reach the state awaited`,
    async () => {
      const record = await recordOf(id);
      if (record && done(record)) return record;
      // Thrown, so that a timeout names the last record read.
      throw new Error(`last read: ${JSON.stringify(record)}`);
    },
    { timeoutMs, intervalMs: 300 },
  );

const open = (record: ExpectationRecord) => record.state === 'open';
const closed = (record: ExpectationRecord) => record.closedAt !== undefined;
const delivered = (record: ExpectationRecord) =>
  record.lapses.length > 0 && record.lapses.every((entry) => entry.delivery.status === 'delivered');
const dueIn = (ms: number) => new Date(Date.now() + ms);
const overdueMessageId = (e: Expectation) => lapseMessageId(e.expectationId, 'overdue', e.dueAt);

/**
 * After a fault: every expectation of `satisfied` ended satisfied with no lapse, every one of `lapsed` lapsed once
 * and reached the agent once, under its one messageId.
 */
async function expectEachEndedOnce(satisfied: Expectation[], lapsed: Expectation[]): Promise<void> {
  for (const e of satisfied) {
    const record = await recordWhen(e.expectationId, closed, 90_000);
    expect(record, e.expectationId).toMatchObject({ state: 'satisfied', lapses: [] });
    expect(lapsesFor(agent, e.expectationId), e.expectationId).toEqual([]);
  }
  for (const e of lapsed) {
    const record = await recordWhen(e.expectationId, delivered, 90_000);
    expect(record.state, e.expectationId).toBe('lapsed');
    expect(
      record.lapses.map((entry) => entry.delivery.messageId),
      e.expectationId,
    ).toEqual([overdueMessageId(e)]);
    expect(
      lapsesFor(agent, e.expectationId).map((r) => r.message.messageId),
      e.expectationId,
    ).toEqual([overdueMessageId(e)]);
  }
}

describe('the core lifecycle on the cluster', () => {
  it('satisfies a raised expectation when its fact is reported', async () => {
    const e = dueExpectation(`c-fact-${unique()}`, dueIn(3_600_000));
    await raise([e]);
    await recordWhen(e.expectationId, open);

    const observedAt = new Date().toISOString();
    await report([e], observedAt);

    expect(await recordWhen(e.expectationId, closed)).toMatchObject({ state: 'satisfied', observedAt, lapses: [] });
  });

  it('delivers an overdue lapse to the agent, once, under its messageId', async () => {
    const e = dueExpectation(`c-overdue-${unique()}`, dueIn(2_000));
    await raise([e]);

    const record = await recordWhen(e.expectationId, delivered);

    expect(record.state).toBe('lapsed');
    expect(record.lapse).toMatchObject({ lapse: 'overdue', dueAt: e.dueAt });
    const received = lapsesFor(agent, e.expectationId);
    expect(received.map((r) => r.message.messageId)).toEqual([overdueMessageId(e)]);
    expect(record.lapseTaskId).toBe(received[0]!.taskId);
  });

  it("moves a dependent's dueAt to its anchor's observedAt plus the offset", async () => {
    const anchor = dueExpectation(`c-anchor-${unique()}`, dueIn(3_600_000));
    // Projected an hour later than the anchor can move it, so the move always changes dueAt.
    const dependent = dueExpectation(`c-dependent-${unique()}`, dueIn(3 * 3_600_000), {
      anchor: { expectationId: anchor.expectationId, offset: 'PT2H' },
    });
    await raise([anchor, dependent]);
    await recordWhen(dependent.expectationId, open);

    const observedAt = new Date();
    observedAt.setUTCMilliseconds(0);
    await report([anchor], observedAt.toISOString());

    const moved = await recordWhen(dependent.expectationId, (r) => r.dueAt !== r.projectedDueAt);
    expect(moved).toMatchObject({ state: 'open', dueAt: new Date(observedAt.getTime() + 2 * 3_600_000).toISOString() });
  });

  it('lapses an expectation as skipped when one that comes after it is satisfied first', async () => {
    const subject = { type: 'shipment', id: `S-skip-${unique()}` };
    const first = dueExpectation(`c-first-${unique()}`, dueIn(3_600_000), { subject });
    const second = dueExpectation(`c-second-${unique()}`, dueIn(7_200_000), { subject, after: [first.expectationId] });
    await raise([first, second]);
    await recordWhen(second.expectationId, open);

    await report([second]);

    const record = await recordWhen(first.expectationId, delivered);
    expect(record.state).toBe('lapsed');
    expect(record.lapse).toMatchObject({ lapse: 'skipped', satisfiedAfter: [second.expectationId] });
    expect(lapsesFor(agent, first.expectationId)).toHaveLength(1);
    expect(await recordWhen(second.expectationId, closed)).toMatchObject({ state: 'satisfied' });
  });
});

describe('faults on the cluster', () => {
  it('delivers every lapse, one messageId each, when one of two workers is killed mid-delivery', async () => {
    agent.failNext(500);
    const lapsing = Array.from({ length: 4 }, (_, i) => dueExpectation(`c-crash-${i}-${unique()}`, dueIn(1_000)));
    await raise(lapsing);
    const attemptsOf = (e: Expectation) =>
      agent.attempts.filter((attempt) => attempt.messageId === overdueMessageId(e));
    // Every delivery has been refused twice: the activities are in their retry backoff, spread over both workers.
    await waitUntil('two refused attempts for every lapse', () => lapsing.every((e) => attemptsOf(e).length >= 2), {
      timeoutMs: 60_000,
    });

    await workers[0]!.kill9();
    agent.recover();

    await expectEachEndedOnce([], lapsing);
    for (const e of lapsing) {
      expect(new Set(attemptsOf(e).map((attempt) => attempt.messageId)), e.expectationId).toEqual(
        new Set([overdueMessageId(e)]),
      );
    }
  }, 120_000);

  it('loses and doubles nothing when the history service is killed and restarted with expectations pending', async () => {
    const toSatisfy = Array.from({ length: 3 }, (_, i) =>
      dueExpectation(`c-history-fact-${i}-${unique()}`, dueIn(25_000)),
    );
    const toLapse = Array.from({ length: 3 }, (_, i) =>
      dueExpectation(`c-history-lapse-${i}-${unique()}`, dueIn(25_000)),
    );
    await raise([...toSatisfy, ...toLapse]);
    for (const e of [...toSatisfy, ...toLapse]) await recordWhen(e.expectationId, open);

    const history = cluster.temporal.services.history;
    expect(Date.now(), 'still pending when the history service dies').toBeLessThan(Date.parse(toLapse[0]!.dueAt));
    await history.stop('SIGKILL');
    expect(history.pid).toBeUndefined();
    await history.start();
    // The frontend reaches the new history process once it has joined the ring: retried until the bridge accepts.
    await waitUntil('the facts to be accepted after the restart', () => report(toSatisfy).then(() => true), {
      timeoutMs: 60_000,
    });
    expect(Date.now(), 'the facts were reported before the due time').toBeLessThan(Date.parse(toLapse[0]!.dueAt));

    await expectEachEndedOnce(toSatisfy, toLapse);
  }, 120_000);

  it('loses and doubles nothing when PostgreSQL is restarted with expectations pending', async () => {
    const toSatisfy = Array.from({ length: 3 }, (_, i) => dueExpectation(`c-pg-fact-${i}-${unique()}`, dueIn(25_000)));
    const toLapse = Array.from({ length: 3 }, (_, i) => dueExpectation(`c-pg-lapse-${i}-${unique()}`, dueIn(25_000)));
    await raise([...toSatisfy, ...toLapse]);
    for (const e of [...toSatisfy, ...toLapse]) await recordWhen(e.expectationId, open);

    const { postgres } = cluster.temporal;
    expect(Date.now(), 'still pending when PostgreSQL stops').toBeLessThan(Date.parse(toLapse[0]!.dueAt));
    await postgres.stop();
    expect(postgres.pid).toBeUndefined();
    // Same directory and port: the services' configuration names them. The cluster's stop() stops it again.
    await postgres.start();
    await waitUntil('the facts to be accepted after the restart', () => report(toSatisfy).then(() => true), {
      timeoutMs: 60_000,
    });
    expect(Date.now(), 'the facts were reported before the due time').toBeLessThan(Date.parse(toLapse[0]!.dueAt));

    await expectEachEndedOnce(toSatisfy, toLapse);
  }, 120_000);
});
