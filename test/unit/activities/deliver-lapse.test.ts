/**
 * Lapse delivery against a real @a2a-js/sdk agent on loopback (no Temporal): what the agent receives, and how
 * each kind of failure is classified for Temporal's retry policy.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createDeliveryActivities, LAPSE_UNAVAILABLE, type DeliveryDeps } from '../../../activities/deliver-lapse.js';
import { LAPSE_REJECTED, type DeliverLapseInput } from '../../../workflows/activity-types.js';
import { createCardResolver } from '../../../activities/agent-card/card.js';
import { EXTENSION_URI, type Lapse } from '../../../core/schemas/extension.js';
import { close, freePort } from '../../support/net.js';
import { startTestAgent, type TestAgent, type TestAgentOptions } from '../../support/agent.js';
import { startCardServer, type CardServer } from '../../support/bridge.js';
import { shipmentDelivery } from '../../support/fixtures.js';
import { loopbackFetch } from '../../support/outbound.js';
import { lapseFor } from '../../support/lapses.js';

const lapse: Lapse = lapseFor(
  shipmentDelivery('e1', 'S-1', '2026-12-01T00:00:00.000Z', { expects: 'Delivered to the consignee' }),
  'overdue',
  '2026-12-01T00:00:00.250Z',
);
const messageId = 'b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8';

const agents: TestAgent[] = [];
async function agentWith(options: TestAgentOptions = {}): Promise<TestAgent> {
  const agent = await startTestAgent(options);
  agents.push(agent);
  return agent;
}
const cardServers: CardServer[] = [];
afterEach(async () => {
  await Promise.all([...agents.splice(0), ...cardServers.splice(0)].map((server) => server.close()));
});

/** Without an agent directory (DeliveryDeps.agents) the activity reads the contact from its input: these tests only. */
function inputFor(cardUrl: string, authorization?: string): DeliverLapseInput {
  return {
    lapse,
    agent: { id: 'shipping-agent', cardUrl, authorization } as DeliverLapseInput['agent'],
    origin: { taskId: 'origin-task-1', contextId: 'ctx-1' },
    messageId,
  };
}

async function failureOf(delivery: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await delivery.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

/** Delivers the lapse to `agent` with activities built from `deps`, and returns the failure it must end in. */
function deliveryFailure(agent: TestAgent, deps: DeliveryDeps = { fetch: loopbackFetch }): Promise<ApplicationFailure> {
  const { deliverLapse } = createDeliveryActivities(deps);
  return failureOf(deliverLapse(inputFor(agent.cardUrl)));
}

/** A fetch that answers the JSON-RPC call itself (a real Response) and passes everything else to the network. */
function answeringRpcWith(body: unknown): typeof fetch {
  return async (resource, init) => {
    if (init?.method === 'POST') {
      return new Response(
        JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(String(init.body)).id, ...(body as object) }),
        {
          status: 200,
          headers: { 'Content-Type': 'application/json' },
        },
      );
    }
    return fetch(resource, init);
  };
}

describe('deliverLapse to a v1.0 agent', () => {
  it('sends SendMessage with the extension headers and the lapse, and returns the task id', async () => {
    const agent = await agentWith();
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const result = await deliverLapse(inputFor(agent.cardUrl));

    expect(agent.received).toHaveLength(1);
    const [{ message, headers, taskId }] = agent.received as [TestAgent['received'][number]];
    expect(agent.attempts.map((a) => a.method)).toEqual(['SendMessage']);
    expect(headers['a2a-version']).toBe('1.0');
    expect(headers['a2a-extensions']).toBe(EXTENSION_URI);
    expect(message.messageId).toBe(messageId);
    expect(message.role).toBe(1); // ROLE_USER
    expect(message.contextId).toBe('ctx-1');
    expect(message.referenceTaskIds).toEqual(['origin-task-1']);
    expect(message.extensions).toEqual([EXTENSION_URI]);
    expect(message.metadata[EXTENSION_URI]).toEqual({ lapse, lapseSkill: 'handle-lapse' });
    expect(message.parts.map((p: any) => p.content.$case)).toEqual(['text', 'data']);
    expect(message.parts[0].content.value).toBe(
      'Expectation e1 (delivery) lapsed; the watcher asks you to act on it with your skill handle-lapse: ' +
        'expects Delivered to the consignee for shipment S-1 by 2026-12-01T00:00:00.000Z: overdue',
    );
    expect(message.parts[1].content.value).toEqual(lapse);
    expect(result).toEqual({ taskId, warnings: [] });
  });

  it('sends the configured Authorization with the card request and the message', async () => {
    const agent = await agentWith({ expectedAuthorization: 'Bearer agent-secret' });
    const cardRequests: Array<string | null> = [];
    const recordingFetch: typeof fetch = async (resource, init) => {
      if (init?.method !== 'POST') cardRequests.push(new Headers(init?.headers).get('authorization'));
      return fetch(resource, init);
    };
    const { deliverLapse } = createDeliveryActivities({ fetch: recordingFetch });

    const result = await deliverLapse(inputFor(agent.cardUrl, 'Bearer agent-secret'));

    expect(cardRequests).toEqual(['Bearer agent-secret']);
    expect(agent.received[0]?.headers.authorization).toBe('Bearer agent-secret');
    expect(result.taskId).toBe(agent.received[0]?.taskId);
  });

  it('reads the card URL and Authorization from the agent directory when it delivers, not from its input', async () => {
    const agent = await agentWith({ expectedAuthorization: 'Bearer rotated' });
    const asked: string[] = [];
    const agents = {
      async contact(agentId: string) {
        asked.push(agentId);
        return { cardUrl: agent.cardUrl, authorization: 'Bearer rotated' };
      },
    };
    const { deliverLapse } = createDeliveryActivities({ agents, fetch: loopbackFetch });

    const result = await deliverLapse({
      ...inputFor('http://127.0.0.1:1/stale-card', 'Bearer stale'),
      agent: { id: 'shipping-agent' },
    });

    expect(asked).toEqual(['shipping-agent']);
    expect(agent.received[0]?.headers.authorization).toBe('Bearer rotated');
    expect(result.taskId).toBe(agent.received[0]?.taskId);
  });

  it('refuses, not retries, a lapse of an agent the principals file no longer has', async () => {
    const { deliverLapse } = createDeliveryActivities({ agents: { contact: async () => undefined } });

    const failure = await failureOf(
      deliverLapse({ ...inputFor('http://127.0.0.1:1/card'), agent: { id: 'gone-agent' } }),
    );

    expect([failure.type, failure.nonRetryable, failure.message]).toEqual([
      LAPSE_REJECTED,
      true,
      'agent gone-agent is not in the principals file: nowhere to deliver the lapse',
    ]);
  });

  it("names the card's lapseSkill, whatever it is, in the text and next to the lapse", async () => {
    const agent = await agentWith({ lapseSkill: 'act-on-overdue' });
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const result = await deliverLapse(inputFor(agent.cardUrl));

    const { message } = agent.received[0]!;
    expect(message.metadata[EXTENSION_URI]).toEqual({ lapse, lapseSkill: 'act-on-overdue' });
    expect(message.parts[0].content.value).toContain(
      'the watcher asks you to act on it with your skill act-on-overdue: ',
    );
    expect(result.warnings).toEqual([]);
  });

  it('still delivers, naming no skill and with a warning, when the card no longer has its lapseSkill', async () => {
    const agent = await agentWith();
    const cardServer = await startCardServer();
    cardServers.push(cardServer);
    const changed = agent.card();
    changed.capabilities.extensions[0].params.lapseSkill = 'retired-skill';
    cardServer.set('changed', changed);
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const result = await deliverLapse(inputFor(cardServer.url('changed')));

    const { message } = agent.received[0]!;
    expect(message.metadata[EXTENSION_URI]).toEqual({ lapse });
    expect(message.parts[0].content.value).toMatch(
      /^Expectation e1 \(delivery\) lapsed; the watcher asks you to act on it: expects /,
    );
    expect(result).toEqual({
      taskId: agent.received[0]!.taskId,
      warnings: [
        "agent shipping-agent's card declares no lapseSkill that names a skill on it: the lapse task names none",
      ],
    });
  });

  it('warns when the agent does not echo the extension', async () => {
    const agent = await agentWith({ echoExtension: false });
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const result = await deliverLapse(inputFor(agent.cardUrl));

    expect(result.taskId).toBe(agent.received[0]?.taskId);
    expect(result.warnings).toEqual([expect.stringContaining(`did not echo ${EXTENSION_URI}`)]);
  });

  it('returns no task id and a warning when the agent answers with a message', async () => {
    const agent = await agentWith();
    const reply = { messageId: 'm-reply', contextId: 'ctx-1', role: 'ROLE_AGENT', parts: [{ text: 'ok' }] };
    const { deliverLapse } = createDeliveryActivities({ fetch: answeringRpcWith({ result: { message: reply } }) });

    const result = await deliverLapse(inputFor(agent.cardUrl));

    expect(result.taskId).toBeUndefined();
    expect(result.warnings).toContainEqual(expect.stringContaining('answered the lapse with a message'));
  });

  it('records a task id of 256 characters, and not a longer one (with a warning)', async () => {
    const agent = await agentWith();
    const task = (id: string) => ({ id, contextId: 'ctx-1', status: { state: 'TASK_STATE_SUBMITTED' } });
    const deliver = (id: string) =>
      createDeliveryActivities({ fetch: answeringRpcWith({ result: { task: task(id) } }) }).deliverLapse(
        inputFor(agent.cardUrl),
      );

    const longest = await deliver('t'.repeat(256));
    const tooLong = await deliver('t'.repeat(257));

    expect(longest.taskId).toBe('t'.repeat(256));
    expect(tooLong.taskId).toBeUndefined();
    expect(tooLong.warnings).toContainEqual(
      'agent shipping-agent answered with a task id of 257 characters, over 256: not recorded',
    );
  });
});

describe('deliverLapse to a v0.3 agent', () => {
  it('sends message/send with the same message and returns the task id', async () => {
    const agent = await agentWith({ version: '0.3' });
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const result = await deliverLapse(inputFor(agent.cardUrl));

    expect(agent.card().protocolVersion).toBe('0.3');
    expect(agent.attempts.map((a) => a.method)).toEqual(['message/send']);
    const [{ message, headers, taskId }] = agent.received as [TestAgent['received'][number]];
    expect(headers['x-a2a-extensions']).toBe(EXTENSION_URI);
    expect(message.messageId).toBe(messageId);
    expect(message.contextId).toBe('ctx-1');
    expect(message.referenceTaskIds).toEqual(['origin-task-1']);
    expect(message.metadata[EXTENSION_URI]).toEqual({ lapse, lapseSkill: 'handle-lapse' });
    expect(message.parts[0].content.value).toContain('with your skill handle-lapse: ');
    expect(result).toEqual({ taskId, warnings: [] });
  });

  it('reaches an agent whose card is v0.3 only (no supportedInterfaces), through the injected fetch', async () => {
    const agent = await agentWith({ version: '0.3' });
    const pureV03Fetch: typeof fetch = async (resource, init) => {
      const response = await fetch(resource, init);
      if (init?.method === 'POST') return response;
      const { supportedInterfaces: _dropped, ...card } = (await response.json()) as Record<string, unknown>;
      return Response.json(card);
    };
    const { deliverLapse } = createDeliveryActivities({ fetch: pureV03Fetch });

    const result = await deliverLapse(inputFor(agent.cardUrl));

    expect(agent.attempts.map((a) => a.method)).toEqual(['message/send']);
    expect(result.taskId).toBe(agent.received[0]?.taskId);
  });
});

describe('deliverLapse failures', () => {
  it('is retryable when the agent answers 500', async () => {
    const agent = await agentWith();
    agent.failNext(500);

    const failure = await deliveryFailure(agent);

    expect(failure.type).toBe(LAPSE_UNAVAILABLE);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toContain('HTTP 500');
  });

  it.each([400, 404])('is rejected, not retried, when the agent answers %i', async (status) => {
    const agent = await agentWith();
    agent.failNext(status);

    const failure = await deliveryFailure(agent);

    expect(failure.type).toBe(LAPSE_REJECTED);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(`HTTP ${status}`);
    expect(failure.message).toContain('shipping-agent');
    expect(agent.attempts).toHaveLength(1);
  });

  it('is rejected when the agent refuses the Authorization (401)', async () => {
    const agent = await agentWith({ expectedAuthorization: 'Bearer agent-secret' });
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const failure = await failureOf(deliverLapse(inputFor(agent.cardUrl, 'Bearer wrong')));

    expect(failure.type).toBe(LAPSE_REJECTED);
    expect(failure.message).toContain('HTTP 401');
  });

  it('is retryable when the agent answers 429', async () => {
    const agent = await agentWith();
    agent.failNext(429);

    const failure = await deliveryFailure(agent);

    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toContain('HTTP 429');
  });

  it('is retryable when the card URL is unreachable', async () => {
    const port = await freePort();
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch });

    const failure = await failureOf(deliverLapse(inputFor(`http://127.0.0.1:${port}/.well-known/agent-card.json`)));

    expect(failure.type).toBe(LAPSE_UNAVAILABLE);
    expect(failure.nonRetryable).toBe(false);
  });

  it('is retryable when the attempt times out', async () => {
    const agent = await agentWith();
    const hangingRpc: typeof fetch = (resource, init) =>
      init?.method === 'POST'
        ? new Promise((_resolve, reject) => init.signal?.addEventListener('abort', () => reject(init.signal?.reason)))
        : fetch(resource, init);

    const failure = await deliveryFailure(agent, { fetch: hangingRpc, attemptTimeoutMs: 200 });

    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toContain('timed out after 200 ms');
  });

  /** The failure when a v1.0 agent's JSON-RPC answer is replaced by `error`. */
  const failureOnRpcError = async (error: { code: number; message: string }) =>
    deliveryFailure(await agentWith(), { fetch: answeringRpcWith({ error }) });

  it('is rejected when the agent answers with an invalid-params JSON-RPC error', async () => {
    const failure = await failureOnRpcError({ code: -32602, message: 'bad params' });

    expect(failure.type).toBe(LAPSE_REJECTED);
    expect(failure.message).toContain('-32602');
  });

  it('is retryable when the agent answers with an internal JSON-RPC error', async () => {
    const failure = await failureOnRpcError({ code: -32603, message: 'internal' });

    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toContain('-32603');
  });

  it('quotes an agent answer of any length in at most 1,000 characters (it is kept on the record)', async () => {
    const failure = await failureOnRpcError({ code: -32603, message: 'x'.repeat(100_000) });

    expect(failure.message).toHaveLength(1_000);
    expect(failure.message).toMatch(/^agent shipping-agent answered the lapse with JSON-RPC error -32603: x+…$/);
  });
});

describe('the agent card during delivery', () => {
  /** Counts the GETs of the card through the injected fetch. */
  function countingCardFetches(cardUrl: string): { fetch: typeof fetch; count: () => number } {
    let count = 0;
    return {
      fetch: async (resource, init) => {
        if (String(resource instanceof Request ? resource.url : resource) === cardUrl) count++;
        return fetch(resource, init);
      },
      count: () => count,
    };
  }

  it('is read afresh for every delivery without a card reader', async () => {
    const agent = await agentWith();
    const counter = countingCardFetches(agent.cardUrl);
    const { deliverLapse } = createDeliveryActivities({ fetch: counter.fetch });

    await deliverLapse(inputFor(agent.cardUrl));
    await deliverLapse(inputFor(agent.cardUrl));

    expect(counter.count()).toBe(2);
  });

  it('is fetched once for lapses delivered together to one agent', async () => {
    const agent = await agentWith();
    const counter = countingCardFetches(agent.cardUrl);
    const cards = createCardResolver({ fetch: counter.fetch, cacheSeconds: 60 });
    const { deliverLapse } = createDeliveryActivities({ fetch: counter.fetch, cards });

    await Promise.all([deliverLapse(inputFor(agent.cardUrl)), deliverLapse(inputFor(agent.cardUrl))]);
    await deliverLapse(inputFor(agent.cardUrl));

    expect(agent.received).toHaveLength(3);
    expect(counter.count()).toBe(1);
  });

  it('is fetched again after a send that failed, and after its cache time', async () => {
    const agent = await agentWith();
    const counter = countingCardFetches(agent.cardUrl);
    let now = Date.parse('2026-12-01T00:00:00Z');
    const cards = createCardResolver({ fetch: counter.fetch, cacheSeconds: 60, now: () => now });
    const { deliverLapse } = createDeliveryActivities({ fetch: counter.fetch, cards });

    await deliverLapse(inputFor(agent.cardUrl));
    agent.failNext(500, 1);
    await failureOf(deliverLapse(inputFor(agent.cardUrl)));
    await deliverLapse(inputFor(agent.cardUrl));
    now += 61_000;
    await deliverLapse(inputFor(agent.cardUrl));

    // first, after the failed send, after the cache time
    expect(counter.count()).toBe(3);
  });

  it('that moved to another endpoint is followed after the cache time, and not before', async () => {
    const [first, second] = [await agentWith(), await agentWith()];
    const cardServer = await startCardServer();
    cardServers.push(cardServer);
    cardServer.set('moving', first.card());
    let now = 0;
    const cards = createCardResolver({ fetch: loopbackFetch, cacheSeconds: 60, now: () => now });
    const { deliverLapse } = createDeliveryActivities({ fetch: loopbackFetch, cards });
    const input = inputFor(cardServer.url('moving'));

    await deliverLapse(input);
    cardServer.set('moving', second.card());
    now = 59_999;
    await deliverLapse(input);
    now = 60_000;
    await deliverLapse(input);

    expect([first.received.length, second.received.length]).toEqual([2, 1]);
  });
});

describe('a card that cannot be read', () => {
  /** A fetch that answers the card request itself and passes the JSON-RPC call to the network. */
  const cardAnswering =
    (response: () => Response): typeof fetch =>
    async (resource, init) =>
      init?.method === 'POST' ? fetch(resource, init) : response();

  it.each([404, 401])('refuses the lapse, not retries it, when the card URL answers %i', async (status) => {
    const agent = await agentWith();

    const failure = await deliveryFailure(agent, { fetch: cardAnswering(() => new Response('no', { status })) });

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_REJECTED, true]);
    expect(failure.message).toBe(`agent shipping-agent: the agent card at ${agent.cardUrl} answered HTTP ${status}`);
    expect(agent.attempts).toHaveLength(0);
  });

  it.each([
    ['HTTP 503', () => new Response('later', { status: 503 })],
    ['a body that is not JSON', () => new Response('<html>', { status: 200 })],
  ])('retries the lapse on %s', async (_what, response) => {
    const agent = await agentWith();

    const failure = await deliveryFailure(agent, { fetch: cardAnswering(response) });

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_UNAVAILABLE, false]);
    expect(agent.attempts).toHaveLength(0);
  });

  it('refuses the lapse when the card URL serves JSON that is not a card', async () => {
    const agent = await agentWith();

    const failure = await deliveryFailure(agent, { fetch: cardAnswering(() => Response.json({ skills: 'none' })) });

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_REJECTED, true]);
    expect(failure.message).toContain('is not an A2A agent card');
  });
});

describe('what the guarded fetch refuses', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => close(server as Parameters<typeof close>[0])));
  });

  /** A plain HTTP server on 127.0.0.1 that answers every request with `handle`; its URL. */
  async function plainServer(handle: http.RequestListener): Promise<string> {
    const server = http.createServer(handle);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  }

  /** The URL of a card that is `agent`'s but names `rpcUrl` as its JSON-RPC interface. */
  async function cardNaming(agent: TestAgent, rpcUrl: string): Promise<string> {
    const cardServer = await startCardServer();
    cardServers.push(cardServer);
    const card = agent.card();
    card.supportedInterfaces = [{ ...card.supportedInterfaces[0], url: rpcUrl }];
    cardServer.set('elsewhere', card);
    return cardServer.url('elsewhere');
  }

  it('sends nothing to an agent on loopback when no allow list names it (the default), and does not retry', async () => {
    const agent = await agentWith();
    const { deliverLapse } = createDeliveryActivities({});

    const failure = await failureOf(deliverLapse(inputFor(agent.cardUrl)));

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_REJECTED, true]);
    expect(failure.message).toBe(
      `agent shipping-agent: the lapse was not delivered: its card was not read: ${new URL(agent.cardUrl).origin} is outside the outbound address policy (WATCHER_OUTBOUND_ALLOW, WATCHER_OUTBOUND_DENY): nothing was sent`,
    );
    expect(failure.cause?.message).toContain('127.0.0.0/8 loopback');
    expect(agent.attempts).toHaveLength(0);
  });

  it('does not follow a JSON-RPC endpoint that redirects, even to the agent itself', async () => {
    const agent = await agentWith();
    const rpcUrl = agent.card().supportedInterfaces[0].url as string;
    const redirector = await plainServer((_req, res) => res.writeHead(307, { location: rpcUrl }).end('see the agent'));

    const failure = await failureOf(
      createDeliveryActivities({ fetch: loopbackFetch }).deliverLapse(
        inputFor(await cardNaming(agent, `${redirector}/a2a`)),
      ),
    );

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_REJECTED, true]);
    expect(failure.message).toBe(
      `agent shipping-agent: the lapse was not delivered: ${redirector}/a2a answered HTTP 307, a redirect: the watcher follows none`,
    );
    expect(agent.attempts).toHaveLength(0);
  });

  it('stops reading an answer over the cap and refuses the lapse without quoting it', async () => {
    const agent = await agentWith();
    const flood = await plainServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(`{"x":"${'y'.repeat(2 * 1024 * 1024)}"}`),
    );

    const failure = await failureOf(
      createDeliveryActivities({ fetch: loopbackFetch }).deliverLapse(
        inputFor(await cardNaming(agent, `${flood}/a2a`)),
      ),
    );

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_REJECTED, true]);
    expect(failure.message).toBe(
      `agent shipping-agent: the lapse was not delivered: the answer of ${flood}/a2a is over the 1048576-byte cap: the watcher stopped reading it`,
    );
  });

  it('retries an answer that is not JSON, without quoting what it was', async () => {
    const agent = await agentWith();
    const html = await plainServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>router admin: password hunter2</html>'),
    );

    const failure = await failureOf(
      createDeliveryActivities({ fetch: loopbackFetch }).deliverLapse(inputFor(await cardNaming(agent, `${html}/a2a`))),
    );

    expect([failure.type, failure.nonRetryable]).toEqual([LAPSE_UNAVAILABLE, false]);
    expect(failure.message).toBe('agent shipping-agent: lapse delivery failed: the answer is not JSON');
  });
});
