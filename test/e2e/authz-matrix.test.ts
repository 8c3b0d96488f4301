/**
 * Authorization (DESIGN 4): every endpoint against no token, a bad token, a reporter, the owning agent,
 * another agent, a reader and an admin, one test per cell, on the real bridge, a real worker and a real agent's
 * card. Denied changes are checked to have changed nothing. Then: `source` cannot be spoofed, and malformed
 * Authorization headers are 401.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenSha256 } from '../../src/auth/principals.js';
import { EXTENSION_URI, type Expectation } from '../../core/schemas/extension.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique } from '../support/bridge.js';
import type { Answer, BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { useWatcherWorker } from '../support/watcher.js';

const taskQueue = `authz-${randomUUID()}`;
const run = unique();
const watcher = useWatcherWorker(taskQueue);
let agent: TestAgent;
let bridge: BridgeApp;

/** The columns of the matrix: who calls. */
const callers = ['none', 'bad token', 'reporter', 'owning agent', 'other agent', 'reader', 'admin'] as const;
type Caller = (typeof callers)[number];
const principalOf: Record<Exclude<Caller, 'none' | 'bad token'>, string> = {
  reporter: 'carrier-feed',
  'owning agent': 'agent-a',
  'other agent': 'agent-b',
  reader: 'ops-reader',
  admin: 'ops-admin',
};

beforeAll(async () => {
  agent = await startTestAgent();
  bridge = await startBridgeApp(watcher.client, taskQueue, [
    { id: 'agent-a', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'agent-b', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'carrier-feed', roles: ['reporter'] },
    { id: 'ops-reader', roles: ['reader'] },
    { id: 'ops-admin', roles: ['admin'] },
  ]);
});

afterAll(async () => {
  await bridge?.close();
  await agent?.close();
});

/** The token a caller presents (undefined: no Authorization header). */
function tokenOf(caller: Caller): string | undefined {
  if (caller === 'none') return undefined;
  if (caller === 'bad token') return `not-a-token-${randomUUID()}`;
  return bridge.tokens[principalOf[caller]];
}

/** A fresh expectation of agent-a on this run's subject, raised through the bridge. */
async function raisedByA(): Promise<Expectation> {
  const e = dueExpectation(`authz-${unique()}`, new Date(Date.now() + 3_600_000), {
    subject: { type: 'shipment', id: `authz-${run}` },
  });
  const answer = await send(`${bridge.url}/a2a/events`, {
    token: bridge.tokens['agent-a'],
    json: artifactUpdate({ expectations: [e] }),
  });
  if (answer.status !== 200) throw new Error(`arrange: raise answered ${answer.status} ${JSON.stringify(answer.body)}`);
  return e;
}

const stateOf = async (id: string) => (await getExpectationRecord(watcher.client, id))?.state;

/** What one cell does, and what it checks beyond the status (for a denied change: that nothing changed). */
interface Endpoint {
  name: string;
  act(token: string | undefined): Promise<{ answer: Answer; after?: () => Promise<unknown>; expectedAfter?: unknown }>;
  expected: Record<Caller, number>;
}

/** A row of the matrix: the statuses for none, bad token, reporter, owning agent, other agent, reader, admin. */
function row(...statuses: number[]): Record<Caller, number> {
  if (statuses.length !== callers.length) throw new Error(`a row needs ${callers.length} statuses`);
  return Object.fromEntries(callers.map((caller, i) => [caller, statuses[i]])) as Record<Caller, number>;
}
const allowed = (status: number) => row(...callers.map(() => status));
const ownerOnly = row(401, 401, 403, 200, 403, 403, 403);
const anyReporter = row(401, 401, 200, 200, 200, 403, 403);

/** Items of a list answer, by id. */
const listedIds = (answer: Answer): string[] =>
  (answer.body.items ?? []).map((item: { expectationId: string }) => item.expectationId);

/** Raises `e` with the caller's token; the cell then reads the state of `watched` (default: `e` itself). */
async function raising(token: string | undefined, e: Expectation, watched = e.expectationId, changed = 'open') {
  const answer = await send(`${bridge.url}/a2a/events`, { token, json: artifactUpdate({ expectations: [e] }) });
  const unchanged = watched === e.expectationId ? undefined : 'open';
  return { answer, after: () => stateOf(watched), expectedAfter: answer.status === 200 ? changed : unchanged };
}

const inAnHour = () => new Date(Date.now() + 3_600_000);
const aFact = () => ({ factKey: `authz-fact-${unique()}`, observedAt: new Date().toISOString() });

let shared: Expectation;
const endpoints: Endpoint[] = [
  {
    name: 'POST /a2a/events raising a new expectation',
    act: (token) => raising(token, dueExpectation(`authz-new-${unique()}`, inAnHour())),
    expected: row(401, 401, 403, 200, 200, 403, 403),
  },
  {
    name: "POST /a2a/events raising agent-a's expectation id again, same content",
    async act(token) {
      const answer = await send(`${bridge.url}/a2a/events`, {
        token,
        json: artifactUpdate({ expectations: [shared] }),
      });
      return {
        answer,
        after: async () => (await getExpectationRecord(watcher.client, shared.expectationId))?.agent.id,
        expectedAfter: 'agent-a',
      };
    },
    expected: row(401, 401, 403, 200, 409, 403, 403),
  },
  {
    name: "POST /a2a/events superseding agent-a's expectation",
    async act(token) {
      const old = await raisedByA();
      const e = dueExpectation(`authz-sup-${unique()}`, inAnHour(), { supersedes: old.expectationId });
      return raising(token, e, old.expectationId, 'withdrawn');
    },
    expected: ownerOnly,
  },
  {
    // B could otherwise make A receive a skipped lapse: only the owner may order after its expectation.
    name: "POST /a2a/events raising one after agent-a's expectation",
    async act(token) {
      const old = await raisedByA();
      const e = dueExpectation(`authz-after-${unique()}`, inAnHour(), {
        subject: old.subject,
        after: [old.expectationId],
      });
      return raising(token, e);
    },
    expected: ownerOnly,
  },
  {
    // B would otherwise learn from its own due time when A's expectation was satisfied (DESIGN 3.4).
    name: "POST /a2a/events raising one anchored on agent-a's expectation",
    async act(token) {
      const old = await raisedByA();
      const e = dueExpectation(`authz-anchor-${unique()}`, inAnHour(), {
        anchor: { expectationId: old.expectationId, offset: 'PT1H' },
      });
      return raising(token, e);
    },
    expected: ownerOnly,
  },
  {
    name: "POST /a2a/events withdrawing agent-a's expectation",
    async act(token) {
      const old = await raisedByA();
      const json = artifactUpdate({ withdraw: [old.expectationId] });
      const answer = await send(`${bridge.url}/a2a/events`, { token, json });
      return {
        answer,
        after: () => stateOf(old.expectationId),
        expectedAfter: answer.status === 200 ? 'withdrawn' : 'open',
      };
    },
    expected: ownerOnly,
  },
  {
    name: 'POST /a2a/events with facts only (a plain message)',
    async act(token) {
      const message = {
        message: {
          messageId: `m-${unique()}`,
          role: 'ROLE_AGENT',
          parts: [{ text: 'delivered' }],
          metadata: { [EXTENSION_URI]: { facts: [aFact()] } },
        },
      };
      return { answer: await send(`${bridge.url}/a2a/events`, { token, json: message }) };
    },
    expected: anyReporter,
  },
  {
    name: 'POST /v1/facts',
    act: async (token) => ({ answer: await send(`${bridge.url}/v1/facts`, { token, json: { facts: [aFact()] } }) }),
    expected: anyReporter,
  },
  {
    name: "GET /v1/expectations/{id} of agent-a's expectation",
    async act(token) {
      const answer = await send(`${bridge.url}/v1/expectations/${encodeURIComponent(shared.expectationId)}`, { token });
      if (answer.status === 200) expect(answer.body).toMatchObject({ expectation: shared, agent: { id: 'agent-a' } });
      return { answer };
    },
    expected: row(401, 401, 403, 200, 403, 200, 200),
  },
  {
    name: 'GET /v1/expectations/{id} of an id never raised',
    act: async (token) => ({ answer: await send(`${bridge.url}/v1/expectations/authz-ghost-${unique()}`, { token }) }),
    expected: row(401, 401, 403, 404, 404, 404, 404),
  },
  {
    name: "GET /v1/expectations on agent-a's subject",
    async act(token) {
      const answer = await send(`${bridge.url}/v1/expectations?subjectType=shipment&subjectId=authz-${run}`, { token });
      // Readers, admins and the owner see agent-a's expectation; another agent sees none of it.
      return { answer, after: async () => listedIds(answer).includes(shared.expectationId) };
    },
    expected: row(401, 401, 403, 200, 200, 200, 200),
  },
  {
    name: 'GET /v1/statistics of every agent the caller may read',
    async act(token) {
      const answer = await send(`${bridge.url}/v1/statistics`, { token });
      // Readers, admins and the owner see agent-a's figures; another agent sees none of them.
      const items: Array<{ agent: string }> = answer.body.items ?? [];
      return { answer, after: async () => items.some((item) => item.agent === 'agent-a') };
    },
    expected: row(401, 401, 403, 200, 200, 200, 200),
  },
  {
    name: "GET /v1/statistics naming agent-a's figures",
    act: async (token) => ({ answer: await send(`${bridge.url}/v1/statistics?agent=agent-a`, { token }) }),
    expected: row(401, 401, 403, 200, 403, 200, 200),
  },
  {
    name: "POST /v1/expectations/{id}/withdraw of agent-a's expectation",
    async act(token) {
      const old = await raisedByA();
      const answer = await send(`${bridge.url}/v1/expectations/${encodeURIComponent(old.expectationId)}/withdraw`, {
        token,
        json: { reason: 'authorization matrix' },
      });
      return {
        answer,
        after: () => stateOf(old.expectationId),
        expectedAfter: answer.status === 200 ? 'withdrawn' : 'open',
      };
    },
    expected: row(401, 401, 403, 200, 403, 403, 200),
  },
  {
    name: 'GET /healthz',
    act: async (token) => ({ answer: await send(`${bridge.url}/healthz`, { token }) }),
    expected: allowed(200),
  },
  {
    name: 'GET /readyz',
    act: async (token) => ({ answer: await send(`${bridge.url}/readyz`, { token }) }),
    expected: allowed(200),
  },
  {
    name: 'GET /metrics',
    act: async (token) => ({ answer: await send(`${bridge.url}/metrics`, { token }) }),
    expected: allowed(200),
  },
  {
    name: 'GET an unknown route',
    act: async (token) => ({ answer: await send(`${bridge.url}/v1/nothing-here`, { token }) }),
    expected: allowed(404),
  },
];

const cells = endpoints.flatMap((endpoint) =>
  callers.map((caller) => [endpoint.name, caller, endpoint.expected[caller], endpoint] as const),
);

describe('authorization matrix', () => {
  beforeAll(async () => {
    shared = await raisedByA();
    // The list is read from the visibility store, which lags: wait until a reader sees the expectation.
    await waitUntil('the expectation in the visibility store', async () => {
      const answer = await send(`${bridge.url}/v1/expectations?subjectType=shipment&subjectId=authz-${run}`, {
        token: bridge.tokens['ops-reader'],
      });
      return listedIds(answer).includes(shared.expectationId);
    });
  });

  it.each(cells)('%s as %s: %i', async (_name, caller, status, endpoint) => {
    const { answer, after, expectedAfter } = await endpoint.act(tokenOf(caller));

    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    if (status >= 400) {
      expect(answer.contentType).toContain('application/problem+json');
      expect(answer.body.status).toBe(status);
    }
    if (status === 401) expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    // No answer of the API, granted or refused, is kept by a browser or a shared cache.
    if (/^(GET|POST) \/(v1|a2a)\//.test(endpoint.name)) expect(answer.headers.get('cache-control')).toBe('no-store');
    if (endpoint.name.startsWith('GET /v1/expectations on') || endpoint.name.startsWith('GET /v1/statistics of')) {
      expect(await after!()).toBe(status === 200 && caller !== 'other agent');
    } else if (after) {
      // A supersede withdraws the old expectation from the new one's workflow: the effect follows the answer.
      let seen: unknown;
      await waitUntil(
        `the state to become ${String(expectedAfter)}`,
        async () => (seen = await after()) === expectedAfter,
        {
          timeoutMs: 15_000,
        },
      ).catch(() => undefined);
      expect(seen).toBe(expectedAfter);
    }
  });
});

describe('identity cannot be borrowed', () => {
  it.each([
    ['carrier-feed', 'agent-a'],
    ['agent-b', 'agent-a'],
    ['carrier-feed', 'ops-admin'],
  ])(
    'a fact reported by %s claiming source %s is attributed to its reporter, the claim kept apart',
    async (reporter, claimed) => {
      const e = await raisedByA();

      const answer = await send(`${bridge.url}/v1/facts`, {
        token: bridge.tokens[reporter],
        json: { facts: [{ factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString(), source: claimed }] },
      });
      const record = await waitUntil('the expectation satisfied', async () => {
        const read = await getExpectationRecord(watcher.client, e.expectationId);
        return read?.state === 'satisfied' ? read : undefined;
      });

      expect(answer.status).toBe(200);
      expect(record.satisfiedBy).toMatchObject({ source: reporter, claimedSource: claimed });
    },
  );

  it.each([
    ['a Basic header', () => `Basic ${Buffer.from(`agent-a:${bridge.tokens['agent-a']}`).toString('base64')}`],
    ['a bare token without the scheme', () => bridge.tokens['agent-a']!],
    ['Bearer with nothing after it', () => 'Bearer '],
    ['two tokens', () => `Bearer ${bridge.tokens['agent-a']} ${bridge.tokens['ops-admin']}`],
    ["agent-a's token with one character more", () => `Bearer ${bridge.tokens['agent-a']}x`],
    ["agent-a's token cut short", () => `Bearer ${bridge.tokens['agent-a']!.slice(0, -1)}`],
    ["agent-a's stored sha256 presented as the token", () => `Bearer ${tokenSha256(bridge.tokens['agent-a']!)}`],
  ])('answers 401 to %s', async (_case, authorization) => {
    const answer = await send(`${bridge.url}/v1/facts`, {
      authorization: authorization(),
      json: { facts: [{ factKey: `authz-fact-${unique()}`, observedAt: new Date().toISOString() }] },
    });

    expect(answer.status).toBe(401);
    expect(answer.contentType).toContain('application/problem+json');
  });
});
