/**
 * Who may call what (DESIGN 4: one test per principal role and endpoint), the list from the visibility store with
 * filters and paging, the HTTP withdraw, and 503 when Temporal is unreachable.
 */
import { Client, Connection } from '@temporalio/client';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createPrincipalStore, tokenSha256 } from '../../src/auth/principals.js';
import { createApp } from '../../src/http/app.js';
import { expectation } from '../support/fixtures.js';
import {
  artifactUpdate,
  invalidRequest,
  listItemOf,
  problem,
  problemBody,
  request,
  unique,
  useBridgeEnv,
} from '../support/bridge.js';
import type { Answer } from '../support/bridge.js';
import { close, freePort, listen } from '../support/net.js';
import { loopbackAgents } from '../support/outbound.js';

const env = useBridgeEnv(
  ['agent-a', 'agent-b'],
  [
    { id: 'feed', roles: ['reporter'] },
    { id: 'reader', roles: ['reader'] },
    { id: 'admin', roles: ['admin'] },
  ],
  'records',
);

const token = (principal: string) => env.tokens[principal]!;

/** Raises one expectation as agent-a and returns its id. */
async function raised(overrides: Parameters<typeof expectation>[1] = {}, by = 'agent-a'): Promise<string> {
  const e = expectation(`rec-${unique()}`, overrides);
  const answer = await request(`${env.url}/a2a/events`, {
    token: token(by),
    body: artifactUpdate({ expectations: [e] }),
  });
  if (answer.status !== 200) throw new Error(`arrange: raise answered ${answer.status} ${JSON.stringify(answer.body)}`);
  return e.expectationId;
}

const forbidden = (detail: string) => problemBody('forbidden', detail);
const neitherRole = (principal: string) => `principal '${principal}' has neither the agent nor the reporter role`;
const raisedByAnother = (id: string) => `expectation '${id}' was raised by another agent`;
const mayNot = (principal: string, what: string, needs: string) =>
  `principal '${principal}' may not ${what} expectations (needs ${needs})`;

/** A principal, how it calls the endpoint, the status it gets, and the detail of a 403 (from the expectation's id). */
type Row = [
  principal: string,
  act: (principal: string) => Promise<Answer>,
  status: number,
  detail?: string | ((id: string) => string),
];

describe('roles and endpoints', () => {
  let lastId = '';
  const raise = (principal: string) =>
    request(`${env.url}/a2a/events`, {
      token: token(principal),
      body: artifactUpdate({ expectations: [expectation(`role-${unique()}`)] }),
    });
  const reportFact = (principal: string) =>
    request(`${env.url}/v1/facts`, {
      token: token(principal),
      body: { facts: [{ factKey: `role-${unique()}`, observedAt: '2026-01-01T00:00:00Z' }] },
    });
  const eventWithFact = (principal: string) =>
    request(`${env.url}/a2a/events`, {
      token: token(principal),
      body: artifactUpdate({ facts: [{ factKey: `role-${unique()}`, observedAt: '2026-01-01T00:00:00Z' }] }),
    });
  const read = async (principal: string) => {
    lastId = await raised();
    return request(`${env.url}/v1/expectations/${lastId}`, { token: token(principal) });
  };
  const list = (principal: string) => request(`${env.url}/v1/expectations?pageSize=1`, { token: token(principal) });
  const withdraw = async (principal: string) => {
    lastId = await raised();
    return request(`${env.url}/v1/expectations/${lastId}/withdraw`, {
      token: token(principal),
      body: { reason: 'test' },
    });
  };

  /** Acts as the row's principal: the status, then the whole 403 body, or what `granted` checks of an answer let in. */
  async function expectRow([principal, act, status, detail]: Row, granted?: (answer: Answer) => void) {
    const answer = await act(principal);

    expect(answer.status).toBe(status);
    if (detail === undefined) granted?.(answer);
    else expect(answer.body).toEqual(forbidden(typeof detail === 'string' ? detail : detail(lastId)));
  }

  it.each<[endpoint: string, ...Row]>([
    ['POST /a2a/events', 'agent-a', raise, 200],
    ['POST /a2a/events', 'feed', eventWithFact, 200],
    ['POST /a2a/events', 'reader', raise, 403, neitherRole('reader')],
    ['POST /a2a/events', 'admin', raise, 403, neitherRole('admin')],
    ['POST /v1/facts', 'agent-a', reportFact, 200],
    ['POST /v1/facts', 'feed', reportFact, 200],
    ['POST /v1/facts', 'reader', reportFact, 403, neitherRole('reader')],
    ['POST /v1/facts', 'admin', reportFact, 403, neitherRole('admin')],
  ])('%s as %s', (_endpoint, ...row) => expectRow(row));

  it('POST /a2a/events as a reporter carrying expectations is 403, naming each item', async () => {
    const answer = await raise('feed');

    expect(answer.body).toEqual({
      ...forbidden("principal 'feed' is a reporter: it may report facts, not raise or withdraw expectations"),
      errors: [
        {
          path: 'artifactUpdate/artifact/metadata/https:~1~1rsaxb.com~1a2a~1expectations~1v1/expectations/0',
          message: 'a reporter may carry facts only',
        },
      ],
    });
  });

  it.each<Row>([
    ['agent-a', read, 200],
    ['agent-b', read, 403, raisedByAnother],
    ['feed', read, 403, mayNot('feed', 'read', 'reader, admin, or the agent that raised it')],
    ['reader', read, 200],
    ['admin', read, 200],
  ])('GET /v1/expectations/{id} as %s', (...row) =>
    expectRow(row, (answer) => expect(answer.body.expectation.expectationId).toBe(lastId)),
  );

  it.each<Row>([
    ['agent-a', list, 200],
    ['feed', list, 403, mayNot('feed', 'list', 'reader, admin or agent')],
    ['reader', list, 200],
    ['admin', list, 200],
  ])('GET /v1/expectations as %s', (...row) =>
    expectRow(row, (answer) => expect(Array.isArray(answer.body.items)).toBe(true)),
  );

  it.each<Row>([
    ['agent-a', withdraw, 200],
    ['agent-b', withdraw, 403, raisedByAnother],
    ['feed', withdraw, 403, mayNot('feed', 'withdraw', 'admin, or the agent that raised it')],
    ['reader', withdraw, 403, mayNot('reader', 'withdraw', 'admin, or the agent that raised it')],
    ['admin', withdraw, 200],
  ])('POST /v1/expectations/{id}/withdraw as %s', (...row) =>
    expectRow(row, (answer) => expect(answer.body).toEqual({ expectationId: lastId, result: 'withdrawn' })),
  );
});

describe('withdraw', () => {
  it('records the reason, and a second withdraw is a no-op reported as not-open', async () => {
    const id = await raised();
    const url = `${env.url}/v1/expectations/${id}/withdraw`;

    const first = await request(url, { token: token('agent-a'), body: { reason: 'the order was cancelled' } });
    const second = await request(url, { token: token('agent-a'), body: { reason: 'again' } });

    expect([first.body, second.body]).toEqual([
      { expectationId: id, result: 'withdrawn' },
      { expectationId: id, result: 'not-open' },
    ]);
    const read = await request(`${env.url}/v1/expectations/${id}`, { token: token('reader') });
    expect(read.body).toMatchObject({ state: 'withdrawn', withdrawnReason: 'the order was cancelled' });
  });

  it('answers 404 for an unknown expectation', async () => {
    const answer = await request(`${env.url}/v1/expectations/ghost-${unique()}/withdraw`, {
      token: token('admin'),
      body: { reason: 'x' },
    });

    expect(answer.status).toBe(404);
  });

  it('needs a reason', async () => {
    const answer = await request(`${env.url}/v1/expectations/any/withdraw`, { token: token('admin'), body: {} });

    expect(answer.body).toEqual(invalidRequest(['reason', 'Invalid input: expected string, received undefined']));
  });
});

describe('list from the visibility store', () => {
  const subjectType = `pallet-${unique()}`;
  const ids: string[] = [];
  let otherId = '';

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) ids.push(await raised({ subject: { type: subjectType, id: `P-${i}` } }));
    otherId = await raised({ subject: { type: subjectType, id: 'P-9' }, kind: 'pickup', basis: 'observed' }, 'agent-b');
  });

  const list = (principal: string, query: string) =>
    request(`${env.url}/v1/expectations?${query}`, { token: token(principal) });

  /** Visibility is eventually consistent: wait until the listing shows `count` items. */
  const listed = async (principal: string, query: string, count: number) => {
    let answer: Answer | undefined;
    await vi.waitFor(
      async () => {
        answer = await list(principal, query);
        expect(answer.body.items).toHaveLength(count);
      },
      { timeout: 20_000, interval: 250 },
    );
    return answer!;
  };

  it('lists a subject type for a reader, with summaries from the search attributes', async () => {
    const answer = await listed('reader', `subjectType=${subjectType}`, 4);

    const mine = answer.body.items.find((item: { expectationId: string }) => item.expectationId === ids[0]);
    expect(mine).toEqual(listItemOf(ids[0]!, { type: subjectType, id: 'P-0' }, 'agent-a'));
  });

  it('shows an agent only its own expectations', async () => {
    const answer = await listed('agent-b', `subjectType=${subjectType}`, 1);

    expect(answer.body.items.map((item: { expectationId: string }) => item.expectationId)).toEqual([otherId]);
  });

  it('filters by subject id, kind and state', async () => {
    const bySubject = await listed('reader', `subjectType=${subjectType}&subjectId=P-1`, 1);
    const byKind = await listed('reader', `subjectType=${subjectType}&kind=pickup`, 1);
    const byState = await listed('reader', `subjectType=${subjectType}&state=satisfied`, 0);

    expect([bySubject.body.items[0].expectationId, byKind.body.items[0].expectationId, byState.body.items]).toEqual([
      ids[1],
      otherId,
      [],
    ]);
  });

  it('pages with pageSize and the nextPageToken it answers', async () => {
    await listed('reader', `subjectType=${subjectType}`, 4);

    const first = await list('reader', `subjectType=${subjectType}&pageSize=3`);
    const second = await list('reader', `subjectType=${subjectType}&pageSize=3&pageToken=${first.body.nextPageToken}`);

    expect(first.body.items).toHaveLength(3);
    expect(first.body.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(second.body.items).toHaveLength(1);
    const all = [...first.body.items, ...second.body.items].map(
      (item: { expectationId: string }) => item.expectationId,
    );
    expect(new Set(all)).toEqual(new Set([...ids, otherId]));
  });

  it('lists an expectation whose id is too long for a workflow id under the id it was raised with', async () => {
    const longType = `crate-${unique()}`;
    // Within the bound of 256 characters (core/limits.ts), past the 255 bytes of a workflow id: é is 2 bytes in UTF-8.
    const e = expectation(`long-${unique()}-${'é'.repeat(200)}`, { subject: { type: longType, id: 'C-1' } });
    const raise = await request(`${env.url}/a2a/events`, {
      token: token('agent-a'),
      body: artifactUpdate({ expectations: [e] }),
    });
    expect(raise.status).toBe(200);

    const answer = await listed('reader', `subjectType=${longType}`, 1);

    expect(answer.body.items[0].expectationId).toBe(e.expectationId);
    expect(answer.body.items[0].workflowId).toMatch(/^expectation:sha256:[0-9a-f]{64}$/);
    expect(
      (await request(`${env.url}/v1/expectations/${encodeURIComponent(e.expectationId)}`, { token: token('reader') }))
        .status,
    ).toBe(200);
  });

  it('refuses subjectId without subjectType (400)', async () => {
    const answer = await list('reader', 'subjectId=P-1');

    expect(answer.body).toEqual(invalidRequest(['subjectId', 'subjectId needs subjectType']));
  });
});

describe('list filters: subject types holding /, a dueAt range, late', () => {
  const list = (query: Record<string, string>) =>
    request(`${env.url}/v1/expectations?${new URLSearchParams(query)}`, { token: token('reader') });
  /** Visibility is eventually consistent: the ids the list shows once it shows `count` items, sorted. */
  const listedIds = async (query: Record<string, string>, count: number) => {
    let ids: string[] = [];
    await vi.waitFor(
      async () => {
        const answer = await list(query);
        expect(answer.status).toBe(200);
        ids = answer.body.items.map((item: { expectationId: string }) => item.expectationId).sort();
        expect(ids).toHaveLength(count);
      },
      { timeout: 20_000, interval: 250 },
    );
    return ids;
  };
  const instant = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

  it('tells a type holding / from a type that is its prefix with an id holding /', async () => {
    const type = `org-${unique()}`;
    // A dueAt of this test's own, to know when the store shows both.
    const due = Date.now() + 200 * 86_400_000 + Math.floor(Math.random() * 86_400) * 1000;
    const dueAt = instant(due - (due % 1000));
    const slashType = await raised({ subject: { type: `${type}/unit`, id: 'U-1' }, dueAt });
    const slashId = await raised({ subject: { type, id: 'unit/U-1' }, dueAt });
    await listedIds({ dueAfter: dueAt, dueBefore: instant(Date.parse(dueAt) + 1000) }, 2);

    const exact = await listedIds({ subjectType: `${type}/unit`, subjectId: 'U-1' }, 1);
    const ofType = await listedIds({ subjectType: `${type}/unit` }, 1);
    const ofPrefix = await listedIds({ subjectType: type }, 1);
    const idWithSlash = await listedIds({ subjectType: type, subjectId: 'unit/U-1' }, 1);

    expect([exact, ofType, ofPrefix, idWithSlash]).toEqual([[slashType], [slashType], [slashId], [slashId]]);
    const subjects = (await list({ subjectType: `${type}/unit` })).body.items.map(
      (item: { subject: unknown }) => item.subject,
    );
    expect(subjects).toEqual([{ type: `${type}/unit`, id: 'U-1' }]);
  });

  it('lists a dueAt range: dueAfter inclusive, dueBefore exclusive, offsets read as instants', async () => {
    const subject = { type: `range-${unique()}`, id: 'R-1' };
    const base = Date.now() + 100 * 86_400_000 - (Date.now() % 1000);
    const hour = 3_600_000;
    const ids: string[] = [];
    for (const offset of [0, 1, 2]) ids.push(await raised({ subject, dueAt: instant(base + offset * hour) }));
    await listedIds({ subjectType: subject.type }, 3);

    const from = await listedIds({ subjectType: subject.type, dueAfter: instant(base + hour) }, 2);
    const until = await listedIds({ subjectType: subject.type, dueBefore: instant(base + hour) }, 1);
    const between = await listedIds(
      { subjectType: subject.type, dueAfter: instant(base), dueBefore: instant(base + 2 * hour) },
      2,
    );
    // base + 1 h written at +02:00.
    const local = new Date(base + hour + 2 * hour).toISOString().replace('.000Z', '+02:00');
    const withOffset = await listedIds({ subjectType: subject.type, dueAfter: local }, 2);

    expect(from).toEqual([ids[1], ids[2]].sort());
    expect(until).toEqual([ids[0]]);
    expect(between).toEqual([ids[0], ids[1]].sort());
    expect(withOffset).toEqual(from);
  });

  it('lists late and on-time satisfactions apart, and neither lists an unsatisfied one', async () => {
    const type = `late-${unique()}`;
    const soon = Date.now() + 120_000;
    const lateId = await raised({ subject: { type, id: 'L-1' }, dueAt: instant(soon - (soon % 1000)) });
    const onTimeId = await raised({ subject: { type, id: 'L-2' } });
    await raised({ subject: { type, id: 'L-3' } });
    // Observed after its dueAt (within WATCHER_MAX_CLOCK_SKEW ahead): late, without waiting for the dueAt.
    const facts = [
      { factKey: `shipment/${lateId}/delivered`, observedAt: instant(soon + 60_000 - (soon % 1000)) },
      { factKey: `shipment/${onTimeId}/delivered`, observedAt: instant(Date.now() - (Date.now() % 1000)) },
    ];
    const reported = await request(`${env.url}/v1/facts`, { token: token('feed'), body: { facts } });
    expect(reported.status).toBe(200);

    const late = await listedIds({ subjectType: type, late: 'true' }, 1);
    const onTime = await listedIds({ subjectType: type, late: 'false' }, 1);
    const summaries = (await list({ subjectType: type, state: 'satisfied' })).body.items;

    expect([late, onTime]).toEqual([[lateId], [onTimeId]]);
    expect(
      Object.fromEntries(
        summaries.map((item: { expectationId: string; late: boolean }) => [item.expectationId, item.late]),
      ),
    ).toEqual({
      [lateId]: true,
      [onTimeId]: false,
    });
    expect((await list({ subjectType: type, state: 'open' })).body.items[0]).not.toHaveProperty('late');
  });

  it('answers 400 naming the parameter for a bad instant, an empty range and a late that is not a boolean', async () => {
    const bad = await list({ dueAfter: '2026-12-01', late: 'yes' });
    const empty = await list({ dueAfter: '2026-12-02T00:00:00Z', dueBefore: '2026-12-01T00:00:00Z' });

    expect(bad.status).toBe(400);
    expect(bad.body).toEqual(
      invalidRequest(
        ['dueAfter', 'dueAfter must be an RFC 3339 date-time, e.g. 2026-12-01T00:00:00Z'],
        ['late', 'late must be true or false'],
      ),
    );
    expect(empty.body).toMatchObject({
      status: 400,
      detail: 'dueBefore: dueBefore must be later than dueAfter',
      errors: [{ path: 'dueBefore', message: 'dueBefore must be later than dueAfter' }],
    });
  });
});

describe('Temporal unreachable (503)', () => {
  it('answers 503 quickly, and the same request sent again once Temporal answers completes with nothing doubled', async () => {
    const port = await freePort();
    const deadClient = new Client({
      connection: Connection.lazy({ address: `127.0.0.1:${port}` }),
      namespace: 'default',
    });
    const app = createApp({
      client: deadClient,
      taskQueue: env.taskQueue,
      namespace: 'default',
      principals: createPrincipalStore({
        principals: [
          {
            id: 'agent-a',
            tokenSha256: tokenSha256(token('agent-a')),
            roles: ['agent'],
            agent: { cardUrl: env.cardUrl },
          },
        ],
      }),
      settings: {
        factRetention: 'P7D',
        lateWindow: 'P30D',
        maxLineage: 10,
        cardCacheSeconds: 0,
        temporalWaitMs: 1_000,
      },
      outbound: loopbackAgents,
    });
    const server = await listen(app);
    const deadUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const e = expectation(`down-${unique()}`);
    const factKey = `down-${unique()}`;
    const body = artifactUpdate({ expectations: [e], facts: [{ factKey, observedAt: '2026-01-01T00:00:00Z' }] });
    try {
      const started = Date.now();
      const down = await request(`${deadUrl}/a2a/events`, { token: token('agent-a'), body });
      const elapsed = Date.now() - started;
      const notReady = await request(`${deadUrl}/readyz`);

      expect(elapsed).toBeLessThan(5_000);
      expect([down.status, down.headers.get('retry-after'), down.body]).toEqual([
        503,
        '5',
        {
          type: problem('temporal-unavailable'),
          title: 'Temporal is unreachable',
          status: 503,
          detail:
            'Temporal did not answer within 1000 ms; nothing was half-applied that a retry of the same request would not complete',
        },
      ]);
      expect(notReady.status).toBe(503);

      const retried = await request(`${env.url}/a2a/events`, { token: token('agent-a'), body });
      const again = await request(`${env.url}/a2a/events`, { token: token('agent-a'), body });
      expect(retried.body.expectations).toEqual([{ expectationId: e.expectationId, result: 'raised' }]);
      expect(again.body).toEqual({
        expectations: [{ expectationId: e.expectationId, result: 'unchanged' }],
        facts: [{ factKey, result: 'accepted' }],
        withdrawn: [],
      });
    } finally {
      await close(server);
      await deadClient.connection.close();
    }
  });
});
