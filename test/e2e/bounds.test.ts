/**
 * Bounds and quotas on real bridges. A bridge whose Temporal is a closed port answers a request over a
 * bound 413 or 422, never the 503 a Temporal call would give: the bounds are checked before any Temporal call; the
 * same request at the bound gets the 503, so the bound itself lets it through. On the dev server with a worker: a
 * per-minute quota answers 429 with Retry-After and takes the request again once that time has passed; the
 * open-expectations quota follows the visibility store; and a raise into a router or an anchor that is all but full
 * is refused with the bound, from what the router and the anchor answer.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_AGENT_SHARE, MAX_ITEMS, MAX_LENGTH, RACE_ROOM } from '../../core/limits.js';
import { loadConfig } from '../../src/config.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { joinPath } from '../../src/service/errors.js';
import { occupancyQuery, openExpectationsQuery } from '../../src/service/records.js';
import { connectClient } from '../../src/temporal/connection.js';
import { dependentCount, getFactRouterMemo } from '../../src/temporal/expectations.js';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { registerDependentSignal } from '../../workflows/messages.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { expectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique } from '../support/bridge.js';
import type { Answer, BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { freePort } from '../support/net.js';
import { countWorkflows, useWatcherWorker } from '../support/watcher.js';

const taskQueue = `bounds-${randomUUID()}`;
const watcher = useWatcherWorker(taskQueue);
let agent: TestAgent;

beforeAll(async () => {
  agent = await startTestAgent();
});

afterAll(async () => {
  await agent?.close();
});

const principals = () => [
  { id: 'shipping-agent', roles: ['agent' as const], cardUrl: agent.cardUrl },
  { id: 'partner-agent', roles: ['agent' as const], cardUrl: agent.cardUrl },
  { id: 'third-agent', roles: ['agent' as const], cardUrl: agent.cardUrl },
  { id: 'carrier-feed', roles: ['reporter' as const] },
];
const fact = (key = `bounds/${unique()}`) => ({ factKey: key, observedAt: '2026-01-01T00:00:00Z' });
const many = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));
const U = joinPath([EXTENSION_URI]);
const artifactPath = (rest: string) => `artifactUpdate/artifact/metadata/${U}/${rest}`;

describe('on a bridge whose Temporal is a closed port', () => {
  let down: BridgeApp;
  let downClient: Client;

  beforeAll(async () => {
    downClient = await connectClient(`127.0.0.1:${await freePort()}`, loadConfig({}).temporal);
    down = await startBridgeApp(downClient, `${taskQueue}-down`, principals(), { settings: { temporalWaitMs: 1_000 } });
  });

  afterAll(async () => {
    await down?.close();
    // A reachability probe a fact call gave up waiting for retries until its own 2 s deadline: closed under it, the
    // channel would throw from the retry's timer.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await downClient?.connection.close();
  });

  const events = (body: unknown) =>
    send(`${down.url}/a2a/events`, { token: down.tokens['shipping-agent'], json: body });
  const facts = (body: unknown) => send(`${down.url}/v1/facts`, { token: down.tokens['carrier-feed'], json: body });

  /** A request at a bound and the same one past it, with the status and field error the one past it gets. */
  interface Bound {
    name: string;
    at(n: number): Promise<Answer>;
    limit: number;
    status: 413 | 422;
    path: string;
    rule: string;
  }

  const e = (id: string, overrides = {}) => expectation(`bounds-${id}-${unique()}`, overrides);
  const bounds: Bound[] = [
    {
      name: 'facts per request',
      limit: MAX_ITEMS.facts,
      at: (n) => facts({ facts: many(n, () => fact()) }),
      status: 413,
      path: `facts/${MAX_ITEMS.facts}`,
      rule: 'max-items',
    },
    {
      name: 'expectations per request',
      limit: MAX_ITEMS.expectations,
      at: (n) => events(artifactUpdate({ expectations: many(n, (i) => e(`many-${i}`)) }, 't', 'c')),
      status: 413,
      path: artifactPath(`expectations/${MAX_ITEMS.expectations}`),
      rule: 'max-items',
    },
    {
      name: 'withdraw ids per request',
      limit: MAX_ITEMS.withdraw,
      at: (n) => events(artifactUpdate({ withdraw: many(n, (i) => `w-${i}`) }, 't', 'c')),
      status: 413,
      path: artifactPath(`withdraw/${MAX_ITEMS.withdraw}`),
      rule: 'max-items',
    },
    {
      name: 'distinct expectation ids referred to',
      limit: MAX_ITEMS.references,
      at: (n) =>
        events(
          artifactUpdate(
            {
              expectations: many(15, (i) => e(`refs-${i}`, { after: many(32, (j) => `before-${i}-${j}`) })),
              withdraw: many(n - 495, (i) => `w-${i}`),
            },
            't',
            'c',
          ),
        ),
      status: 413,
      path: artifactPath(`withdraw/${MAX_ITEMS.references - 495}`),
      rule: 'max-items',
    },
    {
      name: 'after ids',
      limit: MAX_ITEMS.after,
      at: (n) =>
        events(artifactUpdate({ expectations: [e('after', { after: many(n, (i) => `before-${i}`) })] }, 't', 'c')),
      status: 422,
      path: artifactPath('expectations/0/after'),
      rule: 'max-items',
    },
    {
      name: 'expects',
      limit: MAX_LENGTH.expects,
      at: (n) => events(artifactUpdate({ expectations: [e('expects', { expects: 'x'.repeat(n) })] }, 't', 'c')),
      status: 422,
      path: artifactPath('expectations/0/expects'),
      rule: 'max-length',
    },
    {
      name: 'factKey',
      limit: MAX_LENGTH.factKey,
      at: (n) => facts({ facts: [fact('k'.repeat(n))] }),
      status: 422,
      path: 'facts/0/factKey',
      rule: 'max-length',
    },
    {
      name: "the origin's context id",
      limit: MAX_LENGTH.originId,
      at: (n) => events(artifactUpdate({ facts: [fact()] }, 't', 'c'.repeat(n))),
      status: 422,
      path: 'artifactUpdate/contextId',
      rule: 'max-length',
    },
  ];

  it.each(bounds)(
    'refuses $name past the bound with $status naming the field and limit, not with 503',
    async ({ at, limit, status, path, rule }) => {
      const answer = await at(limit + 1);

      expect(answer.status).toBe(status);
      expect(answer.body.errors).toEqual([expect.objectContaining({ path, rule, limit })]);
    },
  );

  it.each(bounds)('lets $name at the bound through to Temporal, which answers 503', async ({ at, limit }) => {
    const answer = await at(limit);

    expect(answer.status).toBe(503);
    expect(answer.body.type).toBe('urn:expectations-watcher:problem:temporal-unavailable');
  });
});

describe('a per-minute quota', () => {
  let bridge: BridgeApp;
  // The bridge's clock, moved by the tests: a request that took a second on a busy machine must not refill the bucket
  // before the next one arrives (the CI run met that: the request past the quota was let through).
  let clock = Date.now();

  beforeAll(async () => {
    // Two facts and one raise per 2 s.
    bridge = await startBridgeApp(watcher.client, taskQueue, principals(), {
      settings: { quotas: { openExpectations: 0, raisesPerMinute: 1, factsPerMinute: 2, windowMs: 2_000 } },
      now: () => clock,
    });
  });

  afterAll(async () => {
    await bridge?.close();
  });

  const report = (n: number) =>
    send(`${bridge.url}/v1/facts`, { token: bridge.tokens['carrier-feed'], json: { facts: many(n, () => fact()) } });

  it('answers 429 with Retry-After past the quota, naming it, and takes the request once Retry-After has passed', async () => {
    const burst = await report(2);
    const past = await report(1);
    const retryAfter = Number(past.headers.get('retry-after'));
    clock += retryAfter * 1000;
    const again = await report(1);

    expect(burst.status).toBe(200);
    expect(past.status).toBe(429);
    expect(past.body).toMatchObject({
      type: 'urn:expectations-watcher:problem:quota-exceeded',
      status: 429,
      quota: { name: 'facts-per-minute', limit: 2, retryAfterSeconds: retryAfter },
    });
    expect(past.body.detail).toMatch(
      /^quota facts-per-minute: principal 'carrier-feed' may send at most 2 facts per 2 s/,
    );
    expect(retryAfter).toBe(1);
    expect(again.status).toBe(200);
  });

  it('counts raises apart from facts, with the same answer', async () => {
    const raise = () =>
      send(`${bridge.url}/a2a/events`, {
        token: bridge.tokens['shipping-agent'],
        json: artifactUpdate({ expectations: [expectation(`quota-${unique()}`)] }),
      });

    const first = await raise();
    const second = await raise();
    clock += Number(second.headers.get('retry-after')) * 1000;
    const third = await raise();

    expect([first.status, second.status, third.status]).toEqual([200, 429, 200]);
    expect(second.body.quota).toEqual({ name: 'raises-per-minute', limit: 1, retryAfterSeconds: 2 });
  });
});

describe('the open-expectations quota', () => {
  const queue = `bounds-open-${randomUUID()}`;
  const own = useWatcherWorker(queue);
  let bridge: BridgeApp;

  beforeAll(async () => {
    // No reuse of a count: each raise asks the visibility store, so the test waits for it, not for a cache.
    bridge = await startBridgeApp(own.client, queue, principals(), {
      settings: { quotas: { openExpectations: 2, raisesPerMinute: 0, factsPerMinute: 0, openCountCacheMs: 0 } },
    });
  });

  afterAll(async () => {
    await bridge?.close();
  });

  const raise = (e: ReturnType<typeof expectation>) =>
    send(`${bridge.url}/a2a/events`, {
      token: bridge.tokens['shipping-agent'],
      json: artifactUpdate({ expectations: [e] }),
    });
  const openCount = () => countWorkflows(own.client, openExpectationsQuery(queue, 'shipping-agent'));

  it('refuses a raise past it once the visibility store counts the open ones, and takes one again after a withdrawal', async () => {
    const [e1, e2, e3] = ['o1', 'o2', 'o3'].map((name) => expectation(`${name}-${unique()}`));
    expect((await raise(e1!)).status).toBe(200);
    expect((await raise(e2!)).status).toBe(200);
    await waitUntil('both open in the visibility store', async () => (await openCount()) === 2);

    const refused = await raise(e3!);
    const withdrawn = await send(`${bridge.url}/v1/expectations/${encodeURIComponent(e1!.expectationId)}/withdraw`, {
      token: bridge.tokens['shipping-agent'],
      json: { reason: 'making room' },
    });
    await waitUntil('one open in the visibility store', async () => (await openCount()) === 1);
    const again = await raise(e3!);

    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body.quota).toEqual({ name: 'open-expectations', limit: 2, retryAfterSeconds: 1 });
    expect(refused.body.detail).toMatch(
      /may have at most 2 open expectations and has 2 \(as the visibility store counts them, eventually consistent\)/,
    );
    expect(withdrawn.body).toEqual({ expectationId: e1!.expectationId, result: 'withdrawn' });
    expect(again.body.expectations).toEqual([{ expectationId: e3!.expectationId, result: 'raised' }]);
  });
});

describe('a raise into a router or anchor that is all but full', () => {
  let bridge: BridgeApp;
  const refusedAt = 100 - RACE_ROOM;
  /** Workflow ids of expectations that do not exist, taking places in a router or anchor. */
  const placeholders = (n: number) => many(n, (i) => expectationWorkflowId(`placeholder-${unique()}-${i}`));

  beforeAll(async () => {
    bridge = await startBridgeApp(watcher.client, taskQueue, principals());
  });

  afterAll(async () => {
    await bridge?.close();
  });

  const raiseAs = (agentId: string, e: ReturnType<typeof expectation>) =>
    send(`${bridge.url}/a2a/events`, { token: bridge.tokens[agentId]!, json: artifactUpdate({ expectations: [e] }) });
  const raise = (e: ReturnType<typeof expectation>) => raiseAs('shipping-agent', e);
  /** The raise is refused (422) with one field error, on `field` of its expectation, naming `rule` (and `limit`). */
  const expectRefused = (answer: Answer, field: string, rule: string, limit?: number) => {
    expect(answer.status).toBe(422);
    const path = artifactPath(`expectations/0/${field}`);
    expect(answer.body.errors).toEqual([
      expect.objectContaining({ path, rule, ...(limit === undefined ? {} : { limit }) }),
    ]);
  };

  /**
   * Raises `n` expectations through the bridge, ten a request, then waits for the visibility store to count them: the
   * bridge's bound is read from it (eventually consistent), the router keeps the hard bound itself.
   */
  async function raiseMany(
    n: number,
    make: (i: number) => ReturnType<typeof expectation>,
    counted: string,
    agents: readonly string[] = ['shipping-agent', 'partner-agent'],
  ) {
    // No agent takes more than its share of one key or subject: the places go to the agents in turn, MAX_AGENT_SHARE each.
    const all = many(n, make);
    for (let a = 0; a * MAX_AGENT_SHARE < n; a++) {
      const mine = all.slice(a * MAX_AGENT_SHARE, (a + 1) * MAX_AGENT_SHARE);
      for (let i = 0; i < mine.length; i += 10) {
        const answer = await send(`${bridge.url}/a2a/events`, {
          token: bridge.tokens[agents[a]!]!,
          json: artifactUpdate({ expectations: mine.slice(i, i + 10) }),
        });
        expect(answer.status).toBe(200);
      }
    }
    await waitUntil(
      `the visibility store to count ${n} open on ${counted}`,
      async () => (await watcher.client.workflow.count(counted)).count >= n,
    );
  }

  it.each([['a fact key', 'fact-key-share', 'satisfiedBy/factKey']] as const)(
    'refuses an agent more than its share of %s (422 %s), and raises another agent there',
    async (what, rule, path) => {
      const tag = unique();
      const factKey = `bounds/squat-${tag}`;
      const subject = { type: 'shipment', id: `SQUAT-${tag}` };
      const on = (id: string, i = 0) =>
        what === 'a fact key'
          ? expectation(id, { satisfiedBy: { factKey }, subject: { type: 'shipment', id: `S-${tag}-${i}` } })
          : expectation(id, { subject, satisfiedBy: { factKey: `bounds/${tag}-${id}` } });
      const counted = occupancyQuery(taskQueue, what === 'a fact key' ? { factKey } : { subject }, 'shipping-agent');
      await raiseMany(MAX_AGENT_SHARE, (i) => on(`squat-${tag}-${i}`, i), counted, ['shipping-agent']);

      const more = await raise(on(`one-more-${tag}`, MAX_AGENT_SHARE));
      const other = await send(`${bridge.url}/a2a/events`, {
        token: bridge.tokens['partner-agent']!,
        json: artifactUpdate({ expectations: [on(`partner-${tag}`, MAX_AGENT_SHARE + 1)] }),
      });

      expectRefused(more, path, rule, MAX_AGENT_SHARE);
      expect(other.status).toBe(200);
      expect(other.body.expectations).toEqual([{ expectationId: `partner-${tag}`, result: 'raised' }]);
    },
  );

  it('is refused (422 fact-key-subscribers) when its fact key has as many waiting as the bridge lets wait', async () => {
    const factKey = `bounds/full-${unique()}`;
    const tag = unique();
    const waiting = (i: number) =>
      expectation(`waits-${tag}-${i}`, {
        satisfiedBy: { factKey },
        subject: { type: 'shipment', id: `W-${tag}-${i}` },
      });
    await raiseMany(refusedAt, waiting, occupancyQuery(taskQueue, { factKey }));
    // The bridge reads a key's load from its router's memo, which the router updates in its next workflow task.
    const router = factRouterWorkflowId(factKey, taskQueue);
    await waitUntil(`the router's memo to list ${refusedAt} on the key`, async () => {
      return ((await getFactRouterMemo(watcher.client, router))?.crowded[factKey] ?? 0) >= refusedAt;
    });

    const answer = await raiseAs('third-agent', expectation(`full-key-${unique()}`, { satisfiedBy: { factKey } }));

    expectRefused(answer, 'satisfiedBy/factKey', 'fact-key-subscribers', refusedAt);
  });

  it('is refused (422 anchor-dependents) when its anchor has as many dependents as the bridge gives it, and raised one short of that', async () => {
    const anchor = expectation(`anchor-${unique()}`);
    expect((await raise(anchor)).status).toBe(200);
    const handle = watcher.client.workflow.getHandle(expectationWorkflowId(anchor.expectationId));
    for (const workflowId of placeholders(refusedAt - 1)) await handle.signal(registerDependentSignal, { workflowId });
    const dependent = (name: string) =>
      expectation(`${name}-${unique()}`, { anchor: { expectationId: anchor.expectationId, offset: 'PT1H' } });

    const last = await raise(dependent('last-place'));
    // A refused raise would never link: say so now rather than after the wait below.
    expect(last.status, JSON.stringify(last.body)).toBe(200);
    // The dependent links itself from its first workflow task: on a machine busy with other work, that may take a while.
    await waitUntil(
      'the anchor to count its last dependent',
      async () => (await dependentCount(watcher.client, anchor.expectationId)) === refusedAt,
      { timeoutMs: 90_000 },
    );
    const refused = await raise(dependent('no-place'));

    expectRefused(refused, 'anchor/expectationId', 'anchor-dependents', refusedAt);
  }, 150_000);
});

describe('races at the bounds', () => {
  let bridge: BridgeApp;

  beforeAll(async () => {
    bridge = await startBridgeApp(watcher.client, taskQueue, principals());
  });

  afterAll(async () => {
    await bridge?.close();
  });

  const raise = (e: ReturnType<typeof expectation>) =>
    send(`${bridge.url}/a2a/events`, {
      token: bridge.tokens['shipping-agent']!,
      json: artifactUpdate({ expectations: [e] }),
    });
  const read = (id: string) =>
    send(`${bridge.url}/v1/expectations/${encodeURIComponent(id)}`, { token: bridge.tokens['shipping-agent']! });

  it('answers raised, of twelve concurrent requests of ten on one fact key, only those its router then keeps', async () => {
    const tag = unique();
    const factKey = `bounds/race-${tag}`;
    const agents = ['shipping-agent', 'partner-agent', 'third-agent'];
    const requests = many(12, (r) =>
      many(10, (i) =>
        expectation(`race-${tag}-${r}-${i}`, {
          satisfiedBy: { factKey },
          subject: { type: 'shipment', id: `R-${tag}-${r}-${i}` },
        }),
      ),
    );

    const answers = await Promise.all(
      requests.map((batch, r) =>
        send(`${bridge.url}/a2a/events`, {
          token: bridge.tokens[agents[r % agents.length]!]!,
          json: artifactUpdate({ expectations: batch }),
        }),
      ),
    );

    const raised = requests.flatMap((batch, r) =>
      answers[r]!.status === 200 ? batch.map((e) => ({ e, agent: agents[r % agents.length]! })) : [],
    );
    expect(answers.map((a) => a.status).sort()).toEqual([...many(9, () => 200), ...many(3, () => 422)]);
    for (const answer of answers.filter((a) => a.status === 422)) {
      expect(answer.body.errors).toContainEqual(
        expect.objectContaining({ rule: 'fact-key-subscribers', limit: 100 - RACE_ROOM }),
      );
    }
    // Every one answered raised stays waiting: its router took it (a router past its bound withdraws the newcomer).
    const router = factRouterWorkflowId(factKey, taskQueue);
    await waitUntil(
      'the router to list the key',
      async () => ((await getFactRouterMemo(watcher.client, router))?.crowded[factKey] ?? 0) >= raised.length,
    );
    const states = await Promise.all(
      raised.map(async ({ e, agent }) => {
        const answer = await send(`${bridge.url}/v1/expectations/${encodeURIComponent(e.expectationId)}`, {
          token: bridge.tokens[agent]!,
        });
        return answer.body.state;
      }),
    );
    expect(states.filter((state) => state !== 'open')).toEqual([]);
  });

  it('raises exactly one of five concurrent supersedes of one expectation; the others are refused (409) and start nothing', async () => {
    const tag = unique();
    const parent = expectation(`parent-${tag}`);
    expect((await raise(parent)).status).toBe(200);
    const replacements = many(5, (i) =>
      expectation(`replacement-${tag}-${i}`, { subject: parent.subject, supersedes: parent.expectationId }),
    );

    const answers = await Promise.all(replacements.map(raise));

    const won = answers.flatMap((answer, i) => (answer.status === 200 ? [i] : []));
    expect(won).toHaveLength(1);
    const winner = replacements[won[0]!]!.expectationId;
    expect(answers[won[0]!]!.body.expectations).toEqual([{ expectationId: winner, result: 'raised' }]);
    for (const [i, answer] of answers.entries()) {
      if (i === won[0]) continue;
      expect(answer.status).toBe(409);
      expect(answer.body.errors).toEqual([
        expect.objectContaining({
          path: artifactPath('expectations/0/supersedes'),
          message: expect.stringContaining(`was superseded by '${winner}'`),
        }),
      ]);
      expect((await read(replacements[i]!.expectationId)).status).toBe(404);
    }
    expect((await read(parent.expectationId)).body).toMatchObject({ state: 'withdrawn', supersededBy: winner });
    expect((await read(winner)).body).toMatchObject({ state: 'open', lineage: 1 });
  });
});
