/**
 * The OpenAPI document of the bridge against the app it describes, on the real bridge, a real worker on
 * the dev server and a real A2A agent's card: the document is OpenAPI 3.1 in structure; every route the app mounts is
 * in it with its method and nothing else is; every status documented for an operation is one a real request gets,
 * with the documented media type, headers and body schema; and the roles it names are the ones let in.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrincipalStore, roles, type Role } from '../../src/auth/principals.js';
import { loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { openApiDocument } from '../../src/http/openapi.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { connectClient, isReachable } from '../../src/temporal/connection.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { principalsFileOf, type PrincipalSpec } from '../support/agents.js';
import { dueExpectation, expectation } from '../support/fixtures.js';
import { artifactUpdate, send, startBridgeApp, unique } from '../support/bridge.js';
import type { Answer, BridgeApp } from '../support/bridge.js';
import { waitUntil } from '../support/faults.js';
import { freePort } from '../support/net.js';
import { dereference, documentedOperations, mountedRoutes, openApiProblems, validatorOf } from '../support/openapi.js';
import { loopbackAgents } from '../support/outbound.js';
import { useWatcherWorker } from '../support/watcher.js';

const taskQueue = `openapi-${randomUUID()}`;
const watcher = useWatcherWorker(taskQueue);
const doc = openApiDocument() as Record<string, any>;
let agent: TestAgent;
/** The bridge on the dev server, and one whose Temporal is a port where nothing listens. */
let bridge: BridgeApp;
let down: BridgeApp;
let downClient: Client;
/** A bridge whose principals may send one fact per minute, so that a request with two is a 429. */
let limited: BridgeApp;
/** An expectation of shipping-agent's, raised before the tests. */
let shared: ReturnType<typeof expectation>;
/** Two lapses of shipping-agent's expectations whose delivery failed for good: one to re-send, one to see ended. */
let failedLapses: { resent: FailedLapse; ended: FailedLapse };

/** One principal per role, and an agent whose card URL nobody answers. */
async function principals(): Promise<PrincipalSpec[]> {
  return [
    { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'carrier-feed', roles: ['reporter'] },
    { id: 'ops-reader', roles: ['reader'] },
    { id: 'ops-admin', roles: ['admin'] },
    { id: 'lost-agent', roles: ['agent'], cardUrl: `http://127.0.0.1:${await freePort()}/.well-known/agent-card.json` },
  ];
}
const principalOf: Record<Role, string> = {
  agent: 'shipping-agent',
  reporter: 'carrier-feed',
  reader: 'ops-reader',
  admin: 'ops-admin',
};

beforeAll(async () => {
  agent = await startTestAgent();
  bridge = await startBridgeApp(watcher.client, taskQueue, await principals());
  // The agent refuses both lapses with a 404 (not retried): the fast way to deliveries that failed for good.
  agent.failNext(404, 2);
  limited = await startBridgeApp(watcher.client, taskQueue, await principals(), {
    settings: { quotas: { openExpectations: 0, raisesPerMinute: 0, factsPerMinute: 1 } },
  });
  shared = expectation(`openapi-${unique()}`);
  const startDown = async () => {
    downClient = await connectClient(`127.0.0.1:${await freePort()}`, loadConfig({}).temporal);
    down = await startBridgeApp(downClient, `${taskQueue}-down`, await principals(), {
      isTemporalReachable: () => isReachable(downClient),
    });
  };
  const [resent, ended] = await Promise.all([
    raiseFailedLapse(),
    raiseFailedLapse(),
    raiseOrThrow(shared),
    startDown(),
  ]);
  failedLapses = { resent, ended };
});

afterAll(async () => {
  await limited?.close();
  await down?.close();
  await downClient?.connection.close();
  await bridge?.close();
  await agent?.close();
});

const token = (principal: string, on: BridgeApp = bridge) => on.tokens[principal]!;
const fact = (observedAt = new Date().toISOString()) => ({ factKey: `openapi/${unique()}`, observedAt });

/** Raises `e` as shipping-agent, or throws. */
async function raiseOrThrow(e: ReturnType<typeof expectation>): Promise<void> {
  const raised = await send(`${bridge.url}/a2a/events`, {
    token: token('shipping-agent'),
    json: artifactUpdate({ expectations: [e] }),
  });
  if (raised.status !== 200) throw new Error(`arrange: raise answered ${raised.status} ${JSON.stringify(raised.body)}`);
}

interface FailedLapse {
  expectationId: string;
  messageId: string;
}

/** Raises an expectation of shipping-agent's due at once and resolves when its lapse's delivery has failed. */
async function raiseFailedLapse(): Promise<FailedLapse> {
  const e = dueExpectation(`openapi-lapse-${unique()}`, new Date());
  await raiseOrThrow(e);
  const failed = await waitUntil(
    `the failed lapse of ${e.expectationId}`,
    async () => {
      const lapse = (await getExpectationRecord(watcher.client, e.expectationId))?.lapses[0];
      return lapse?.delivery.status === 'failed' ? lapse : undefined;
    },
    { intervalMs: 200 },
  );
  return { expectationId: e.expectationId, messageId: failed.delivery.messageId };
}

/** A JSON body just over the 1 MiB limit. */
const tooLarge = () => JSON.stringify({ padding: 'x'.repeat(1024 * 1024) });

/** A v1.0 JSON-RPC SendMessage carrying `payload` under metadata[URI], as `principal` (no token when undefined). */
function sendMessage(principal: string | undefined, payload: unknown): Promise<Answer> {
  const message = {
    messageId: randomUUID(),
    role: 'ROLE_USER',
    parts: [{ text: 'for the watcher' }],
    metadata: { [EXTENSION_URI]: payload },
    extensions: [EXTENSION_URI],
  };
  return fetchAnswer(`${bridge.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'a2a-version': '1.0',
      'a2a-extensions': EXTENSION_URI,
      ...(principal ? { authorization: `Bearer ${token(principal)}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message } }),
  });
}

/** `fetch` read as an Answer (for requests `send` cannot make: other headers, other methods). */
async function fetchAnswer(url: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return {
    status: response.status,
    headers: response.headers,
    contentType: response.headers.get('content-type') ?? '',
    body,
    ms: Date.now() - started,
  };
}

/** The state of the receipt Task a SendMessage answered with. */
const receiptState = (answer: Answer): string | undefined => answer.body?.result?.task?.status?.state;

describe('the document', () => {
  it('is OpenAPI 3.1 in structure: info, paths, components.schemas, and every $ref resolves', () => {
    expect(openApiProblems(doc)).toEqual([]);
  });

  it('documents bearer security for the routes that need a token, the roles each takes, and none for the public ones', () => {
    const access = Object.fromEntries(
      documentedOperations(doc).map(({ method, path, operation }) => [
        `${method.toUpperCase()} ${path}`,
        operation.security === undefined ? operation['x-roles'] : 'public',
      ]),
    );

    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(access).toEqual({
      'POST /a2a/events': ['agent', 'reporter'],
      'POST /v1/facts': ['agent', 'reporter'],
      'GET /v1/expectations': ['agent', 'reader', 'admin'],
      'GET /v1/expectations/{id}': ['agent', 'reader', 'admin'],
      'GET /v1/statistics': ['agent', 'reader', 'admin'],
      'POST /v1/expectations/{id}/withdraw': ['agent', 'admin'],
      'POST /v1/expectations/{id}/lapses/{messageId}/resend': ['admin'],
      'POST /a2a/jsonrpc': ['agent', 'reporter'],
      'GET /healthz': 'public',
      'GET /readyz': 'public',
      'GET /metrics': 'public',
      'GET /openapi.json': 'public',
      'GET /.well-known/agent-card.json': 'public',
    });
  });
});

describe('the routes', () => {
  const app = createApp({
    client: watcher.client,
    taskQueue,
    namespace: 'default',
    principals: createPrincipalStore(principalsFileOf([])),
    settings: { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 0 },
    outbound: loopbackAgents,
  });
  const mounted = mountedRoutes(app);
  const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
  const routes = mounted.filter((m) => m.method !== '*').map((m) => key(m.method, m.path));
  /** Paths where middleware that is no router answers (the agent card, the bearer check of /a2a/jsonrpc). */
  const boundPaths = new Set(mounted.filter((m) => m.method === '*').map((m) => m.path));
  const documented = documentedOperations(doc);

  it('every route the app mounts is documented with its method', () => {
    const documentedKeys = new Set(documented.map((d) => key(d.method, d.path)));

    expect(routes.filter((route) => !documentedKeys.has(route))).toEqual([]);
    // A prefix (the in-flight bound on /a2a and /v1) answers for the documented routes under it.
    expect(
      [...boundPaths].filter((path) => !documented.some((d) => d.path === path || d.path.startsWith(`${path}/`))),
    ).toEqual([]);
  });

  it('everything documented is mounted: a route, or on a path where middleware answers', () => {
    const absent = documented.filter((d) => !routes.includes(key(d.method, d.path)) && !boundPaths.has(d.path));

    expect(absent.map((d) => key(d.method, d.path))).toEqual([]);
    expect(routes).toContain('POST /a2a/jsonrpc'); // found inside the SDK's router
  });

  it('on a path where middleware answers, a method not documented is a 404', async () => {
    const undocumented = [...boundPaths].flatMap((path) =>
      ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
        .filter((method) => !documented.some((d) => d.path === path && d.method.toUpperCase() === method))
        .map((method) => ({ method, path })),
    );

    const answers = await Promise.all(
      undocumented.map(async ({ method, path }) => {
        const answer = await fetchAnswer(`${bridge.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token('ops-admin')}` },
        });
        return `${method} ${path} ${answer.status}`;
      }),
    );

    expect(undocumented.length).toBeGreaterThan(0);
    expect(answers).toEqual(undocumented.map(({ method, path }) => `${method} ${path} 404`));
  });
});

/** A request that gets one documented status of one operation. */
interface StatusCase {
  operation: string;
  status: number;
  act(): Promise<Answer>;
}

const events = (on = bridge) => `${on.url}/a2a/events`;
const facts = (on = bridge) => `${on.url}/v1/facts`;
const list = (on = bridge) => `${on.url}/v1/expectations`;
const statistics = (on = bridge) => `${on.url}/v1/statistics`;
const record = (id: string, on = bridge) => `${on.url}/v1/expectations/${encodeURIComponent(id)}`;
const withdraw = (id: string, on = bridge) => `${record(id, on)}/withdraw`;
const resend = (id: string, messageId: string, principal?: string, on = bridge) =>
  send(`${record(id, on)}/lapses/${messageId}/resend`, {
    method: 'POST',
    ...(principal ? { token: token(principal, on) } : {}),
  });
const raise = (principal: string, e = expectation(`openapi-${unique()}`), on = bridge) =>
  send(events(on), { token: token(principal, on), json: artifactUpdate({ expectations: [e] }) });

/** The 413 and 415 of an operation that takes a JSON body at `url` as `principal`: over 1 MiB, and not JSON. */
const refusedBodies = (
  operation: string,
  url: () => string,
  principal: string,
  notJson: { raw: string; contentType: string },
): StatusCase[] => [
  { operation, status: 413, act: () => send(url(), { token: token(principal), raw: tooLarge() }) },
  { operation, status: 415, act: () => send(url(), { token: token(principal), ...notJson }) },
];

const cases: StatusCase[] = [
  { operation: 'GET /healthz', status: 200, act: () => send(`${bridge.url}/healthz`) },
  { operation: 'GET /readyz', status: 200, act: () => send(`${bridge.url}/readyz`) },
  { operation: 'GET /readyz', status: 503, act: () => send(`${down.url}/readyz`) },
  { operation: 'GET /metrics', status: 200, act: () => send(`${bridge.url}/metrics`) },
  { operation: 'GET /openapi.json', status: 200, act: () => send(`${bridge.url}/openapi.json`) },
  {
    operation: 'GET /.well-known/agent-card.json',
    status: 200,
    act: () => send(`${bridge.url}/.well-known/agent-card.json`),
  },
  {
    operation: 'GET /.well-known/agent-card.json',
    status: 304,
    async act() {
      const first = await fetchAnswer(`${bridge.url}/.well-known/agent-card.json`);
      // fetch adds `Cache-Control: no-cache` to a conditional request unless it carries one, and no-cache is never fresh.
      const headers = { 'if-none-match': first.headers.get('etag') ?? '', 'cache-control': 'max-age=0' };
      return fetchAnswer(`${bridge.url}/.well-known/agent-card.json`, { headers });
    },
  },
  { operation: 'POST /a2a/jsonrpc', status: 200, act: () => sendMessage('carrier-feed', { facts: [fact()] }) },
  { operation: 'POST /a2a/jsonrpc', status: 401, act: () => sendMessage(undefined, { facts: [fact()] }) },
  {
    operation: 'POST /a2a/jsonrpc',
    status: 204,
    act: () =>
      send(`${bridge.url}/a2a/jsonrpc`, {
        token: token('carrier-feed'),
        json: { jsonrpc: '2.0', method: 'GetTask', params: { id: 'x' } },
      }),
  },
  {
    operation: 'POST /a2a/jsonrpc',
    status: 413,
    act: () => send(`${bridge.url}/a2a/jsonrpc`, { token: token('carrier-feed'), raw: tooLarge() }),
  },

  { operation: 'POST /a2a/events', status: 200, act: () => raise('shipping-agent') },
  {
    operation: 'POST /a2a/events',
    status: 400,
    act: () => send(events(), { token: token('shipping-agent'), raw: '{"artifactUpdate":' }),
  },
  {
    operation: 'POST /a2a/events',
    status: 401,
    act: () => send(events(), { json: artifactUpdate({ facts: [fact()] }) }),
  },
  {
    operation: 'POST /a2a/events',
    status: 403,
    act: () => send(events(), { token: token('ops-reader'), json: artifactUpdate({ facts: [fact()] }) }),
  },
  {
    operation: 'POST /a2a/events',
    status: 409,
    act: () => raise('shipping-agent', { ...shared, expects: 'Something else entirely' }),
  },
  ...refusedBodies('POST /a2a/events', () => events(), 'shipping-agent', { raw: 'facts', contentType: 'text/plain' }),
  {
    operation: 'POST /a2a/events',
    status: 422,
    act: () => raise('shipping-agent', expectation(`openapi-${unique()}`, { kind: 'teleport' })),
  },
  {
    operation: 'POST /a2a/events',
    status: 429,
    act: () =>
      send(events(limited), {
        token: token('carrier-feed', limited),
        json: artifactUpdate({ facts: [fact(), fact()] }),
      }),
  },
  { operation: 'POST /a2a/events', status: 502, act: () => raise('lost-agent') },
  { operation: 'POST /a2a/events', status: 503, act: () => raise('shipping-agent', undefined, down) },

  {
    operation: 'POST /v1/facts',
    status: 200,
    act: () => send(facts(), { token: token('carrier-feed'), json: { facts: [fact()] } }),
  },
  {
    operation: 'POST /v1/facts',
    status: 400,
    act: () => send(facts(), { token: token('carrier-feed'), json: { facts: [] } }),
  },
  {
    operation: 'POST /v1/facts',
    status: 401,
    act: () => send(facts(), { token: 'not-a-token', json: { facts: [fact()] } }),
  },
  {
    operation: 'POST /v1/facts',
    status: 403,
    act: () => send(facts(), { token: token('ops-reader'), json: { facts: [fact()] } }),
  },
  ...refusedBodies('POST /v1/facts', () => facts(), 'carrier-feed', {
    raw: '<facts/>',
    contentType: 'application/xml',
  }),
  {
    operation: 'POST /v1/facts',
    status: 422,
    act: () => send(facts(), { token: token('carrier-feed'), json: { facts: [fact('9999-12-31T23:59:59Z')] } }),
  },
  {
    operation: 'POST /v1/facts',
    status: 429,
    act: () => send(facts(limited), { token: token('carrier-feed', limited), json: { facts: [fact(), fact()] } }),
  },
  {
    operation: 'POST /v1/facts',
    status: 503,
    act: () => send(facts(down), { token: token('carrier-feed', down), json: { facts: [fact()] } }),
  },

  {
    operation: 'GET /v1/expectations',
    status: 200,
    // The shared expectation's subject, once the visibility store lists it: a real summary to hold to the schema.
    act: () =>
      waitUntil('the shared expectation to be listed', async () => {
        const query = new URLSearchParams({
          subjectType: shared.subject.type,
          subjectId: shared.subject.id,
          pageSize: '1',
        });
        const answer = await send(`${list()}?${query}`, { token: token('ops-reader') });
        return answer.status !== 200 || answer.body.items?.length > 0 ? answer : undefined;
      }),
  },
  {
    operation: 'GET /v1/expectations',
    status: 400,
    act: () => send(`${list()}?pageSize=0`, { token: token('ops-reader') }),
  },
  { operation: 'GET /v1/expectations', status: 401, act: () => send(list()) },
  { operation: 'GET /v1/expectations', status: 403, act: () => send(list(), { token: token('carrier-feed') }) },
  { operation: 'GET /v1/expectations', status: 503, act: () => send(list(down), { token: token('ops-reader', down) }) },

  { operation: 'GET /v1/statistics', status: 200, act: () => send(statistics(), { token: token('ops-reader') }) },
  {
    operation: 'GET /v1/statistics',
    status: 400,
    act: () => send(`${statistics()}?window=PT1S`, { token: token('ops-reader') }),
  },
  { operation: 'GET /v1/statistics', status: 401, act: () => send(statistics()) },
  {
    // On the limited bridge, whose statistics nobody else asks for: a principal's computations per minute run out.
    operation: 'GET /v1/statistics',
    status: 429,
    act: async () => {
      for (let hours = 1; ; hours++) {
        const answer = await send(`${statistics(limited)}?window=PT${hours}H`, { token: token('ops-reader', limited) });
        if (answer.status !== 200 || hours >= 40) return answer;
      }
    },
  },
  {
    operation: 'GET /v1/statistics',
    status: 403,
    act: () => send(statistics(), { token: token('carrier-feed') }),
  },
  {
    operation: 'GET /v1/statistics',
    status: 503,
    act: () => send(statistics(down), { token: token('ops-reader', down) }),
  },

  {
    operation: 'GET /v1/expectations/{id}',
    status: 200,
    act: () => send(record(shared.expectationId), { token: token('ops-reader') }),
  },
  {
    operation: 'GET /v1/expectations/{id}',
    status: 400,
    act: () => send(`${list()}/%E0%A4%A`, { token: token('ops-reader') }),
  },
  { operation: 'GET /v1/expectations/{id}', status: 401, act: () => send(record(shared.expectationId)) },
  {
    operation: 'GET /v1/expectations/{id}',
    status: 403,
    act: () => send(record(shared.expectationId), { token: token('carrier-feed') }),
  },
  {
    operation: 'GET /v1/expectations/{id}',
    status: 404,
    act: () => send(record(`unknown-${unique()}`), { token: token('ops-reader') }),
  },
  {
    operation: 'GET /v1/expectations/{id}',
    status: 503,
    act: () => send(record(shared.expectationId, down), { token: token('ops-reader', down) }),
  },

  {
    operation: 'POST /v1/expectations/{id}/withdraw',
    status: 200,
    async act() {
      const e = expectation(`openapi-${unique()}`);
      const raised = await raise('shipping-agent', e);
      if (raised.status !== 200) throw new Error(`arrange: raise answered ${raised.status}`);
      return send(withdraw(e.expectationId), {
        token: token('shipping-agent'),
        json: { reason: 'the order was cancelled' },
      });
    },
  },
  {
    operation: 'POST /v1/expectations/{id}/withdraw',
    status: 400,
    act: () => send(withdraw(shared.expectationId), { token: token('shipping-agent'), json: { reason: '' } }),
  },
  {
    operation: 'POST /v1/expectations/{id}/withdraw',
    status: 401,
    act: () => send(withdraw(shared.expectationId), { authorization: 'Basic b3BzOm9wcw==', json: { reason: 'no' } }),
  },
  {
    operation: 'POST /v1/expectations/{id}/withdraw',
    status: 403,
    act: () => send(withdraw(shared.expectationId), { token: token('ops-reader'), json: { reason: 'not mine' } }),
  },
  {
    operation: 'POST /v1/expectations/{id}/withdraw',
    status: 404,
    act: () => send(withdraw(`unknown-${unique()}`), { token: token('ops-admin'), json: { reason: 'unknown' } }),
  },
  ...refusedBodies('POST /v1/expectations/{id}/withdraw', () => withdraw(shared.expectationId), 'ops-admin', {
    raw: 'reason=no',
    contentType: 'application/x-www-form-urlencoded',
  }),
  {
    operation: 'POST /v1/expectations/{id}/withdraw',
    status: 503,
    act: () =>
      send(withdraw(shared.expectationId, down), {
        token: token('ops-admin', down),
        json: { reason: 'Temporal is down' },
      }),
  },

  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 202,
    act: () => resend(failedLapses.resent.expectationId, failedLapses.resent.messageId, 'ops-admin'),
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 200,
    async act() {
      // Re-sent (here, or by the 202 above): on its way or delivered, so nothing is sent again.
      const { expectationId, messageId } = failedLapses.resent;
      const first = await resend(expectationId, messageId, 'ops-admin');
      if (first.status !== 202 && first.status !== 200) throw new Error(`arrange: resend answered ${first.status}`);
      return resend(expectationId, messageId, 'ops-admin');
    },
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 400,
    act: () => resend(shared.expectationId, 'not-a-uuid', 'ops-admin'),
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 401,
    act: () => resend(shared.expectationId, randomUUID()),
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 403,
    act: () => resend(shared.expectationId, randomUUID(), 'shipping-agent'),
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 404,
    act: () => resend(`unknown-${unique()}`, randomUUID(), 'ops-admin'),
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 409,
    async act() {
      const { expectationId, messageId } = failedLapses.ended;
      const withdrawn = await send(withdraw(expectationId), {
        token: token('ops-admin'),
        json: { reason: 'the order was cancelled' },
      });
      if (withdrawn.status !== 200) throw new Error(`arrange: withdraw answered ${withdrawn.status}`);
      return resend(expectationId, messageId, 'ops-admin');
    },
  },
  {
    operation: 'POST /v1/expectations/{id}/lapses/{messageId}/resend',
    status: 503,
    act: () => resend(shared.expectationId, randomUUID(), 'ops-admin', down),
  },
];

/** The documented answer of an operation for a status, references followed. */
function documentedResponse(operation: string, status: number): Record<string, any> {
  const [method, path] = operation.split(' ') as [string, string];
  const response = doc.paths[path]?.[method.toLowerCase()]?.responses?.[status];
  if (!response) throw new Error(`${operation} documents no ${status}`);
  return dereference(doc, response);
}

describe('every documented status', () => {
  it('has a request below that gets it, and no request gets a status that is not documented', () => {
    const documentedStatuses = documentedOperations(doc).flatMap(({ method, path, operation }) =>
      Object.keys(operation.responses).map((status) => `${method.toUpperCase()} ${path} ${status}`),
    );

    expect(cases.map((c) => `${c.operation} ${c.status}`).sort()).toEqual(documentedStatuses.sort());
  });

  it.each(cases)(
    '$operation answers $status with the documented media type, headers and body',
    async ({ operation, status, act }) => {
      const response = documentedResponse(operation, status);

      const answer = await act();

      expect({ status: answer.status, body: answer.status === status ? undefined : answer.body }).toEqual({
        status,
        body: undefined,
      });
      const mediaTypes = Object.keys(response.content ?? {});
      expect(mediaTypes.length).toBeLessThanOrEqual(1);
      if (mediaTypes.length === 0) {
        expect(answer.body).toBe('');
      } else {
        expect(answer.contentType.split(';')[0]).toBe(mediaTypes[0]);
        expect(validatorOf(doc, response.content[mediaTypes[0]!].schema).check(answer.body)).toEqual([]);
      }
      for (const header of Object.keys(response.headers ?? {})) expect(answer.headers.get(header), header).toBeTruthy();
    },
  );

  it('/openapi.json serves the document itself, with no token', async () => {
    const answer = await send(`${bridge.url}/openapi.json`);

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(doc);
  });
});

/**
 * For each role, a request the role decides: allowed, it gets past the role check (whatever it answers then);
 * denied, it is a 403 (on the JSON-RPC interface: a rejected receipt Task with a 403 problem).
 */
const roleProbes: Record<string, (principal: string) => Promise<'allowed' | 'denied'>> = {
  ingestA2AEvent: async (p) =>
    verdict(await send(events(), { token: token(p), json: artifactUpdate({ facts: [fact()] }) })),
  reportFacts: async (p) => verdict(await send(facts(), { token: token(p), json: { facts: [fact()] } })),
  listExpectations: async (p) => verdict(await send(list(), { token: token(p) })),
  getExpectation: async (p) => verdict(await send(record(`unknown-${unique()}`), { token: token(p) })),
  getStatistics: async (p) => verdict(await send(statistics(), { token: token(p) })),
  withdrawExpectation: async (p) =>
    verdict(await send(withdraw(`unknown-${unique()}`), { token: token(p), json: { reason: 'probe' } })),
  resendLapse: async (p) => verdict(await resend(`unknown-${unique()}`, randomUUID(), p)),
  watcherAgentJsonRpc: async (p) => {
    const answer = await sendMessage(p, { facts: [fact()] });
    const state = receiptState(answer);
    const parts: { data?: { status?: number } }[] = answer.body?.result?.task?.status?.message?.parts ?? [];
    if (state === 'TASK_STATE_COMPLETED') return 'allowed';
    if (state === 'TASK_STATE_REJECTED' && parts.some((part) => part.data?.status === 403)) return 'denied';
    throw new Error(`probe: unexpected answer ${JSON.stringify(answer.body)}`);
  },
};

function verdict(answer: Answer): 'allowed' | 'denied' {
  if (answer.status === 401) throw new Error(`probe: not authenticated ${JSON.stringify(answer.body)}`);
  return answer.status === 403 ? 'denied' : 'allowed';
}

describe('the roles of each operation', () => {
  const guarded = documentedOperations(doc).filter(({ operation }) => operation['x-roles'] !== undefined);

  it('every operation that names roles has a probe', () => {
    expect(guarded.map(({ operation }) => operation.operationId).sort()).toEqual(Object.keys(roleProbes).sort());
  });

  it.each(guarded.map(({ operation }) => [operation.operationId as string, operation['x-roles'] as Role[]] as const))(
    '%s lets in exactly the roles it names',
    async (operationId, named) => {
      const verdicts = Object.fromEntries(
        await Promise.all(roles.map(async (role) => [role, await roleProbes[operationId]!(principalOf[role])])),
      );

      expect(verdicts).toEqual(
        Object.fromEntries(roles.map((role) => [role, named.includes(role) ? 'allowed' : 'denied'])),
      );
    },
  );
});
