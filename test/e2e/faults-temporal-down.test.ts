/**
 * Temporal unreachable. The bridge, wired as `npm run bridge` wires it (a lazy client, the
 * default deadlines), answers 503 problem+json within 3 s and `/readyz` fails; once Temporal is back, the same
 * request sent again completes with nothing lost and nothing doubled.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { connectClient, isReachable } from '../../src/temporal/connection.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { writePrincipalsFile, type PrincipalSpec } from '../support/agents.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { spawnWorker, startOwnDevServer, waitUntil, type OwnDevServer, type WorkerProcess } from '../support/faults.js';
import { freePort } from '../support/net.js';
import { routerStored } from '../support/routers.js';
import { countWorkflows } from '../support/watcher.js';

const PROBLEM = 'application/problem+json';
const taskQueue = `faults-down-${randomUUID()}`;
let agent: TestAgent;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  agent = await startTestAgent();
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await agent?.close();
});

/** The bridge as `npm run bridge` builds it on `address`: the lazy client and the reachability probe of runtime.ts. */
async function productionBridge(address: string): Promise<{ bridge: BridgeApp; client: Client }> {
  const client = await connectClient(address, loadConfig({}).temporal);
  const bridge = await startBridgeApp(client, taskQueue, principals(), {
    isTemporalReachable: () => isReachable(client),
  });
  cleanups.push(
    () => bridge.close(),
    () => client.connection.close(),
  );
  return { bridge, client };
}

/** The bridge's principals; the worker process delivers to the same agents. */
const principals = (): PrincipalSpec[] => [
  { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
  { id: 'carrier-feed', roles: ['reporter'] },
];

function expectQuick503(answer: { status: number; contentType: string; body: any; ms: number }) {
  expect(answer.status).toBe(503);
  expect(answer.contentType).toContain(PROBLEM);
  expect(answer.body).toMatchObject({ type: 'urn:expectations-watcher:problem:temporal-unavailable', status: 503 });
  expect(answer.ms).toBeLessThan(3_000);
}

describe('Temporal at an address where nothing listens', () => {
  it('answers 503 problem+json within 3 s to a raise and to a fact report, and /readyz fails', async () => {
    const { bridge } = await productionBridge(`127.0.0.1:${await freePort()}`);

    const raise = await send(`${bridge.url}/a2a/events`, {
      token: bridge.tokens['shipping-agent'],
      json: artifactUpdate({ expectations: [dueExpectation(`down-${unique()}`, new Date(Date.now() + 3_600_000))] }),
    });
    const facts = await send(`${bridge.url}/v1/facts`, {
      token: bridge.tokens['carrier-feed'],
      json: { facts: [{ factKey: `down-${unique()}`, observedAt: new Date().toISOString() }] },
    });
    const ready = await send(`${bridge.url}/readyz`);

    expectQuick503(raise);
    expectQuick503(facts);
    expect(ready.status).toBe(503);
    expect(ready.contentType).toContain(PROBLEM);
    expect(ready.ms).toBeLessThan(3_000);
  });

  it("runs none of a request's Temporal calls on after its 503: closing the connection at once throws nothing later", async () => {
    // Five raises fan out into fifteen calls (a record lookup and two router queries each), all retried by gRPC
    // while nothing answers. Answering at the first failure left the others sleeping between retries; closing the
    // connection then made each wake into grpc-js's "Channel has been shut down", thrown from a timer.
    const client = await connectClient(`127.0.0.1:${await freePort()}`, loadConfig({}).temporal);
    const bridge = await startBridgeApp(client, taskQueue, principals(), {
      isTemporalReachable: () => isReachable(client),
    });
    cleanups.push(() => bridge.close());
    const uncaught: unknown[] = [];
    const collect = (error: unknown) => void uncaught.push(error);
    process.on('uncaughtException', collect);
    try {
      const due = new Date(Date.now() + 3_600_000);
      const raise = await send(`${bridge.url}/a2a/events`, {
        token: bridge.tokens['shipping-agent'],
        json: artifactUpdate({
          expectations: Array.from({ length: 5 }, () => dueExpectation(`down-${unique()}`, due)),
        }),
      });
      await client.connection.close();
      // Longer than the bridge's longest gRPC backoff (four attempts: under 0.4 s between two).
      await new Promise((resolve) => setTimeout(resolve, 1_500));

      expectQuick503(raise);
      expect(uncaught.map(String)).toEqual([]);
    } finally {
      process.off('uncaughtException', collect);
    }
  });
});

describe('Temporal stopped, then started again', () => {
  let server: OwnDevServer;
  let worker: WorkerProcess;
  let reader: Connection;

  beforeAll(async () => {
    server = await startOwnDevServer('down');
    cleanups.push(() => server.dispose());
    worker = await spawnWorker(server.address, taskQueue, writePrincipalsFile(principals()));
    cleanups.push(() => worker.kill9());
  });

  afterAll(async () => {
    await reader?.close();
  });

  it('completes the request sent again after recovery, with one workflow, one lapse and the fact recorded once', async () => {
    const { bridge } = await productionBridge(server.address);
    // As a load balancer would: the worker logs "running" just before its first poll reaches Temporal, and until
    // DescribeTaskQueue has seen that poll the bridge is rightly not ready.
    await expect
      .poll(async () => (await send(`${bridge.url}/readyz`)).status, { timeout: 30_000, interval: 500 })
      .toBe(200);
    const lapsing = dueExpectation(`down-lapse-${unique()}`, new Date(Date.now() + 5_000));
    const waiting = dueExpectation(`down-wait-${unique()}`, new Date(Date.now() + 3_600_000));
    const fact = {
      factKey: waiting.satisfiedBy.factKey,
      observedAt: new Date().toISOString(),
      subject: waiting.subject,
    };
    const body = artifactUpdate({ expectations: [lapsing, waiting], facts: [fact] });
    const post = () => send(`${bridge.url}/a2a/events`, { token: bridge.tokens['shipping-agent'], json: body });

    await server.stop();
    const whileDown = await post();
    const readyWhileDown = await send(`${bridge.url}/readyz`);
    await server.start();
    await waitUntil('/readyz to pass again', async () => (await send(`${bridge.url}/readyz`)).status === 200, {
      timeoutMs: 60_000,
    });
    const again = await waitUntil(
      'the request sent again to complete',
      async () => {
        const answer = await post();
        return answer.status === 200 ? answer : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    const once = await post();
    reader = await Connection.connect({ address: server.address });
    const client = new Client({ connection: reader });
    const records = await waitUntil(
      'the lapse delivered and the waiting expectation satisfied',
      async () => {
        const [l, w] = await Promise.all([
          getExpectationRecord(client, lapsing.expectationId),
          getExpectationRecord(client, waiting.expectationId),
        ]);
        const done = l?.lapses[0]?.delivery.status === 'delivered' && w?.state === 'satisfied';
        return done ? ([l, w] as ExpectationRecord[]) : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const stored = await routerStored(client, taskQueue, fact.factKey);
    const { events } = await client.workflow.getHandle(expectationWorkflowId(waiting.expectationId)).fetchHistory();
    const forwards = (events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'fact');
    const workflows = await Promise.all(
      [lapsing, waiting].map((e) => countWorkflows(client, `WorkflowId = '${expectationWorkflowId(e.expectationId)}'`)),
    );

    expectQuick503(whileDown);
    expect(readyWhileDown.status).toBe(503);
    // `unchanged` when an attempt during recovery started them before it timed out: they exist as sent, either way.
    for (const item of again.body.expectations as Array<{ result: string }>)
      expect(['raised', 'unchanged']).toContain(item.result);
    expect(once.status).toBe(200);
    expect(once.body).toEqual({
      expectations: [
        { expectationId: lapsing.expectationId, result: 'unchanged' },
        { expectationId: waiting.expectationId, result: 'unchanged' },
      ],
      facts: [{ factKey: fact.factKey, result: 'accepted' }],
      withdrawn: [],
    });
    expect(workflows).toEqual([1, 1]);
    expect(lapsesFor(agent, lapsing.expectationId)).toHaveLength(1);
    expect(lapsesFor(agent, waiting.expectationId)).toHaveLength(0);
    expect(records[0]!.lapses).toHaveLength(1);
    expect(records[1]!.satisfiedBy).toMatchObject({
      factKey: fact.factKey,
      observedAt: fact.observedAt,
      source: 'shipping-agent',
    });
    // Stored each time the request went through, one observation: the router sent it on once.
    expect(new Set(stored.map((f) => `${f.observedAt}|${f.source}`)).size).toBe(1);
    expect(forwards).toHaveLength(1);
  });
});
