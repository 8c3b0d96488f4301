/**
 * The outbound policy: an agent's card decides where the worker sends, and the delivery's status lands in a record the agent
 * reads. Real dev server, a real worker and bridge run with WATCHER_OUTBOUND_ALLOW=127.0.0.1 (the tests' agents listen
 * there), real @a2a-js/sdk agents; around them the servers an agent could point the watcher at: one that redirects,
 * one that answers 50 MB, one on 127.0.0.2 (loopback too, and not allowed) that counts the connections it gets.
 * Each lapse is due already, so its delivery starts at once; the record is read through the bridge, as the agent
 * reads it.
 */
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { startExpectation } from '../../src/temporal/expectations.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { artifactUpdate, send, startBridgeApp, unique, type BridgeApp } from '../support/bridge.js';
import { deliveryExpectation, expectation, expectationInput } from '../support/fixtures.js';
import { waitUntil } from '../support/faults.js';
import { close, listen, urlOf } from '../support/net.js';
import { outboundRules } from '../support/outbound.js';
import { useWatcherWorker } from '../support/watcher.js';

// Only 127.0.0.1 is allowed: 127.0.0.2 is loopback as well, and denied like any address the setting does not name.
const outbound = outboundRules({ WATCHER_OUTBOUND_ALLOW: '127.0.0.1' });
const { taskQueue, client } = useWatcherWorker(`outbound-${randomUUID()}`, { outbound });

const FIFTY_MB = 50 * 1024 * 1024;
/** Text in every body these servers send that the watcher must never repeat on a record. */
const BODY_MARKER = 'BODY-THE-AGENT-MUST-NOT-SEE';

let agent: TestAgent;
let hostile: Server;
let hostileUrl: string;
/** Per flood path: false once its answer was cut off before the 50 MB were written, true if they all were. */
const floodFinished = new Map<string, boolean>();
let denied: { server: net.Server; url: string; connections: number };
const cards = new Map<string, unknown>();

/** 50 MB of JSON-looking bytes, written as fast as the reader takes them, with no Content-Length to refuse early. */
function flood(path: string): express.RequestHandler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.from(`{"${BODY_MARKER}":"${'x'.repeat(64 * 1024)}"}`);
    let written = 0;
    res.on('close', () => floodFinished.set(path, res.writableFinished));
    const pump = () => {
      while (written < FIFTY_MB) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  };
}

beforeAll(async () => {
  agent = await startTestAgent();
  const app = express();
  app.get('/cards/redirect', (_req, res) => void res.redirect(302, agent.cardUrl));
  app.get('/cards/flood', flood('/cards/flood'));
  app.get('/cards/:name', (req, res) => void res.json(cards.get(req.params.name)));
  app.post(
    '/rpc/redirect',
    (_req, res) => void res.status(307).set('location', agent.card().supportedInterfaces[0].url).send(BODY_MARKER),
  );
  app.post('/rpc/flood', flood('/rpc/flood'));
  hostile = await listen(app);
  hostileUrl = urlOf(hostile);

  const server = net.createServer((socket) => {
    denied.connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  denied = { server, url: `http://127.0.0.2:${(server.address() as net.AddressInfo).port}`, connections: 0 };
});

afterAll(async () => {
  await Promise.all([
    agent?.close(),
    hostile && close(hostile),
    new Promise((resolve) => denied?.server.close(resolve)),
  ]);
});

/** The test agent's card, naming `rpcUrl` as its JSON-RPC endpoint, served as `/cards/<name>`; its URL. */
function cardNaming(rpcUrl: string): string {
  const card = agent.card();
  card.supportedInterfaces = [{ ...card.supportedInterfaces[0], url: rpcUrl }];
  const name = `card-${unique()}`;
  cards.set(name, card);
  return `${hostileUrl}/cards/${name}`;
}

/**
 * An agent whose principal has `cardUrl`, a bridge it reads its records through, and an expectation of it that was
 * due a minute ago; resolves with the lapse's delivery once it has settled, as the agent reads it.
 */
async function deliveryFor(
  cardUrl: string,
): Promise<{ agentId: string; delivery: ExpectationRecord['lapses'][number]['delivery'] }> {
  const agentId = `outbound-agent-${unique()}`;
  const bridge = await startBridgeApp(client, taskQueue, [{ id: agentId, roles: ['agent'], cardUrl }], { outbound });
  try {
    const id = `outbound-${unique()}`;
    const due = new Date(Date.now() - 60_000);
    due.setUTCMilliseconds(0);
    await startExpectation(
      client,
      taskQueue,
      expectationInput(
        deliveryExpectation(id, due.toISOString(), { grace: 'PT0S' }),
        { id: agentId },
        { taskId: `t-${id}`, contextId: `c-${id}` },
        taskQueue,
      ),
    );
    const delivery = await waitUntil(
      'the lapse delivery to settle',
      async () => {
        const answer = await send(`${bridge.url}/v1/expectations/${id}`, { token: bridge.tokens[agentId] });
        const settled = (answer.body as ExpectationRecord).lapses?.[0]?.delivery;
        return settled && settled.status !== 'pending' ? settled : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250 },
    );
    return { agentId, delivery };
  } finally {
    await bridge.close();
  }
}

const sentToAgent = () => agent.attempts.length;

describe('a card that redirects', () => {
  it('gets nothing sent: the delivery fails at once, naming the redirect and nothing of the body', async () => {
    const before = sentToAgent();

    const { agentId, delivery } = await deliveryFor(`${hostileUrl}/cards/redirect`);

    expect(delivery).toMatchObject({
      status: 'failed',
      error: `agent ${agentId}: the lapse was not delivered: its card was not read: ${hostileUrl}/cards/redirect answered HTTP 302, a redirect: the watcher follows none`,
    });
    expect(sentToAgent() - before).toBe(0);
  });

  it('naming a JSON-RPC endpoint that redirects to the agent, gets nothing to the agent either', async () => {
    const before = sentToAgent();

    const { agentId, delivery } = await deliveryFor(cardNaming(`${hostileUrl}/rpc/redirect`));

    expect(delivery).toMatchObject({
      status: 'failed',
      error: `agent ${agentId}: the lapse was not delivered: ${hostileUrl}/rpc/redirect answered HTTP 307, a redirect: the watcher follows none`,
    });
    expect(delivery.error).not.toContain(BODY_MARKER);
    expect(sentToAgent() - before).toBe(0);
  });
});

describe('an answer of 50 MB', () => {
  it('as the card: cut off at the 1 MiB cap, the delivery failing and saying so', async () => {
    const { agentId, delivery } = await deliveryFor(`${hostileUrl}/cards/flood`);

    expect(delivery).toMatchObject({
      status: 'failed',
      error: `agent ${agentId}: the lapse was not delivered: its card was not read: the answer of ${hostileUrl}/cards/flood is over the 1048576-byte cap: the watcher stopped reading it`,
    });
    expect(delivery.error).not.toContain(BODY_MARKER);
    await expect.poll(() => floodFinished.get('/cards/flood')).toBe(false);
  });

  it('as the agent’s answer to SendMessage: cut off at the cap the same way', async () => {
    const { agentId, delivery } = await deliveryFor(cardNaming(`${hostileUrl}/rpc/flood`));

    expect(delivery).toMatchObject({
      status: 'failed',
      error: `agent ${agentId}: the lapse was not delivered: the answer of ${hostileUrl}/rpc/flood is over the 1048576-byte cap: the watcher stopped reading it`,
    });
    await expect.poll(() => floodFinished.get('/rpc/flood')).toBe(false);
  });
});

describe('a card pointing at a denied address', () => {
  it('gets nothing sent and no connection made: the listening socket there never sees one', async () => {
    const before = denied.connections;

    const { agentId, delivery } = await deliveryFor(cardNaming(`${denied.url}/a2a/jsonrpc`));

    expect(delivery).toMatchObject({
      status: 'failed',
      error: `agent ${agentId}: the lapse was not delivered: ${denied.url} is outside the outbound address policy (WATCHER_OUTBOUND_ALLOW, WATCHER_OUTBOUND_DENY): nothing was sent`,
    });
    expect(denied.connections - before).toBe(0);
  });

  it('at the bridge: a card URL on a denied address is a 502 with nothing started, and no connection made', async () => {
    const agentId = `outbound-raiser-${unique()}`;
    const bridge: BridgeApp = await startBridgeApp(
      client,
      taskQueue,
      [{ id: agentId, roles: ['agent'], cardUrl: `${denied.url}/card` }],
      {
        outbound,
      },
    );
    const before = denied.connections;
    try {
      const answer = await send(`${bridge.url}/a2a/events`, {
        token: bridge.tokens[agentId],
        json: artifactUpdate({ expectations: [expectation(`outbound-raise-${unique()}`)] }),
      });

      expect(answer.status).toBe(502);
      expect(answer.body).toMatchObject({
        type: 'urn:expectations-watcher:problem:agent-card-unreachable',
        detail: expect.stringContaining(`${denied.url} is outside the outbound address policy`),
      });
      expect(denied.connections - before).toBe(0);
    } finally {
      await bridge.close();
    }
  });

  it('is the only difference: the same agent on the allowed address gets its lapse task', async () => {
    const before = agent.received.length;

    const { delivery } = await deliveryFor(agent.cardUrl);

    expect(delivery.status).toBe('delivered');
    expect(agent.received.length - before).toBe(1);
  });
});
