/**
 * WatcherClient sends a request again after a 503, a 429 or a dropped connection (src/client/retry.ts), against a
 * local node:http server that answers from a script, on a clock of the test's own: the waits are recorded, not
 * slept. What is retried and what is not, the Retry-After in seconds and as a date, the backoff without one, the total
 * wait that ends it with the last problem and its attempts, `retry: false`, the probes, the AbortSignal, and that
 * every attempt sends the same request.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WatcherClient, WatcherProblemError, type WatcherClientOptions } from 'expectations-watcher/client';
import { afterEach, describe, expect, it } from 'vitest';
import { isDroppedConnection, sleep } from '../../../../src/client/retry.js';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One scripted answer: a status with headers and a JSON body, or `'drop'` to close the connection unanswered. */
type Answer = { status: number; headers?: OutgoingHttpHeaders; body?: unknown } | 'drop';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server on 127.0.0.1 that answers each request with the next answer, and records what it received. */
async function bridgeAnswering(answers: Answer[], onRequest?: () => void) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      onRequest?.();
      const answer = answers.shift() ?? {
        status: 500,
        body: { type: 'about:blank', title: 'no answer left', status: 500 },
      };
      if (answer === 'drop') {
        request.socket.destroy();
        return;
      }
      const problem = answer.status >= 400;
      response.writeHead(answer.status, {
        'content-type': problem ? 'application/problem+json' : 'application/json',
        ...answer.headers,
      });
      response.end(JSON.stringify(answer.body ?? {}));
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

const START = Date.parse('2026-12-01T00:00:00Z');

/** A client of `url` whose clock moves only when it sleeps; `waits` lists each sleep in ms. */
function clientOf(url: string, options: Partial<WatcherClientOptions> = {}) {
  let clock = START;
  const waits: number[] = [];
  const client = new WatcherClient({
    baseUrl: url,
    token: 'tok-1',
    now: () => clock,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
    },
    ...options,
  });
  return { client, waits };
}

const problemBody = (status: number, title: string) => ({
  type: `urn:expectations-watcher:problem:s${status}`,
  title,
  status,
});
const unavailable = (retryAfter?: string): Answer => ({
  status: 503,
  headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter },
  body: problemBody(503, 'Temporal is unreachable'),
});
const quota = (retryAfter: string): Answer => ({
  status: 429,
  headers: { 'retry-after': retryAfter },
  body: problemBody(429, 'A quota is used up'),
});
const ok = (body: unknown): Answer => ({ status: 200, body });

const raised = { expectations: [{ expectationId: 'e1', result: 'raised' }], facts: [], withdrawn: [] };
const event = { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a' } } };
const facts = [{ factKey: 'shipment/S1/delivered', observedAt: '2026-12-01T00:00:00Z' }];

/** The error `call` rejects with; the test fails if it resolves. */
async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => {
      throw new Error('expected the call to reject');
    },
    (error: unknown) => error,
  );
}

async function problemOf(call: Promise<unknown>): Promise<WatcherProblemError> {
  const error = await rejectionOf(call);
  if (error instanceof WatcherProblemError) return error;
  throw error;
}

describe('what is sent again', () => {
  it('sends an event again after each 503 for its Retry-After in seconds, the same bytes each time, and returns the 200', async () => {
    const bridge = await bridgeAnswering([unavailable('5'), unavailable('2'), ok(raised)]);
    const { client, waits } = clientOf(bridge.url);

    const result = await client.sendEvent(event);

    expect(result).toEqual(raised);
    expect(waits).toEqual([5_000, 2_000]);
    expect(bridge.received).toHaveLength(3);
    const [first, ...again] = bridge.received.map(({ method, url, headers, body }) => ({
      method,
      url,
      body,
      authorization: headers.authorization,
      extensions: headers['a2a-extensions'],
      contentType: headers['content-type'],
    }));
    expect(first).toMatchObject({
      method: 'POST',
      url: '/a2a/events',
      body: JSON.stringify(event),
      authorization: 'Bearer tok-1',
    });
    expect(again).toEqual([first, first]);
  });

  it('sends facts again after a 429 for its Retry-After as an HTTP date, counted on the client’s clock', async () => {
    const bridge = await bridgeAnswering([quota(new Date(START + 3_000).toUTCString()), ok({ facts: [] })]);
    const { client, waits } = clientOf(bridge.url);

    await client.reportFacts(facts);

    expect(waits).toEqual([3_000]);
    expect(bridge.received.map((r) => r.body)).toEqual([JSON.stringify({ facts }), JSON.stringify({ facts })]);
  });

  it('backs off 1 s, doubling up to 8 s, after 503s that name no Retry-After', async () => {
    const bridge = await bridgeAnswering([
      ...Array.from({ length: 5 }, () => unavailable()),
      ok({ expectationId: 'e1' }),
    ]);
    const { client, waits } = clientOf(bridge.url);

    await client.getExpectation('e1');

    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
  });

  it('caps that backoff at maxBackoffMs', async () => {
    const bridge = await bridgeAnswering([unavailable(), unavailable(), unavailable(), ok({ expectationId: 'e1' })]);
    const { client, waits } = clientOf(bridge.url, { retry: { maxBackoffMs: 1_500 } });

    await client.getExpectation('e1');

    expect(waits).toEqual([1_000, 1_500, 1_500]);
  });

  it('waits the backoff, not nothing, after a Retry-After of 0', async () => {
    const bridge = await bridgeAnswering([unavailable('0'), ok({ expectationId: 'e1' })]);
    const { client, waits } = clientOf(bridge.url);

    await client.getExpectation('e1');

    expect(waits).toEqual([1_000]);
  });

  it('sends again after a dropped connection, and the same body', async () => {
    const bridge = await bridgeAnswering(['drop', ok({ expectationId: 'e1', result: 'withdrawn' })]);
    const { client, waits } = clientOf(bridge.url);

    expect(await client.withdraw('e1', 'cancelled')).toEqual({ expectationId: 'e1', result: 'withdrawn' });
    expect(waits).toEqual([1_000]);
    expect(bridge.received.map((r) => r.body)).toEqual([
      JSON.stringify({ reason: 'cancelled' }),
      JSON.stringify({ reason: 'cancelled' }),
    ]);
  });

  it('throws the refused connection itself once the total wait is spent', async () => {
    const closed = await bridgeAnswering([]);
    servers.splice(servers.indexOf(closed.server), 1);
    await new Promise((resolve) => closed.server.close(resolve));
    const { client, waits } = clientOf(closed.url, { retry: { totalWaitMs: 2_500 } });

    const error = await rejectionOf(client.getExpectation('e1'));

    expect(isDroppedConnection(error)).toBe(true);
    expect((error as Error & { cause: { code: string } }).cause.code).toBe('ECONNREFUSED');
    expect(waits).toEqual([1_000]);
  });

  it('does not send again after an error of fetch that is no dropped connection (a name that does not resolve)', async () => {
    const notFound = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }),
    });
    let calls = 0;
    const { client, waits } = clientOf('http://nowhere.invalid', {
      fetch: () => {
        calls += 1;
        return Promise.reject(notFound);
      },
    });

    expect(await rejectionOf(client.getExpectation('e1'))).toBe(notFound);
    expect([calls, waits]).toEqual([1, []]);
  });
});

describe('what is not sent again', () => {
  it.each([400, 401, 403, 404, 409, 422, 500, 502])('throws a %i at once', async (status) => {
    const bridge = await bridgeAnswering([
      { status, headers: { 'retry-after': '1' }, body: problemBody(status, 'No') },
      ok(raised),
    ]);
    const { client, waits } = clientOf(bridge.url);

    const error = await problemOf(client.sendEvent(event));

    expect(error).toMatchObject({ status, attempts: 1 });
    expect([bridge.received.length, waits]).toEqual([1, []]);
  });

  it('throws the last 503, with its attempts, when its Retry-After would end past the total wait', async () => {
    const bridge = await bridgeAnswering([unavailable('4'), unavailable('4'), unavailable('4'), ok(raised)]);
    const { client, waits } = clientOf(bridge.url, { retry: { totalWaitMs: 10_000 } });

    const error = await problemOf(client.sendEvent(event));

    expect(error).toMatchObject({ status: 503, retryAfter: 4, attempts: 3 });
    expect(error.message).toBe('POST /a2a/events: 503 Temporal is unreachable (after 3 attempts)');
    expect(waits).toEqual([4_000, 4_000]);
    expect(bridge.received).toHaveLength(3);
  });

  it('throws a 429 at once whose Retry-After is longer than the whole default wait of 60 s', async () => {
    const bridge = await bridgeAnswering([quota('61'), ok({ facts: [] })]);
    const { client, waits } = clientOf(bridge.url);

    const error = await problemOf(client.reportFacts(facts));

    expect(error).toMatchObject({ status: 429, retryAfter: 61, attempts: 1 });
    expect(waits).toEqual([]);
  });

  it('throws the first 503 with retry: false on the client, and on one call of a client that retries', async () => {
    const bridge = await bridgeAnswering([unavailable('1'), unavailable('1'), ok(raised)]);
    const never = clientOf(bridge.url, { retry: false });
    const retrying = clientOf(bridge.url);

    const first = await problemOf(never.client.sendEvent(event));
    const second = await problemOf(retrying.client.sendEvent(event, { retry: false }));

    expect([first.attempts, second.attempts]).toEqual([1, 1]);
    expect([never.waits, retrying.waits, bridge.received.length]).toEqual([[], [], 2]);
  });

  it('retries one call that asks, on a client with retry: false, within that call’s total wait', async () => {
    const bridge = await bridgeAnswering([unavailable('3'), unavailable('3'), ok(raised)]);
    const { client, waits } = clientOf(bridge.url, { retry: false });

    const error = await problemOf(client.sendEvent(event, { retry: { totalWaitMs: 5_000 } }));

    expect(error.attempts).toBe(2);
    expect(waits).toEqual([3_000]);
  });

  it('answers /readyz’s 503 at once, and waits for readiness only when the call asks', async () => {
    const bridge = await bridgeAnswering([
      unavailable('5'),
      unavailable('5'),
      ok({ status: 'ready', temporal: 'reachable' }),
    ]);
    const { client, waits } = clientOf(bridge.url);

    const notReady = await problemOf(client.ready());
    const ready = await client.ready({ retry: { totalWaitMs: 30_000 } });

    expect(notReady.attempts).toBe(1);
    expect(ready).toEqual({ status: 'ready', temporal: 'reachable' });
    expect(waits).toEqual([5_000]);
  });

  it('refuses a total wait that is no number of milliseconds, before any request', () => {
    expect(() => new WatcherClient({ baseUrl: 'http://127.0.0.1:1', token: 't', retry: { totalWaitMs: -1 } })).toThrow(
      'retry.totalWaitMs must be a number of milliseconds, 0 or more, not -1',
    );
  });
});

describe('cancelling', () => {
  it('stops the wait between attempts when the call’s signal aborts, with the signal’s reason', async () => {
    const bridge = await bridgeAnswering([unavailable('30'), ok(raised)]);
    const controller = new AbortController();
    let waiting!: () => void;
    const waitStarted = new Promise<void>((resolve) => (waiting = resolve));
    const signals: (AbortSignal | undefined)[] = [];
    const client = new WatcherClient({
      baseUrl: bridge.url,
      token: 'tok-1',
      sleep: (ms, signal) => {
        signals.push(signal);
        waiting();
        return sleep(ms, signal);
      },
    });

    const call = rejectionOf(client.sendEvent(event, { signal: controller.signal }));
    await waitStarted;
    controller.abort(new Error('the caller gave up'));

    expect(await call).toEqual(new Error('the caller gave up'));
    expect(signals).toEqual([controller.signal]);
    expect(bridge.received).toHaveLength(1);
  });

  it('has a default sleep that rejects at once for a signal already aborted', async () => {
    await expect(sleep(60_000, AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });
});
