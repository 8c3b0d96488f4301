/**
 * WatcherClient's requests and its reading of answers, with an injected fetch that records each request and hands
 * back a real `Response` (the bridge itself is driven in test/e2e/client.test.ts): URLs, headers, bodies, paging,
 * and problems, those that are not problem+json included. The resend's answer type is checked against the bridge's.
 */
import {
  EXTENSION_URI,
  WatcherClient,
  WatcherProblemError,
  type EventResult,
  type ResendResult,
} from 'expectations-watcher/client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ResendAnswer } from '../../../../src/service/lapse-resend.js';

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: unknown;
}

/** A client whose fetch records what it sends and answers with `answer(sent)` in turn. */
function clientAnswering(answers: ((sent: Sent) => Response)[], baseUrl = 'http://watcher.test:3000') {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = {
      url: String(input),
      method: init?.method ?? 'GET',
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      ...(typeof init?.body === 'string' ? { body: JSON.parse(init.body) as unknown } : {}),
    };
    sent.push(request);
    const answer = answers.shift();
    if (!answer) throw new Error(`no answer left for ${request.method} ${request.url}`);
    return answer(request);
  };
  return { client: new WatcherClient({ baseUrl, token: 'tok-1', fetch }), sent };
}

const json =
  (body: unknown, init: ResponseInit = {}) =>
  () =>
    new Response(JSON.stringify(body), {
      status: 200,
      ...init,
      headers: { 'content-type': 'application/json', ...init.headers },
    });

const problem =
  (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), {
      status: body.status as number,
      headers: { 'content-type': 'application/problem+json', ...headers },
    });

/** A problem+json body of one of the watcher's own types, `urn:expectations-watcher:problem:<name>`. */
const watcherProblem = (
  name: string,
  fields: { title: string; status: number; detail: string; errors?: unknown[] },
) => ({
  type: `urn:expectations-watcher:problem:${name}`,
  ...fields,
});

/** The error `call` rejects with; the test fails if it resolves or rejects with something else. */
async function problemOf(call: Promise<unknown>): Promise<WatcherProblemError> {
  const error: unknown = await call.then(
    () => new Error('expected a WatcherProblemError'),
    (e: unknown) => e,
  );
  if (error instanceof WatcherProblemError) return error;
  throw error;
}

describe('requests', () => {
  it('sends an event with the bearer token, the extension header and the JSON body', async () => {
    const result: EventResult = { expectations: [{ expectationId: 'e1', result: 'raised' }], facts: [], withdrawn: [] };
    const { client, sent } = clientAnswering([json(result)]);
    const event = { artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'a' } } };

    expect(await client.sendEvent(event)).toEqual(result);
    expect(sent).toEqual([
      {
        url: 'http://watcher.test:3000/a2a/events',
        method: 'POST',
        headers: {
          accept: 'application/json, application/problem+json',
          authorization: 'Bearer tok-1',
          'a2a-extensions': EXTENSION_URI,
          'content-type': 'application/json',
        },
        body: event,
      },
    ]);
  });

  it('reports facts (with wait too), reads a record by its encoded id, withdraws and re-sends a lapse under a base path', async () => {
    const resent: ResendResult = {
      expectationId: 'EXP/1 a',
      result: 'resent',
      delivery: { status: 'pending', messageId: 'm' },
    };
    const { client, sent } = clientAnswering(
      [
        json({ facts: [] }),
        json({ facts: [] }),
        json({ expectation: {} }),
        json({ expectationId: 'EXP/1 a', result: 'withdrawn' }),
        json(resent, { status: 202 }),
      ],
      'https://example.test/watcher/',
    );

    await client.reportFacts([{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }]);
    await client.reportFacts([{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }], { wait: true });
    await client.getExpectation('EXP/1 a');
    await client.withdraw('EXP/1 a', 'the order was cancelled');
    const answer = await client.resendLapse('EXP/1 a', 'b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8');

    expect(sent.map((s) => [s.method, s.url, s.body])).toEqual([
      [
        'POST',
        'https://example.test/watcher/v1/facts',
        { facts: [{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }] },
      ],
      [
        'POST',
        'https://example.test/watcher/v1/facts?wait=true',
        { facts: [{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }] },
      ],
      ['GET', 'https://example.test/watcher/v1/expectations/EXP%2F1%20a', undefined],
      [
        'POST',
        'https://example.test/watcher/v1/expectations/EXP%2F1%20a/withdraw',
        { reason: 'the order was cancelled' },
      ],
      [
        'POST',
        'https://example.test/watcher/v1/expectations/EXP%2F1%20a/lapses/b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8/resend',
        undefined,
      ],
    ]);
    expect(sent.map((s) => s.headers['a2a-extensions'])).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(answer).toEqual(resent);
  });

  it('lists with every filter given, and none of those left out', async () => {
    const { client, sent } = clientAnswering([json({ items: [] }), json({ items: [] })]);

    await client.listExpectations({
      subjectType: 'cold chain',
      subjectId: 'S&1',
      state: 'lapsed',
      kind: 'delivery',
      pageSize: 2,
      pageToken: 'abc_-',
    });
    await client.listExpectations();

    expect(sent.map((s) => s.url)).toEqual([
      'http://watcher.test:3000/v1/expectations?subjectType=cold+chain&subjectId=S%261&state=lapsed&kind=delivery&pageSize=2&pageToken=abc_-',
      'http://watcher.test:3000/v1/expectations',
    ]);
  });

  it('iterates over every page with the same filter, following nextPageToken to the last page', async () => {
    const item = (expectationId: string) => ({
      expectationId,
      workflowId: `expectation:${expectationId}`,
      links: { self: '' },
    });
    const { client, sent } = clientAnswering([
      json({ items: [item('a'), item('b')], nextPageToken: 'p2' }),
      json({ items: [item('c')], nextPageToken: 'p3' }),
      json({ items: [] }),
    ]);

    const ids: string[] = [];
    for await (const summary of client.allExpectations({ kind: 'delivery', pageSize: 2 }))
      ids.push(summary.expectationId);

    expect(ids).toEqual(['a', 'b', 'c']);
    expect(sent.map((s) => new URL(s.url).search)).toEqual([
      '?kind=delivery&pageSize=2',
      '?kind=delivery&pageSize=2&pageToken=p2',
      '?kind=delivery&pageSize=2&pageToken=p3',
    ]);
  });

  it('sends no token to /healthz and /readyz', async () => {
    const { client, sent } = clientAnswering([
      json({ status: 'ok' }),
      json({ status: 'ready', temporal: 'reachable' }),
    ]);

    expect([await client.health(), await client.ready()]).toEqual([
      { status: 'ok' },
      { status: 'ready', temporal: 'reachable' },
    ]);
    expect(sent.map((s) => [s.url, s.headers.authorization])).toEqual([
      ['http://watcher.test:3000/healthz', undefined],
      ['http://watcher.test:3000/readyz', undefined],
    ]);
  });

  it('refuses a base URL that is no http(s) URL, before any request', () => {
    expect(() => new WatcherClient({ baseUrl: 'localhost:3000', token: 't' })).toThrow(
      "baseUrl must be an http(s) URL such as http://localhost:3000, not 'localhost:3000'",
    );
    expect(() => new WatcherClient({ baseUrl: '/watcher', token: 't' })).toThrow(TypeError);
  });
});

describe('problems', () => {
  it('carries status, type, title, detail and each field error of a problem+json answer', async () => {
    const body = watcherProblem('rule-violation', {
      title: 'A rule of the extension is broken',
      status: 422,
      detail: '2 rules are broken; see errors',
      errors: [
        { path: 'facts/0/observedAt', rule: 'observed-at-future', message: 'too far ahead' },
        { path: 'facts/1/observedAt', rule: 'observed-at-future', message: 'too far ahead too' },
      ],
    });
    const { client } = clientAnswering([problem(body)]);

    const error = await problemOf(client.reportFacts([]));

    expect(error).toMatchObject({
      ...body,
      retryAfter: undefined,
      problem: body,
      request: { method: 'POST', path: '/v1/facts' },
    });
    expect(error.message).toBe(
      'POST /v1/facts: 422 A rule of the extension is broken: 2 rules are broken; see errors (facts/0/observedAt: too far ahead; facts/1/observedAt: too far ahead too)',
    );
    expect(error.name).toBe('WatcherProblemError');
  });

  it('reads Retry-After in seconds, and as an HTTP date from now', async () => {
    const unavailable = watcherProblem('temporal-unavailable', {
      title: 'Temporal is unreachable',
      status: 503,
      detail: 'x',
    });
    const inTenSeconds = new Date(Math.ceil(Date.now() / 1000) * 1000 + 10_000).toUTCString();
    const { client } = clientAnswering([
      problem(unavailable, { 'retry-after': '5' }),
      problem(unavailable, { 'retry-after': inTenSeconds }),
    ]);

    const inSeconds = await problemOf(client.ready());
    const asDate = await problemOf(client.ready());

    expect(inSeconds).toMatchObject({ status: 503, retryAfter: 5, errors: [] });
    expect(asDate.retryAfter).toBeGreaterThanOrEqual(8);
    expect(asDate.retryAfter).toBeLessThanOrEqual(11);
  });

  it('makes an about:blank problem of an answer that is none (a proxy page)', async () => {
    const { client } = clientAnswering([
      () =>
        new Response('<html>Bad gateway</html>', {
          status: 502,
          statusText: 'Bad Gateway',
          headers: { 'content-type': 'text/html' },
        }),
    ]);

    const error = await problemOf(client.getExpectation('e1'));

    expect(error).toMatchObject({
      status: 502,
      type: 'about:blank',
      title: 'Bad Gateway',
      detail: '<html>Bad gateway</html>',
      errors: [],
    });
    expect(error.message).toBe('GET /v1/expectations/e1: 502 Bad Gateway: <html>Bad gateway</html>');
  });

  it('refuses a 200 whose body is not JSON, saying so', async () => {
    const { client } = clientAnswering([() => new Response('ok', { status: 200 })]);

    await expect(client.health()).rejects.toThrow('GET /healthz: 200 with a body that is not JSON: ok');
  });
});

describe('answer types', () => {
  // The other answers are z.infer of the bridge's own answer schemas (src/schemas/http.ts); this one has none.
  it('of a resend is the bridge’s own (checked by tsc: npx tsc --noEmit fails when they drift apart)', () => {
    expectTypeOf<ResendResult>().toEqualTypeOf<ResendAnswer>();
  });
});
