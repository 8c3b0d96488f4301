/**
 * `/a2a/jsonrpc` as JSON-RPC 2.0 and A2A require of it, over HTTP to a real bridge (a worker on the shared dev
 * server behind it): parse errors, invalid requests, notifications, the Message's required fields, ListTasks and
 * GetTask params, and error texts that name task states.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_JSONRPC_PATH } from '../../src/a2a/agent-endpoint.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { startBridgeEnv, unique, type BridgeEnv } from '../support/bridge.js';

let env: BridgeEnv;

beforeAll(async () => {
  env = await startBridgeEnv([{ id: 'carrier-feed', roles: ['reporter'] }], { name: 'jsonrpc-conformance' });
});

afterAll(async () => {
  await env?.close();
});

const V1 = { 'A2A-Version': '1.0', 'A2A-Extensions': EXTENSION_URI };
const V03 = { 'X-A2A-Extensions': EXTENSION_URI };

/** POSTs `raw` (a string, sent as is) to the endpoint with the reporter's token. */
async function post(raw: string, headers: Record<string, string> = V1) {
  const response = await fetch(`${env.url}${AGENT_JSONRPC_PATH}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${env.tokens['carrier-feed']}`, ...headers },
    body: raw,
  });
  const text = await response.text();
  return { status: response.status, text, body: text === '' ? undefined : (JSON.parse(text) as any) };
}

const rpc = (method: string, params: unknown, id: unknown = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params });

/** A v1.0 message reporting one fact (a reporter may), with `overrides` over its fields. */
function v1Message(overrides: Record<string, unknown> = {}, contextId = `ctx-${unique()}`) {
  const fact = {
    factKey: `shipment/S-${unique()}/delivered`,
    observedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  return {
    messageId: crypto.randomUUID(),
    contextId,
    role: 'ROLE_USER',
    parts: [{ text: 'for the watcher' }],
    metadata: { [EXTENSION_URI]: { facts: [fact] } },
    extensions: [EXTENSION_URI],
    ...overrides,
  };
}

function v03Message(overrides: Record<string, unknown> = {}) {
  const { messageId, contextId, metadata, extensions } = v1Message();
  return {
    kind: 'message',
    messageId,
    contextId,
    role: 'user',
    parts: [{ kind: 'text', text: 'for the watcher' }],
    metadata,
    extensions,
    ...overrides,
  };
}

/** Sends a good v1.0 message and answers its receipt task (completed). */
async function receipt(contextId = `ctx-${unique()}`) {
  const answer = await post(rpc('SendMessage', { message: v1Message({}, contextId) }));
  expect(answer.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
  return answer.body.result.task;
}

describe('a body that is no JSON-RPC request', () => {
  it('answers malformed JSON with -32700 Parse error and id null, HTTP 200', async () => {
    const answer = await post('{"jsonrpc": "2.0", "id": 1, "method": ');

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: expect.stringMatching(/^Parse error/) },
    });
  });

  it('answers an empty body with -32700', async () => {
    const answer = await post('');

    expect(answer.body).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('answers a lone surrogate with -32600 naming where it is, never an internal error', async () => {
    const answer = await post(rpc('SendMessage', { message: v1Message({ messageId: 'm\ud800' }) }, 4));

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: {
        code: -32600,
        message: 'Invalid Request: params.message.messageId must be well-formed Unicode (it holds a lone surrogate)',
      },
    });
  });

  it('answers a body nested 5,000 deep with -32600', async () => {
    const raw = rpc('SendMessage', { message: '__NEST__' }).replace(
      '"__NEST__"',
      '['.repeat(5_000) + ']'.repeat(5_000),
    );

    const answer = await post(raw);

    expect(answer.status).toBe(200);
    expect(answer.body.error).toEqual({
      code: -32600,
      message: expect.stringContaining('nests deeper than 64 levels'),
    });
  });

  it.each([
    ['a batch (array)', '[]', /batches \(arrays\) are not supported/],
    ['a number', '1', /not a number/],
    ['a string', '"x"', /not a string/],
    ['an empty object', '{}', /jsonrpc must be exactly "2.0"/],
  ])('answers %s with -32600 Invalid Request and id null', async (_name, raw, message) => {
    const answer = await post(raw);

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringMatching(message) },
    });
  });
});

describe('an invalid Request object', () => {
  it.each([
    ['"jsonrpc": "aaa"', { jsonrpc: 'aaa', id: 1, method: 'GetTask', params: { id: 'x' } }, 'jsonrpc', 1],
    ['no method', { jsonrpc: '2.0', id: 1, params: {} }, 'method', 1],
    ['an object id', { jsonrpc: '2.0', id: { a: 1 }, method: 'GetTask', params: { id: 'x' } }, 'id', null],
    ['an array id', { jsonrpc: '2.0', id: [1], method: 'GetTask', params: { id: 'x' } }, 'id', null],
    ['a boolean id', { jsonrpc: '2.0', id: true, method: 'GetTask', params: { id: 'x' } }, 'id', null],
    ['string params', { jsonrpc: '2.0', id: 1, method: 'GetTask', params: 'x' }, 'params', 1],
  ])('answers %s with -32600 naming the member', async (_name, request, member, id) => {
    const answer = await post(JSON.stringify(request));

    expect(answer.body).toEqual({
      jsonrpc: '2.0',
      id,
      error: { code: -32600, message: expect.stringMatching(new RegExp(`^Invalid Request: ${member} must`)) },
    });
  });
});

describe('a notification (no id)', () => {
  it('is not answered (204, no body) and not executed: no receipt exists for it', async () => {
    const contextId = `ctx-${unique()}`;

    const answer = await post(
      JSON.stringify({ jsonrpc: '2.0', method: 'SendMessage', params: { message: v1Message({}, contextId) } }),
    );

    expect(answer.status).toBe(204);
    expect(answer.text).toBe('');
    const listed = await post(rpc('ListTasks', { contextId }));
    expect(listed.body.result.tasks).toEqual([]);
  });

  it('is answered when its id is null (a request, not a notification)', async () => {
    const answer = await post(rpc('GetTask', { id: 'no-such-task' }, null));

    expect(answer.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
  });
});

describe('a Message without the fields A2A requires', () => {
  it.each([
    ['no role', { role: undefined }, 'params.message.role'],
    ['ROLE_UNSPECIFIED', { role: 'ROLE_UNSPECIFIED' }, 'params.message.role'],
    ['an unknown role', { role: 'ROLE_BOSS' }, 'params.message.role'],
    ['no parts', { parts: undefined }, 'params.message.parts'],
    ['empty parts', { parts: [] }, 'params.message.parts'],
  ])('v1.0 SendMessage with %s is -32602 naming the field', async (_name, overrides, field) => {
    const answer = await post(rpc('SendMessage', { message: v1Message(overrides) }));

    expect(answer.body.error).toEqual({
      code: -32602,
      message: expect.stringMatching(new RegExp(`^Invalid params: ${field.replaceAll('.', '\\.')} is required`)),
      data: [expect.objectContaining({ reason: 'INVALID_PARAMS', metadata: { field } })],
    });
  });

  it.each([
    ['no role', { role: undefined }, 'params.message.role'],
    ['a v1.0 role', { role: 'ROLE_USER' }, 'params.message.role'],
    ['no parts', { parts: undefined }, 'params.message.parts'],
    ['empty parts', { parts: [] }, 'params.message.parts'],
  ])('v0.3 message/send with %s is -32602 naming the field', async (_name, overrides, field) => {
    const answer = await post(rpc('message/send', { message: v03Message(overrides) }), V03);

    expect(answer.body).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: expect.stringContaining(`${field} is required`) },
    });
  });

  it('still records a message that has both (v1.0 and v0.3)', async () => {
    const v1 = await post(rpc('SendMessage', { message: v1Message() }));
    const v03 = await post(rpc('message/send', { message: v03Message() }), V03);

    expect(v1.body.result.task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(v03.body.result.status.state).toBe('completed');
  });
});

describe('ListTasks and GetTask params', () => {
  it.each([
    ['a negative historyLength', { historyLength: -1 }, 'params.historyLength'],
    ['statusTimestampAfter "-1"', { statusTimestampAfter: '-1' }, 'params.statusTimestampAfter'],
    ['a date without a zone', { statusTimestampAfter: '2026-12-01T09:30:00' }, 'params.statusTimestampAfter'],
    ['pageSize 0', { pageSize: 0 }, 'params.pageSize'],
    ['a negative pageSize', { pageSize: -5 }, 'params.pageSize'],
    ['pageSize over 100', { pageSize: 101 }, 'params.pageSize'],
    ['an unknown status', { status: 'TASK_STATE_BOGUS' }, 'params.status'],
  ])('ListTasks with %s is -32602 naming the param', async (_name, params, field) => {
    const answer = await post(rpc('ListTasks', params));

    expect(answer.body.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining(`Invalid params: ${field} must`),
      data: [{ metadata: { field } }],
    });
  });

  it('ListTasks with a forged page token is -32602, not the first page', async () => {
    const contextId = `ctx-${unique()}`;
    await receipt(contextId);

    const answers = await Promise.all(
      ['0', '1', 'abc', '1.AAAAAAAAAAAAAAAAAAAAAA'].map((pageToken) =>
        post(rpc('ListTasks', { contextId, pageToken })),
      ),
    );

    for (const answer of answers) {
      expect(answer.body.error).toMatchObject({
        code: -32602,
        message: expect.stringContaining('params.pageToken is unknown'),
        data: [{ metadata: { field: 'params.pageToken' } }],
      });
    }
  });

  it('ListTasks pages with the tokens it hands out, newest first', async () => {
    const contextId = `ctx-${unique()}`;
    const [a, b, c] = [await receipt(contextId), await receipt(contextId), await receipt(contextId)];

    const first = await post(rpc('ListTasks', { contextId, pageSize: 2 }));
    const second = await post(rpc('ListTasks', { contextId, pageSize: 2, pageToken: first.body.result.nextPageToken }));

    expect(first.body.result.tasks.map((t: { id: string }) => t.id)).toEqual([c.id, b.id]);
    expect(second.body.result.tasks.map((t: { id: string }) => t.id)).toEqual([a.id]);
    expect(second.body.result.nextPageToken ?? '').toBe('');
  });

  it('GetTask (v1.0) and tasks/get (v0.3) with a negative historyLength are -32602', async () => {
    const task = await receipt();

    const v1 = await post(rpc('GetTask', { id: task.id, historyLength: -1 }));
    const v03 = await post(rpc('tasks/get', { id: task.id, historyLength: -1 }), V03);

    expect(v1.body.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('params.historyLength must be an integer of 0 or more'),
    });
    expect(v03.body.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('params.historyLength must be an integer of 0 or more'),
    });
  });

  it('GetTask with historyLength 0 still answers the task', async () => {
    const task = await receipt();

    const answer = await post(rpc('GetTask', { id: task.id, historyLength: 0 }));

    expect(answer.body.result).toMatchObject({ id: task.id, status: { state: 'TASK_STATE_COMPLETED' } });
  });
});

describe('error texts', () => {
  it('name a task state, not its enum number, when a message continues a finished receipt', async () => {
    const task = await receipt();

    const answer = await post(
      rpc('SendMessage', { message: v1Message({ taskId: task.id, contextId: task.contextId }) }),
    );

    expect(answer.body.error.code).toBe(-32004);
    expect(answer.body.error.message).toBe(
      `Task ${task.id} is in a terminal state (TASK_STATE_COMPLETED) and cannot be modified.`,
    );
  });

  it('name the task states a ListTasks status filter may hold', async () => {
    const answer = await post(rpc('ListTasks', { status: 'TASK_STATE_BOGUS' }));

    expect(answer.body.error.message).toContain('TASK_STATE_COMPLETED');
    expect(answer.body.error.message).not.toMatch(/-1|\(\d+\)/);
  });
});
