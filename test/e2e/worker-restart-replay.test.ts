/**
 * A worker restarts, and the first thing it is then asked is a fact for a router that forwards to a waiting
 * expectation (and a withdrawal, by update). Before the `answer-after-forwarding` patch, the fact router's recordFact
 * answer and its forwarding signal raced for one workflow task: a worker without the router in its cache wrote the
 * signal first, and the history it wrote did not replay ("Update machine does not handle this event"), so the router
 * would have been stuck at its next eviction. Driven through the bridge as clients drive it; each history is then
 * replayed against the run's workflow bundle.
 */
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { startWatcherWorker, useClient, type RunningWatcher } from '../support/watcher.js';

const client = useClient();
const taskQueue = `restart-replay-${randomUUID()}`;
let agent: TestAgent;
let bridge: BridgeApp;
let worker: RunningWatcher | undefined;

beforeAll(async () => {
  agent = await startTestAgent();
  // A workflow task that the old worker polls as it stops is lost to it and handed out again only after its 10 s
  // timeout (seen in this file: a fact router's first task started, never completed, when the stop came right after
  // the raise; its router has no record to read first). A bridge whose Temporal wait (WATCHER_TEMPORAL_WAIT) is
  // shorter would answer that 503; this file's bridge waits 15 s, so it waits the task out instead.
  bridge = await startBridgeApp(
    client,
    taskQueue,
    [
      { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'carrier-feed', roles: ['reporter'] },
    ],
    { settings: { temporalWaitMs: 15_000 } },
  );
  worker = await startWatcherWorker(taskQueue);
});

afterAll(async () => {
  await worker?.stop();
  await bridge?.close();
  await agent?.close();
});

async function replay(workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  try {
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history);
    return 'replays';
  } catch (error) {
    return `${workflowId}: ${(error as Error).message}`;
  }
}

/** Raises the expectations through the bridge, then stops the worker and starts a new one (an empty cache). */
async function raiseThenRestart(expectations: ReturnType<typeof dueExpectation>[]): Promise<void> {
  const raised = await send(`${bridge.url}/a2a/events`, {
    token: bridge.tokens['shipping-agent'],
    json: artifactUpdate({ expectations }),
  });
  expect(raised.status).toBe(200);
  // The worker that restarts has taken the raise's tasks: each record reads open, as a client would read it. One
  // stopped while it polls a task loses it for the task's 10 s timeout (Temporal), which is not what this file tests.
  for (const { expectationId } of expectations) {
    await expect
      .poll(
        async () =>
          (await send(`${bridge.url}/v1/expectations/${expectationId}`, { token: bridge.tokens['shipping-agent'] }))
            .body.state,
        {
          timeout: 30_000,
          interval: 100,
        },
      )
      .toBe('open');
  }
  await worker!.stop();
  worker = await startWatcherWorker(taskQueue);
}

describe('a worker restarted before a fact and a withdrawal', () => {
  it('satisfies and withdraws as asked, and each history it writes replays', async () => {
    const waiting = dueExpectation(`restart-wait-${unique()}`, new Date(Date.now() + 3_600_000));
    const withdrawn = dueExpectation(`restart-withdraw-${unique()}`, new Date(Date.now() + 3_600_000));
    await raiseThenRestart([waiting, withdrawn]);
    const [reported, withdrawal] = await Promise.all([
      send(`${bridge.url}/v1/facts`, {
        token: bridge.tokens['carrier-feed'],
        json: {
          facts: [
            { factKey: waiting.satisfiedBy.factKey, observedAt: new Date().toISOString(), subject: waiting.subject },
          ],
        },
      }),
      send(`${bridge.url}/v1/expectations/${withdrawn.expectationId}/withdraw`, {
        token: bridge.tokens['shipping-agent'],
        json: { reason: 'the order was cancelled' },
      }),
    ]);
    await expect
      .poll(
        async () =>
          (
            await send(`${bridge.url}/v1/expectations/${waiting.expectationId}`, {
              token: bridge.tokens['shipping-agent'],
            })
          ).body.state,
        {
          timeout: 30_000,
          interval: 200,
        },
      )
      .toBe('satisfied');

    expect(reported.status).toBe(200);
    expect(withdrawal.status).toBe(200);
    expect(withdrawal.body).toMatchObject({ result: 'withdrawn' });
    expect(await replay(factRouterWorkflowId(waiting.satisfiedBy.factKey, taskQueue))).toBe('replays');
    expect(await replay(expectationWorkflowId(waiting.expectationId))).toBe('replays');
    expect(await replay(expectationWorkflowId(withdrawn.expectationId))).toBe('replays');
  });

  it('satisfies a fact reported with wait=true, answered by the expectation itself, and every history replays', async () => {
    const one = dueExpectation(`restart-take-${unique()}`, new Date(Date.now() + 3_600_000));
    const two = {
      ...dueExpectation(`restart-take-${unique()}`, new Date(Date.now() + 3_600_000)),
      satisfiedBy: one.satisfiedBy,
    };
    await raiseThenRestart([one, two]);
    const reported = await send(`${bridge.url}/v1/facts?wait=true`, {
      token: bridge.tokens['shipping-agent'],
      json: {
        facts: [{ factKey: one.satisfiedBy.factKey, observedAt: new Date().toISOString(), subject: one.subject }],
      },
    });

    expect(reported.status).toBe(200);
    expect(reported.body.facts[0].awaitedBy).toBe(2);
    // Each names the state it took the fact in; one the restarted worker could not replay within the answer's
    // FACT_WAIT_MS (a busy machine) is left out of the answer and gets the router's forward instead.
    const taken = reported.body.facts[0].expectations.map((e: { expectationId: string; state: string }) => [
      e.expectationId,
      e.state,
    ]);
    expect(taken.length).toBeGreaterThan(0);
    for (const [id, state] of taken)
      expect([[one.expectationId, two.expectationId].includes(id), state]).toEqual([true, 'satisfied']);
    for (const e of [one, two]) {
      await expect
        .poll(
          async () =>
            (await send(`${bridge.url}/v1/expectations/${e.expectationId}`, { token: bridge.tokens['shipping-agent'] }))
              .body.state,
          {
            timeout: 30_000,
            interval: 200,
          },
        )
        .toBe('satisfied');
    }
    expect(await replay(factRouterWorkflowId(one.satisfiedBy.factKey, taskQueue))).toBe('replays');
    expect(await replay(expectationWorkflowId(one.expectationId))).toBe('replays');
    expect(await replay(expectationWorkflowId(two.expectationId))).toBe('replays');
  });
});
