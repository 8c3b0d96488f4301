/**
 * `expectations-watcher/client` against a real bridge on the shared dev server, with a real worker and a real
 * @a2a-js/sdk agent: every call of WatcherClient (raise and withdraw in A2A artifacts, facts, records, lists page by
 * page and as one iteration, the HTTP withdraw, the resend of a lapse, health and readiness), built with the
 * client's own builders, and the problems it throws: 400, 401, 403, 404 and 422 with their field names, and a 503
 * with Retry-After from a bridge whose Temporal is gone.
 */
import { Client, Connection } from '@temporalio/client';
import {
  artifactUpdateEvent,
  expectation,
  fact,
  WatcherClient,
  WatcherProblemError,
  withdrawList,
  withExtension,
  type ExpectationInput,
  type ExpectationRecord,
  type ExtensionPayloadInput,
  type ListFilter,
} from 'expectations-watcher/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectationRecordSchema } from '../../core/schemas/record.js';
import { lapsesFor } from '../support/agent.js';
import { cardJson } from '../support/fixtures.js';
import {
  listItemOf,
  openRecordOf,
  problem,
  startBridgeApp,
  startCardServer,
  unique,
  useAgentBridge,
} from '../support/bridge.js';
import type { CardServer } from '../support/bridge.js';
import { freePort } from '../support/net.js';

let cards: CardServer;

beforeAll(async () => {
  cards = await startCardServer();
  cards.set('good', cardJson());
});

afterAll(async () => {
  await cards?.close();
});

// shipping-agent is a real agent, for the lapse tasks (agent-a's card points nowhere).
const { env, agents } = useAgentBridge('client', { 'shipping-agent': {} }, () => [
  { id: 'agent-a', roles: ['agent'], cardUrl: cards.url('good') },
  { id: 'feed', roles: ['reporter'] },
  { id: 'reader', roles: ['reader'] },
  { id: 'admin', roles: ['admin'] },
]);

/** The client of a principal of the bridge. */
const as = (principal: string) => new WatcherClient({ baseUrl: env.url, token: env.tokens[principal]! });

const inAYear = () =>
  new Date(Math.ceil(Date.now() / 1000) * 1000 + 365 * 86_400_000).toISOString().replace('.000Z', 'Z');

/** A `delivery` expectation on a shipment (a kind the test card declares), due in a year. */
function delivery(overrides: Partial<ExpectationInput> = {}): ExpectationInput {
  const expectationId = `client-${unique()}`;
  return expectation({
    expectationId,
    kind: 'delivery',
    subject: { type: 'shipment', id: `S-${unique()}` },
    expects: 'The shipment is delivered to the consignee',
    satisfiedBy: { factKey: `shipment/${expectationId}/delivered` },
    dueAt: inAYear(),
    grace: 'PT6H',
    basis: 'contract',
    ...overrides,
  });
}

/** The push body of an artifact update carrying `payload`, from the task and context given. */
const artifactWith = (payload: ExtensionPayloadInput, taskId = `task-${unique()}`, contextId = `ctx-${unique()}`) =>
  artifactUpdateEvent({
    taskId,
    contextId,
    artifact: withExtension({ artifactId: `plan-${unique()}`, parts: [{ text: 'plan' }] }, payload),
  });

/** Raises the expectations as agent-a; fails the test unless each was raised. */
async function raise(...expectations: ExpectationInput[]): Promise<void> {
  const result = await as('agent-a').sendEvent(artifactWith({ expectations }));
  expect(result.expectations).toEqual(expectations.map((e) => ({ expectationId: e.expectationId, result: 'raised' })));
}

/** The WatcherProblemError `call` rejects with; the test fails if it resolves or rejects with anything else. */
async function problemOf(call: Promise<unknown>): Promise<WatcherProblemError> {
  const error: unknown = await call.then(
    (value) => new Error(`expected a WatcherProblemError, got ${JSON.stringify(value)}`),
    (e: unknown) => e,
  );
  if (error instanceof WatcherProblemError) return error;
  throw error;
}

const EXT = 'artifactUpdate/artifact/metadata/https:~1~1rsaxb.com~1a2a~1expectations~1v1';

describe('health and readiness', () => {
  it('answers /healthz and /readyz while Temporal answers', async () => {
    const client = new WatcherClient({ baseUrl: env.url, token: 'not needed for these' });

    // Ready once Temporal has seen the new worker poll, which a busy machine can delay: a probe asks again.
    await vi.waitFor(
      async () => {
        expect([await client.health(), await client.ready()]).toEqual([
          { status: 'ok' },
          { status: 'ready', temporal: 'reachable', worker: 'polling' },
        ]);
      },
      { timeout: 20_000, interval: 500 },
    );
  });
});

describe('raising and reading', () => {
  it('raises in an artifact, answers unchanged on the same delivery again, and reads the record back', async () => {
    const e = delivery();
    const event = artifactWith({ expectations: [e] }, 'task-raise', 'ctx-raise');
    const agent = as('agent-a');

    const first = await agent.sendEvent(event);
    const again = await agent.sendEvent(event);
    const record = await agent.getExpectation(e.expectationId);

    expect(first).toEqual({
      expectations: [{ expectationId: e.expectationId, result: 'raised' }],
      facts: [],
      withdrawn: [],
    });
    expect(again.expectations).toEqual([{ expectationId: e.expectationId, result: 'unchanged' }]);
    expect(expectationRecordSchema.safeParse(record).error).toBeUndefined();
    expect(record).toMatchObject(openRecordOf(e, 'agent-a', { taskId: 'task-raise', contextId: 'ctx-raise' }));
  });

  it('reports facts: recorded, then duplicate, and the expectation is satisfied by the reporter', async () => {
    const e = delivery();
    await raise(e);
    const reported = fact({
      factKey: e.satisfiedBy.factKey,
      observedAt: new Date().toISOString(),
      source: 'carrier-x',
      subject: e.subject,
    });
    const feed = as('feed');

    const first = await feed.reportFacts([reported]);
    const again = await feed.reportFacts([reported]);

    expect([first, again]).toEqual([
      { facts: [{ factKey: reported.factKey, result: 'accepted' }] },
      { facts: [{ factKey: reported.factKey, result: 'accepted' }] },
    ]);
    let record: ExpectationRecord | undefined;
    await vi.waitFor(
      async () => {
        record = await as('reader').getExpectation(e.expectationId);
        expect(record.state).toBe('satisfied');
      },
      { timeout: 20_000, interval: 200 },
    );
    expect(record).toMatchObject({
      late: false,
      satisfiedBy: { factKey: reported.factKey, source: 'feed', claimedSource: 'carrier-x' },
    });
  });

  it('reports a fact with wait and gets back the expectation it satisfied, which the record then shows', async () => {
    const e = delivery();
    await raise(e);

    const answer = await as('agent-a').reportFacts(
      [fact({ factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString() })],
      { wait: true },
    );
    const record = await as('agent-a').getExpectation(e.expectationId);

    expect(answer.facts).toEqual([
      {
        factKey: e.satisfiedBy.factKey,
        result: 'recorded',
        awaitedBy: 1,
        expectations: [
          { expectationId: e.expectationId, state: 'satisfied', satisfiedAt: record.satisfiedAt, late: false },
        ],
      },
    ]);
    expect(record.state).toBe('satisfied');
  });
});

describe('withdrawing', () => {
  it('withdraws over HTTP with a reason, and a second time is not-open', async () => {
    const e = delivery();
    await raise(e);
    const agent = as('agent-a');

    const first = await agent.withdraw(e.expectationId, 'the order was cancelled');
    const second = await agent.withdraw(e.expectationId, 'again');

    expect([first, second]).toEqual([
      { expectationId: e.expectationId, result: 'withdrawn' },
      { expectationId: e.expectationId, result: 'not-open' },
    ]);
    expect(await agent.getExpectation(e.expectationId)).toMatchObject({
      state: 'withdrawn',
      withdrawnReason: 'the order was cancelled',
    });
  });

  it('withdraws with a withdraw list in an artifact', async () => {
    const e = delivery();
    await raise(e);

    const result = await as('agent-a').sendEvent(artifactWith({ withdraw: withdrawList([e.expectationId]) }));

    expect(result).toEqual({
      expectations: [],
      facts: [],
      withdrawn: [{ expectationId: e.expectationId, result: 'withdrawn' }],
    });
    expect((await as('reader').getExpectation(e.expectationId)).state).toBe('withdrawn');
  });
});

describe('re-sending a lapse', () => {
  /** The record as `principal` reads it, once `accept` holds. */
  async function recordWhen(
    principal: string,
    id: string,
    accept: (record: ExpectationRecord) => boolean,
  ): Promise<ExpectationRecord> {
    let record: ExpectationRecord | undefined;
    await vi.waitFor(
      async () => {
        record = await as(principal).getExpectation(id);
        expect(accept(record), JSON.stringify(record)).toBe(true);
      },
      { timeout: 45_000, interval: 200 },
    );
    return record!;
  }

  it('re-sends a lapse the agent refused: 202 resent, delivered once, then 200 with nothing sent again', async () => {
    const agent = agents['shipping-agent']!;
    agent.failNext(404, 1);
    const dueAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1_000).toISOString().replace('.000Z', 'Z');
    const e = delivery({ dueAt, grace: 'PT0S' });
    await as('shipping-agent').sendEvent(artifactWith({ expectations: [e] }));
    const failed = await recordWhen(
      'shipping-agent',
      e.expectationId,
      (r) => r.lapses[0]?.delivery.status === 'failed',
    );
    const { messageId } = failed.lapses[0]!.delivery;

    const resent = await as('admin').resendLapse(e.expectationId, messageId);
    const delivered = await recordWhen('admin', e.expectationId, (r) => r.lapses[0]?.delivery.status === 'delivered');
    const again = await as('admin').resendLapse(e.expectationId, messageId);

    expect(resent).toEqual({
      expectationId: e.expectationId,
      result: 'resent',
      delivery: { status: 'pending', messageId, resends: 1, resentAt: expect.any(String), resentBy: 'admin' },
    });
    expect(again).toMatchObject({
      result: 'delivered',
      delivery: { status: 'delivered', messageId },
      lapseTaskId: delivered.lapseTaskId,
    });
    expect(lapsesFor(agent, e.expectationId).map((received) => received.message.messageId)).toEqual([messageId]);
  });

  it('refuses a resend by anyone but an admin (403), and of an unknown lapse (404)', async () => {
    const e = delivery();
    await raise(e);
    const messageId = 'b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8';

    const byReader = await problemOf(as('reader').resendLapse(e.expectationId, messageId));
    const unknown = await problemOf(as('admin').resendLapse(e.expectationId, messageId));

    expect(byReader).toMatchObject({
      status: 403,
      type: problem('forbidden'),
      detail: "principal 'reader' may not re-send lapse tasks (needs admin)",
    });
    expect(unknown).toMatchObject({ status: 404, type: problem('not-found') });
  });
});

describe('listing', () => {
  const subjectType = `crate-${unique()}`;
  const ids: string[] = [];
  const reader = () => as('reader');

  beforeAll(async () => {
    const on = (id: string, extra: Partial<ExpectationInput> = {}) =>
      delivery({ subject: { type: subjectType, id }, ...extra });
    const raised = [on('C-0'), on('C-1'), on('C-2', { kind: 'pickup', basis: 'observed' })];
    await raise(...raised);
    ids.push(...raised.map((e) => e.expectationId));
    await as('agent-a').withdraw(ids[0]!, 'listing test');
  });

  /** The ids the filter lists, once the visibility store shows `count` of them (it is eventually consistent). */
  async function listed(filter: Omit<ListFilter, 'pageToken'>, count: number): Promise<string[]> {
    let found: string[] = [];
    await vi.waitFor(
      async () => {
        found = [];
        for await (const summary of reader().allExpectations(filter)) found.push(summary.expectationId);
        expect(found).toHaveLength(count);
      },
      { timeout: 20_000, interval: 250 },
    );
    return found;
  }

  it('iterates over every page of a subject type, one item per page', async () => {
    const all = await listed({ subjectType, pageSize: 1 }, 3);

    expect(new Set(all)).toEqual(new Set(ids));
  });

  it('pages with pageSize and the nextPageToken it answers, and the last page has none', async () => {
    await listed({ subjectType }, 3);

    // Read again until the store holds still: the withdrawn one closing between two pages moves it in the order.
    await vi.waitFor(
      async () => {
        const first = await reader().listExpectations({ subjectType, pageSize: 2 });
        const second = await reader().listExpectations({ subjectType, pageSize: 2, pageToken: first.nextPageToken });

        expect(first.items).toHaveLength(2);
        expect(first.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(second.items).toHaveLength(1);
        expect(second.nextPageToken).toBeUndefined();
        expect(new Set([...first.items, ...second.items].map((item) => item.expectationId))).toEqual(new Set(ids));
      },
      { timeout: 20_000, interval: 500 },
    );
  });

  it('filters by subject id, kind and state, with summaries from the search attributes', async () => {
    const bySubject = await listed({ subjectType, subjectId: 'C-1' }, 1);
    const byKind = await listed({ subjectType, kind: 'pickup' }, 1);
    const byState = await listed({ subjectType, state: 'withdrawn' }, 1);
    const page = await reader().listExpectations({ subjectType, subjectId: 'C-1', state: 'open', kind: 'delivery' });

    expect([bySubject, byKind, byState]).toEqual([[ids[1]], [ids[2]], [ids[0]]]);
    expect(page).toEqual({
      items: [listItemOf(ids[1]!, { type: subjectType, id: 'C-1' }, 'agent-a')],
    });
  });

  it('refuses a page token of another list with a 400 naming pageToken', async () => {
    await listed({ subjectType }, 3);
    const { nextPageToken } = await reader().listExpectations({ subjectType, pageSize: 1 });

    const error = await problemOf(reader().listExpectations({ subjectType, kind: 'pickup', pageToken: nextPageToken }));

    expect(error).toMatchObject({
      status: 400,
      type: problem('invalid-request'),
      title: 'The request does not match the schema',
      errors: [{ path: 'pageToken', message: 'the page token belongs to a list with other filters' }],
    });
  });
});

describe('problems', () => {
  it('401 for a token that names no principal', async () => {
    const stranger = new WatcherClient({ baseUrl: env.url, token: `nobody-${unique()}` });

    const error = await problemOf(stranger.getExpectation('anything'));

    expect(error).toMatchObject({
      status: 401,
      type: problem('unauthenticated'),
      title: 'No valid bearer token',
      detail: 'the bearer token names no principal',
      errors: [],
      request: { method: 'GET', path: '/v1/expectations/anything' },
    });
    expect(error.message).toBe(
      'GET /v1/expectations/anything: 401 No valid bearer token: the bearer token names no principal',
    );
  });

  it('403 for a reporter reading a record', async () => {
    const error = await problemOf(as('feed').getExpectation('anything'));

    expect(error).toMatchObject({
      status: 403,
      type: problem('forbidden'),
      detail: "principal 'feed' may not read expectations (needs reader, admin, or the agent that raised it)",
    });
  });

  it('404 for an unknown expectation', async () => {
    const id = `ghost-${unique()}`;

    const error = await problemOf(as('reader').getExpectation(id));

    expect(error).toMatchObject({
      status: 404,
      type: problem('not-found'),
      title: 'Not found',
      detail: `no expectation '${id}'`,
      errors: [],
    });
  });

  it('422 naming the field and the rule for a kind the card does not declare', async () => {
    const e = delivery({ kind: 'teleport' });

    const error = await problemOf(as('agent-a').sendEvent(artifactWith({ expectations: [e] })));

    const message = "kind 'teleport' is not declared on the agent's card (declared: delivery, pickup)";
    expect(error).toMatchObject({
      status: 422,
      type: problem('rule-violation'),
      title: 'A rule of the extension is broken',
      detail: message,
      errors: [{ path: `${EXT}/expectations/0/kind`, rule: 'kind-declared', message }],
    });
  });

  it('422 naming facts/<i>/observedAt for a fact from the future', async () => {
    const future = fact({ factKey: `k-${unique()}`, observedAt: '9999-12-31T23:59:59Z' });

    const error = await problemOf(
      as('feed').reportFacts([fact({ factKey: `k-${unique()}`, observedAt: new Date().toISOString() }), future]),
    );

    expect(error).toMatchObject({ status: 422, type: problem('rule-violation') });
    expect(error.errors).toEqual([
      {
        path: 'facts/1/observedAt',
        rule: 'observed-at-future',
        message:
          "observedAt 9999-12-31T23:59:59Z is more than PT5M ahead of the watcher's clock; a fact is reported once observed",
      },
    ]);
  });

  it("400 naming the field the bridge's schema refuses when the builder was not used", async () => {
    const error = await problemOf(as('feed').reportFacts([{ factKey: 'k', observedAt: '2026-12-01' }]));

    expect(error).toMatchObject({
      status: 400,
      type: problem('invalid-request'),
      detail: 'facts/0/observedAt: must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z',
      errors: [
        { path: 'facts/0/observedAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' },
      ],
    });
  });

  it('503 with Retry-After from a bridge whose Temporal does not answer', async () => {
    const dead = new Client({
      connection: Connection.lazy({ address: `127.0.0.1:${await freePort()}` }),
      namespace: 'default',
    });
    const bridge = await startBridgeApp(
      dead,
      `client-dead-${unique()}`,
      [{ id: 'agent-a', roles: ['agent'], cardUrl: cards.url('good') }],
      {
        settings: { temporalWaitMs: 1_000 },
      },
    );
    try {
      // Retries off: this asserts the first answer (a client that retries is tested in test/unit/src/client/retry.test.ts).
      const client = new WatcherClient({ baseUrl: bridge.url, token: bridge.tokens['agent-a']!, retry: false });

      const notReady = await problemOf(client.ready());
      const raising = await problemOf(client.sendEvent(artifactWith({ expectations: [delivery()] })));

      expect(notReady).toMatchObject({
        status: 503,
        type: problem('temporal-unavailable'),
        retryAfter: 5,
        detail: 'Temporal does not answer',
      });
      expect(raising).toMatchObject({
        status: 503,
        retryAfter: 5,
        detail:
          'Temporal did not answer within 1000 ms; nothing was half-applied that a retry of the same request would not complete',
      });
    } finally {
      await bridge.close();
      await dead.connection.close();
    }
  });
});
