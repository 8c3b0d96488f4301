/**
 * The headers that keep the bridge's answers where they belong, on the app as the bridge builds it (a Temporal client
 * that is never reached: every answer here is given before a call): no API answer is stored by a browser or a shared
 * cache, and the operator page runs no inline style or script and is framed by nobody.
 */
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PrincipalSpec } from '../../../support/agents.js';
import { listenBridge, send } from '../../../support/bridge.js';

let bridge: { url: string; close: () => Promise<void> };
let connection: Connection;
const tokens = { ops: 'ops-token', 'agent-a': 'agent-a-token' };

beforeAll(async () => {
  // Lazy, to a port nobody listens on: a test that reached Temporal would fail, not pass by luck.
  connection = Connection.lazy({ address: '127.0.0.1:1' });
  const principals: PrincipalSpec[] = [
    { id: 'ops', roles: ['reader'] },
    { id: 'agent-a', roles: ['agent'] },
  ];
  bridge = await listenBridge(connection, 'headers', principals, tokens, { temporalWaitMs: 1_000 });
});

afterAll(async () => {
  await bridge?.close();
  await connection?.close();
});

describe('answers of the API', () => {
  const reader = { token: tokens.ops };
  const getTask = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'never-made' } };
  it.each([
    ['GET /v1/expectations without a token', 401, () => send(`${bridge.url}/v1/expectations`)],
    ['GET /v1/expectations with a bad filter', 400, () => send(`${bridge.url}/v1/expectations?state=late`, reader)],
    ['GET /v1/statistics with a bad window', 400, () => send(`${bridge.url}/v1/statistics?window=P1Y`, reader)],
    ['GET an unknown route under /v1', 404, () => send(`${bridge.url}/v1/nothing-here`, reader)],
    [
      'POST /a2a/events that is not JSON',
      415,
      () => send(`${bridge.url}/a2a/events`, { token: tokens['agent-a'], raw: 'x', contentType: 'text/plain' }),
    ],
    [
      'a JSON-RPC GetTask of a receipt never made',
      200,
      () =>
        fetch(`${bridge.url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${tokens['agent-a']}`,
            'content-type': 'application/json',
            'a2a-version': '1.0',
          },
          body: JSON.stringify(getTask),
        }),
    ],
  ])('%s: %i, Cache-Control: no-store', async (_name, status, request) => {
    const answer = await request();

    expect(answer.status).toBe(status);
    expect(answer.headers.get('cache-control')).toBe('no-store');
  });

  it('leaves the agent card cacheable, as clients and caches read it', async () => {
    const card = await send(`${bridge.url}/.well-known/agent-card.json`);

    expect(card.status).toBe(200);
    expect(card.headers.get('cache-control')).toMatch(/^public, max-age=\d+$/);
  });
});

describe('the operator page', () => {
  it('allows no inline style or script, and no frame, by CSP and by X-Frame-Options', async () => {
    const page = await send(`${bridge.url}/ui/`);
    const policy = (page.headers.get('content-security-policy') ?? '').split(/;\s*/);

    expect(page.status).toBe(200);
    expect(policy).toContain("style-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy.join(';')).not.toContain("'unsafe-inline'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
  });
});
