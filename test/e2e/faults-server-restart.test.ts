/**
 * The Temporal dev server is stopped and started again on the same SQLite database with a
 * hundred expectations pending. Those answered by facts sent after the restart are satisfied, the others lapse
 * once each; the worker and the bridge keep running through the outage.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Expectation } from '../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { lapseMessageId } from '../../core/message-id.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { spawnWorker, startOwnDevServer, waitUntil, type OwnDevServer, type WorkerProcess } from '../support/faults.js';
import { countWorkflows } from '../support/watcher.js';

const taskQueue = `faults-restart-${randomUUID()}`;
let server: OwnDevServer;
let connection: Connection;
let client: Client;
let agent: TestAgent;
let worker: WorkerProcess;
let bridge: BridgeApp;

beforeAll(async () => {
  server = await startOwnDevServer('restart');
  connection = await Connection.connect({ address: server.address });
  client = new Client({ connection });
  agent = await startTestAgent();
  const principals: PrincipalSpec[] = [
    { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'carrier-feed', roles: ['reporter'] },
  ];
  // The worker process delivers to the bridge's agents.
  worker = await spawnWorker(server.address, taskQueue, writePrincipalsFile(principals));
  bridge = await startBridgeApp(client, taskQueue, principals);
});

afterAll(async () => {
  await worker?.kill9();
  await bridge?.close();
  await agent?.close();
  await connection?.close();
  await server?.dispose();
});

const openCount = () => countWorkflows(client, `WorkflowType = 'expectationWorkflow' AND ExpectationState = 'open'`);

/**
 * Raises the expectations in concurrent requests of ten (the dev server's SQLite file is slow one write at a time),
 * each sent again after a 503 as a client does (DESIGN 4: the retry completes what the first left half done).
 */
async function raise(expectations: Expectation[]): Promise<void> {
  const answers = await Promise.all(
    chunks(expectations, 10).map(async (batch) => {
      for (let attempt = 1; ; attempt++) {
        const answer = await send(`${bridge.url}/a2a/events`, {
          token: bridge.tokens['shipping-agent'],
          json: artifactUpdate({ expectations: batch }),
        });
        if (answer.status !== 503 || attempt === 5) return answer;
        await new Promise((resolve) => setTimeout(resolve, 1_000 * Number(answer.headers.get('retry-after') ?? 1)));
      }
    }),
  );
  for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** Reports one fact for each expectation, in concurrent requests of ten; answers undefined unless all were taken. */
async function report(
  expectations: Expectation[],
  observedAt: string,
): Promise<{ factKey: string; result: string }[] | undefined> {
  const answers = await Promise.all(
    chunks(expectations, 10).map((batch) =>
      send(`${bridge.url}/v1/facts`, {
        token: bridge.tokens['carrier-feed'],
        json: { facts: batch.map((e) => ({ factKey: e.satisfiedBy.factKey, observedAt })) },
      }),
    ),
  );
  return answers.every((answer) => answer.status === 200) ? answers.flatMap((answer) => answer.body.facts) : undefined;
}

const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

const readAll = (ids: string[]) => Promise.all(ids.map((id) => getExpectationRecord(client, id)));

describe('dev server restarted on the same database', () => {
  it('satisfies or lapses each of a hundred pending expectations as it should', async () => {
    const run = unique();
    const started = Date.now();
    const toSatisfy = Array.from({ length: 50 }, (_, i) =>
      dueExpectation(`restart-sat-${i}-${run}`, new Date(started + 3_600_000)),
    );
    await raise(toSatisfy);
    // Due a little after the stop (raising the second fifty takes about as long as the first): their timers are
    // pending at the stop and fire while the server is down or once it is back.
    const margin = 3_000 + 1.5 * (Date.now() - started);
    const toLapse = Array.from({ length: 50 }, (_, i) =>
      dueExpectation(`restart-lapse-${i}-${run}`, new Date(Date.now() + margin)),
    );
    await raise(toLapse);
    const ids = [...toSatisfy, ...toLapse].map((e) => e.expectationId);
    await waitUntil('a hundred open expectations in the visibility store', async () => (await openCount()) === 100);
    await server.stop();
    await server.start();
    await waitUntil(
      'the bridge to see Temporal again',
      async () => (await send(`${bridge.url}/readyz`)).status === 200,
      {
        timeoutMs: 60_000,
      },
    );
    const observedAt = new Date().toISOString();
    // A retry after a 503 is safe: a fact recorded by an earlier attempt comes back as a duplicate.
    const facts = await waitUntil('the facts to be taken after the restart', () => report(toSatisfy, observedAt), {
      timeoutMs: 60_000,
      intervalMs: 1_000,
    });
    const settled = (record: ExpectationRecord | undefined, i: number) =>
      i < toSatisfy.length
        ? record?.state === 'satisfied'
        : record?.state === 'lapsed' && record.lapses.every((entry) => entry.delivery.status === 'delivered');
    const after = await waitUntil(
      'every expectation satisfied or lapsed',
      async () => {
        const read = await readAll(ids);
        return read.every(settled) ? (read as ExpectationRecord[]) : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );

    expect(worker.child.exitCode).toBeNull();
    expect(facts.map((f) => f.factKey)).toEqual(toSatisfy.map((e) => e.satisfiedBy.factKey));
    for (const [i, e] of toSatisfy.entries()) {
      expect(after[i]!, e.expectationId).toMatchObject({ state: 'satisfied', late: false, lapses: [] });
      expect(lapsesFor(agent, e.expectationId), e.expectationId).toHaveLength(0);
    }
    for (const [i, e] of toLapse.entries()) {
      const record = after[toSatisfy.length + i]!;
      const received = lapsesFor(agent, e.expectationId);
      expect(record.lapses, e.expectationId).toHaveLength(1);
      expect(received, e.expectationId).toHaveLength(1);
      expect(received[0]!.message.messageId).toBe(lapseMessageId(e.expectationId, 'overdue', e.dueAt));
    }
    expect(agent.received).toHaveLength(toLapse.length);
  }, 300_000);
});
