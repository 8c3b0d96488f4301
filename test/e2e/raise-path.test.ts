/**
 * The raise path (docs/raise-path.md) on the shared dev server, driven as clients drive it: through the bridge, a
 * real worker and a real @a2a-js/sdk agent, with no wait on internal state between a raise and its fact.
 * - No fact is missed: 1,000 raises each followed at once by their satisfying fact, 1,000 by a subject fact before
 *   a short horizon (100 each in npm test, WATCHER_RACE_COUNT sets it), and facts in the same artifact before and after their expectation, at concurrency 16,
 *   under PT0S and P7D retention: every one satisfied (or not stalled), no false lapse, and a control that must lapse.
 * - No credential in Temporal: every history of the run is free of the agent's authorization; a token rotated in
 *   the principals file reaches a lapse of an expectation raised before the rotation.
 * - No lapse after the end: a delivery in retry is abandoned once the expectation is satisfied.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Expectation, ExpectationRecord } from '../../core/types.js';
import {
  agentDirectory,
  loadReloadingPrincipals,
  tokenSha256,
  type ReloadingPrincipalStore,
} from '../../src/auth/principals.js';
import { createApp } from '../../src/http/app.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { createWatcherWorker, type WatcherWorker } from '../../src/temporal/worker.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { artifactUpdate, request } from '../support/bridge.js';
import { deliveryExpectation } from '../support/fixtures.js';
import { onQueues } from '../support/ids.js';
import { historyText } from '../support/history-text.js';
import { close, listen, urlOf } from '../support/net.js';
import { startNeighbour, type Neighbour } from '../support/neighbour.js';
import { untilRecord } from '../support/poll.js';
import { loopbackAgents } from '../support/outbound.js';

/** Raises per scenario in `npm test`; `WATCHER_RACE_COUNT=1000 npx vitest run test/e2e/raise-path.test.ts` runs the 1,000 alone. */
const COUNT = Number(process.env.WATCHER_RACE_COUNT ?? 100);
const SAME_ARTIFACT_COUNT = Math.max(1, Math.round(COUNT / 4));
const CONCURRENCY = 16;
const AGENT_AUTHORIZATION = `Bearer agent-secret-${randomUUID()}`;

interface Stack {
  url: string;
  client: Client;
  taskQueue: string;
  agent: TestAgent;
  principalsFile: string;
  principals: ReloadingPrincipalStore;
  agentToken: string;
  reporterToken: string;
  writePrincipals(agentAuthorization: string): Promise<void>;
  close(): Promise<void>;
}

/** A worker and a bridge that share one principals file on disk, as `npm start` does, and a real agent. */
async function startStack(factRetention: string, agentAuthorization = AGENT_AUTHORIZATION): Promise<Stack> {
  const taskQueue = `raise-path-${randomUUID()}`;
  const agent = await startTestAgent({ expectedAuthorization: agentAuthorization });
  const agentToken = `agent-${randomUUID()}`;
  const reporterToken = `reporter-${randomUUID()}`;
  const principalsFile = path.join(await mkdtemp(path.join(os.tmpdir(), 'raise-path-')), 'principals.json');
  const writePrincipals = (authorization: string) =>
    writeFile(
      principalsFile,
      JSON.stringify({
        principals: [
          {
            id: 'shipping-agent',
            tokenSha256: tokenSha256(agentToken),
            roles: ['agent'],
            agent: { cardUrl: agent.cardUrl, authorization },
          },
          { id: 'carrier-feed', tokenSha256: tokenSha256(reporterToken), roles: ['reporter'] },
        ],
      }),
    );
  await writePrincipals(agentAuthorization);
  const principals = await loadReloadingPrincipals(principalsFile);
  const watcher: WatcherWorker = await createWatcherWorker({
    address: inject('temporalAddress'),
    namespace: 'default',
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
    agents: agentDirectory(principals),
    outbound: loopbackAgents,
  });
  const running = watcher.run();
  const app = createApp({
    client: watcher.client,
    taskQueue,
    namespace: 'default',
    principals,
    settings: { factRetention, lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 60, temporalWaitMs: 10_000 },
    outbound: loopbackAgents,
  });
  const server: Server = await listen(app);
  return {
    url: urlOf(server),
    client: watcher.client,
    taskQueue,
    agent,
    principalsFile,
    principals,
    agentToken,
    reporterToken,
    writePrincipals,
    async close() {
      await close(server);
      await watcher.shutdown();
      await running;
      principals.close();
      await agent.close();
    },
  };
}

/**
 * A stack for the `describe` that calls it: started in `beforeAll`, closed in `afterAll`. The object is filled in
 * when the hook has run; hooks registered after this call run after it has started and before it closes.
 */
function useStack(factRetention: string, agentAuthorization?: string): Stack {
  const stack = {} as Stack;
  let started: Stack | undefined;
  beforeAll(async () => {
    started = await startStack(factRetention, agentAuthorization);
    Object.assign(stack, started);
  });
  afterAll(async () => {
    await started?.close();
  });
  return stack;
}

const secondsFromNow = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();

/** A `delivery` expectation (test/support/fixtures.ts) with no grace, due in a year unless `extra` says otherwise. */
const expectationOf = (id: string, extra: Partial<Expectation> = {}): Expectation =>
  deliveryExpectation(id, secondsFromNow(365 * 86_400), { grace: 'PT0S', ...extra });

/** How often a client sends a request again after a 503 (DESIGN 4: nothing half-applied that a retry would not complete). */
const RETRIES_ON_503 = 6;
let retried = 0;

/** Requests like a client does: a 503 (Temporal busy or unreachable) is sent again after a pause. */
async function send(stack: Stack, route: string, token: string, body?: unknown) {
  for (let attempt = 1; ; attempt++) {
    const answer = await request(`${stack.url}${route}`, body === undefined ? { token } : { token, body });
    if (answer.status !== 503 || attempt >= RETRIES_ON_503) return answer;
    retried++;
    await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
  }
}

async function raise(stack: Stack, payload: Record<string, unknown>): Promise<void> {
  const answer = await send(stack, '/a2a/events', stack.agentToken, artifactUpdate(payload));
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  // `unchanged` when a request that answered 503 had already started it: the retry completed its registration.
  expect(answer.body.expectations.map((e: { result: string }) => e.result)).toEqual([
    expect.stringMatching(/^(raised|unchanged)$/),
  ]);
}

async function report(stack: Stack, fact: { factKey: string; subject?: { type: string; id: string } }): Promise<void> {
  const answer = await send(stack, '/v1/facts', stack.reporterToken, {
    facts: [{ ...fact, observedAt: new Date().toISOString() }],
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

async function recordOf(stack: Stack, id: string): Promise<ExpectationRecord> {
  const answer = await send(stack, `/v1/expectations/${encodeURIComponent(id)}`, stack.agentToken);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as ExpectationRecord;
}

/** The record, or undefined while the bridge answers 503 (a worker far behind cannot answer the query in time). */
async function recordWhenAvailable(stack: Stack, id: string): Promise<ExpectationRecord | undefined> {
  const answer = await request(`${stack.url}/v1/expectations/${encodeURIComponent(id)}`, { token: stack.agentToken });
  if (answer.status === 503) return undefined;
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as ExpectationRecord;
}

/** Runs `task` for every item, `CONCURRENCY` at a time. */
async function pool<T>(items: T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

/** Polls until `accept` holds for the record, or fails naming the record after `timeoutMs`. */
const until = (stack: Stack, id: string, accept: (r: ExpectationRecord) => boolean, timeoutMs = 90_000) =>
  untilRecord((recordId) => recordWhenAvailable(stack, recordId), id, accept, { timeoutMs });

/** The records of `ids` that are not satisfied without a lapse (the missed and the falsely lapsed). */
async function notCleanlySatisfied(stack: Stack, ids: string[]): Promise<string[]> {
  const bad: string[] = [];
  await pool(ids, async (id) => {
    const record = await until(stack, id, (r) => r.state !== 'open', 60_000).catch(() => undefined);
    if (!record || record.state !== 'satisfied' || record.lapses.length > 0) bad.push(id);
  });
  return bad;
}

const ids = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i}-${randomUUID().slice(0, 8)}`);

for (const retention of ['PT0S', 'P7D']) {
  describe(
    `no fact is missed after a raise, with retention ${retention}, beside a neighbour`,
    { timeout: 600_000 },
    () => {
      const stack = useStack(retention);
      // Other work on the machine and the server meanwhile: half a core and five workflow starts a second.
      let neighbour: Neighbour;
      beforeAll(() => {
        neighbour = startNeighbour(stack.client);
      });
      afterAll(async () => {
        await neighbour?.stop();
      });

      it(`satisfies ${COUNT} expectations each followed at once by its fact, with no false lapse`, async () => {
        const raised = ids('key', COUNT);
        // Due 20 s after its raise: a missed fact would lapse it overdue within the test.
        await pool(raised, async (id) => {
          const expectation = expectationOf(id, { dueAt: secondsFromNow(20) });
          await raise(stack, { expectations: [expectation] });
          await report(stack, { factKey: expectation.satisfiedBy.factKey });
        });
        // Raised last and due after every other: once it has lapsed, a missed fact would have lapsed its expectation.
        const control = expectationOf(`key-control-${randomUUID()}`, { dueAt: secondsFromNow(25) });
        await raise(stack, { expectations: [control] });

        const controlRecord = await until(stack, control.expectationId, (r) => r.lapses.length > 0);
        const bad = await notCleanlySatisfied(stack, raised);

        expect(controlRecord.lapses.map((l) => l.lapse.lapse)).toEqual(['overdue']);
        expect(bad).toEqual([]);
        expect(neighbour.starts.made).toBeGreaterThan(10);
        const lapsedIds = new Set(
          stack.agent.received.map((m) => (m.message.metadata?.[EXTENSION_URI] as any)?.lapse?.expectationId),
        );
        expect(raised.filter((id) => lapsedIds.has(id))).toEqual([]);
      });

      it(`does not stall ${COUNT} expectations each followed at once by a fact on their subject`, async () => {
        const raised = ids('subject', COUNT);
        await pool(raised, async (id) => {
          const expectation = expectationOf(id, { horizon: secondsFromNow(20) });
          await raise(stack, { expectations: [expectation] });
          await report(stack, { factKey: `shipment/${id}/scanned`, subject: expectation.subject });
        });
        // Raised last with a horizon after every other: once it has stalled, every horizon before it has been checked.
        const control = expectationOf(`subject-control-${randomUUID()}`, { horizon: secondsFromNow(25) });
        await raise(stack, { expectations: [control] });

        const controlRecord = await until(stack, control.expectationId, (r) => r.lapses.length > 0);
        const stalled: string[] = [];
        await pool(raised, async (id) => {
          const record = await recordOf(stack, id);
          if (record.lapses.length > 0 || record.lastFactAt === undefined) stalled.push(id);
        });

        expect(controlRecord.lapses.map((l) => l.lapse.lapse)).toEqual(['stalled']);
        expect(stalled).toEqual([]);
      });

      it(`satisfies ${SAME_ARTIFACT_COUNT} + ${SAME_ARTIFACT_COUNT} expectations whose fact is in the same artifact, before and after them`, async () => {
        const factFirst = ids('same-before', SAME_ARTIFACT_COUNT);
        const factLast = ids('same-after', SAME_ARTIFACT_COUNT);
        const fact = (e: Expectation) => ({ factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString() });
        await pool(
          [...factFirst.map((id) => [id, true] as const), ...factLast.map((id) => [id, false] as const)],
          async ([id, first]) => {
            const expectation = expectationOf(id, { dueAt: secondsFromNow(20) });
            await raise(
              stack,
              first
                ? { facts: [fact(expectation)], expectations: [expectation] }
                : { expectations: [expectation], facts: [fact(expectation)] },
            );
          },
        );

        expect(await notCleanlySatisfied(stack, [...factFirst, ...factLast])).toEqual([]);
      });
    },
  );
}

describe('a plan raised in one request', { timeout: 300_000 }, () => {
  const stack = useStack('P7D');

  it('raises 9 steps of one subject together and a 10th anchored on the first after them; every fact sent at once reaches its step', async () => {
    const subject = { type: 'shipment', id: `PLAN-${randomUUID()}` };
    const steps = ids('plan', 9).map((id) => expectationOf(id, { subject, dueAt: secondsFromNow(30) }));
    const dependent = expectationOf(`plan-anchored-${randomUUID().slice(0, 8)}`, {
      subject,
      anchor: { expectationId: steps[0]!.expectationId, offset: 'PT1H' },
    });
    const answer = await send(
      stack,
      '/a2a/events',
      stack.agentToken,
      artifactUpdate({ expectations: [...steps, dependent] }),
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.expectations).toEqual(
      [...steps, dependent].map((e) => ({ expectationId: e.expectationId, result: 'raised' })),
    );
    // At once, as a client does: a fact on every step, the first's last.
    const observedAt = new Date().toISOString();
    const facts = [...steps.slice(1), steps[0]!].map((e) => ({ factKey: e.satisfiedBy.factKey, observedAt }));
    expect((await send(stack, '/v1/facts', stack.reporterToken, { facts })).status).toBe(200);

    expect(
      await notCleanlySatisfied(
        stack,
        steps.map((e) => e.expectationId),
      ),
    ).toEqual([]);
    // The 10th started after the first (its own wave) and linked to it: its due time followed the first's fact.
    const anchored = await until(stack, dependent.expectationId, (r) => r.dueAt !== dependent.dueAt);
    expect(anchored.dueAt).toBe(new Date(Date.parse(observedAt) + 3_600_000).toISOString());
    // Each router was sent one subscription naming all the request's steps it serves (and one more for the 10th, in
    // its own wave): never one call per step.
    const ours = new Set([...steps, dependent].map((e) => expectationWorkflowId(e.expectationId)));
    const routers = new Set(
      [...steps, dependent].map((e) => factRouterWorkflowId(e.satisfiedBy.factKey, stack.taskQueue)),
    );
    const payloadOf = (payload: { data?: Uint8Array | null } | undefined) =>
      JSON.parse(Buffer.from(payload!.data!).toString()) as { workflowIds: string[] };
    const subscribed: string[][] = [];
    for (const router of routers) {
      const events = (await stack.client.workflow.getHandle(router).fetchHistory()).events ?? [];
      for (const signaled of events.map((e) => e.workflowExecutionSignaledEventAttributes)) {
        if (signaled?.signalName !== 'subscribe') continue;
        const ids = payloadOf(signaled.input!.payloads![0]).workflowIds.filter((id) => ours.has(id));
        if (ids.length > 0) subscribed.push(ids);
      }
    }
    expect(subscribed.length).toBeLessThanOrEqual(routers.size + 1);
    expect(subscribed.flat().sort()).toEqual([...ours].sort());
  });
});

describe('no credential in Temporal', () => {
  const stack = useStack('P7D', 'Bearer rotated-in-later');

  it('delivers a lapse raised before a token rotation with the new token, and no history holds either token', async () => {
    const oldAuthorization = `Bearer before-rotation-${randomUUID()}`;
    await stack.writePrincipals(oldAuthorization);
    await stack.principals.refresh();
    const expectation = expectationOf(`rotate-${randomUUID()}`, {
      dueAt: secondsFromNow(6),
      horizon: secondsFromNow(4),
    });
    await raise(stack, { expectations: [expectation] });

    await stack.writePrincipals('Bearer rotated-in-later');
    const record = await until(stack, expectation.expectationId, (r) =>
      r.lapses.some((l) => l.delivery.status === 'delivered'),
    );
    const { executions } = await listExecutions(stack);
    const histories = await Promise.all(executions.map((workflowId) => historyText(stack.client, workflowId)));

    expect(record.lapses[0]?.delivery.status).toBe('delivered');
    expect(stack.agent.received.at(-1)?.headers.authorization).toBe('Bearer rotated-in-later');
    // The expectation and its router, each read whole.
    expect(executions.length).toBeGreaterThanOrEqual(2);
    expect(histories.every((text) => text.includes('shipment'))).toBe(true);
    for (const secret of [
      oldAuthorization,
      'Bearer rotated-in-later',
      stack.agentToken,
      stack.reporterToken,
      'rotated-in-later',
    ]) {
      expect(histories.filter((text) => text.includes(secret))).toEqual([]);
    }
  });
});

describe('no lapse after the end', () => {
  const stack = useStack('P7D');

  it('abandons a delivery in retry once a fact satisfies the expectation: the agent receives nothing after', async () => {
    stack.agent.failNext(500);
    const expectation = expectationOf(`abandon-${randomUUID()}`, { dueAt: secondsFromNow(1) });
    await raise(stack, { expectations: [expectation] });
    await until(stack, expectation.expectationId, () => stack.agent.attempts.length >= 2, 30_000);

    await report(stack, { factKey: expectation.satisfiedBy.factKey });
    const record = await until(stack, expectation.expectationId, (r) => r.lapses[0]?.delivery.status === 'abandoned');
    const attemptsAtAbandon = stack.agent.attempts.length;
    stack.agent.recover();
    // The next retry would have come within 4 s of the last (backoff 1 s, 2 s, 4 s): wait past it.
    await new Promise((resolve) => setTimeout(resolve, 8_000));

    expect(record.state).toBe('satisfied');
    expect(record.lapses[0]?.delivery.error).toBe('the expectation was satisfied before the lapse task was delivered');
    expect(stack.agent.attempts.length).toBeLessThanOrEqual(attemptsAtAbandon + 1);
    expect(stack.agent.received).toEqual([]);
    expect((await recordOf(stack, expectation.expectationId)).lapses[0]?.delivery.status).toBe('abandoned');
  });
});

afterAll(() => {
  if (retried > 0) console.info(`raise-path: ${retried} requests were sent again after a 503`);
});

/** Workflow ids of every execution on the stack's task queue (visibility is eventually consistent: polled). */
async function listExecutions(stack: Stack): Promise<{ executions: string[] }> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const executions: string[] = [];
    for await (const execution of stack.client.workflow.list({
      query: onQueues(stack.taskQueue),
    })) {
      executions.push(execution.workflowId);
    }
    if (executions.length >= 3 || Date.now() > deadline) return { executions };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
