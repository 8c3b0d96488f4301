/**
 * The watcher as an A2A agent, driven by @a2a-js/sdk's client exactly as another agent would: the card from the
 * bridge's well-known URL, SendMessage on the JSON-RPC interface it advertises, the bearer token of a principal.
 * Behind it: the real bridge app, a real worker on the shared dev server and a real SDK agent whose card the
 * raising principal points at.
 */
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  withA2AExtensions,
  type Client,
  type ServiceParameters,
} from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_JSONRPC_PATH, RECORD_SKILL } from '../../src/a2a/agent-endpoint.js';
import { EXTENSION_URI } from '../../src/schemas/extension.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import { expectation, startBridgeEnv, unique, type BridgeEnv } from '../support/bridge.js';

let env: BridgeEnv;
let agent: TestAgent;
/** Headers of every response the client saw, last one last. */
const responses: { url: string; status: number; headers: Headers }[] = [];
let client: Client;

beforeAll(async () => {
  agent = await startTestAgent();
  env = await startBridgeEnv(
    [
      { id: 'shipping-agent', roles: ['agent'], cardUrl: agent.cardUrl },
      { id: 'carrier-feed', roles: ['reporter'] },
    ],
    { name: 'watcher-agent' },
  );
  const observingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    responses.push({ url: String(input instanceof Request ? input.url : input), status: response.status, headers: response.headers });
    return response;
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl: observingFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: observingFetch }),
  });
  client = await factory.createFromUrl(env.url);
});

afterAll(async () => {
  await env?.close();
  await agent?.close();
});

const path = (...segments: (string | number)[]) =>
  ['params', 'message', 'metadata', EXTENSION_URI, ...segments].map((s) => String(s).replaceAll('/', '~1')).join('/');

/** A v1.0 message carrying `payload` under metadata[URI]. */
function message(payload: unknown, contextId = `ctx-${unique()}`): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: 'for the watcher' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: { [EXTENSION_URI]: payload },
    extensions: [EXTENSION_URI],
    referenceTaskIds: [],
  };
}

/** Sends as `principal` (its bearer token), with the extension activated unless told otherwise. */
async function send(principal: string | { token: string }, msg: Message, activate = true): Promise<Task> {
  const token = typeof principal === 'string' ? env.tokens[principal]! : principal.token;
  const serviceParameters: ServiceParameters = { Authorization: `Bearer ${token}` };
  if (activate) withA2AExtensions(EXTENSION_URI)(serviceParameters);
  const result = await client.sendMessage({ tenant: '', message: msg, configuration: undefined, metadata: undefined }, { serviceParameters });
  if (!('status' in result)) throw new Error(`expected a Task, got ${JSON.stringify(result)}`);
  return result;
}

const dataOf = (task: Task, where: 'receipt' | 'status'): any => {
  const parts = where === 'receipt' ? task.artifacts.find((a) => a.name === 'receipt')?.parts : task.status?.message?.parts;
  const part = parts?.find((p) => p.content?.$case === 'data');
  return part?.content?.$case === 'data' ? part.content.value : undefined;
};
const textOf = (task: Task): string =>
  (task.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

describe('the watcher agent card', () => {
  it('declares the extension, the recording skill and the JSON-RPC interface on the bridge', async () => {
    const response = await fetch(`${env.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    const card: any = await response.json();

    expect(response.status).toBe(200);
    expect(card.capabilities.extensions).toEqual([expect.objectContaining({ uri: EXTENSION_URI, required: true })]);
    expect(card.skills.map((s: { id: string }) => s.id)).toEqual([RECORD_SKILL]);
    expect(card.description).toContain('Keeps time');
    expect(card.supportedInterfaces).toEqual([
      expect.objectContaining({ url: `${env.url}${AGENT_JSONRPC_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }),
    ]);
  });
});

describe('SendMessage to the watcher', () => {
  it('raises an agent’s expectation and answers with a completed receipt task; the record is readable', async () => {
    const e = expectation(`wa-raise-${unique()}`);
    const sent = message({ expectations: [e] });

    const task = await send('shipping-agent', sent);

    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(task, 'receipt')).toEqual({ expectations: [{ expectationId: e.expectationId, result: 'raised' }], facts: [], withdrawn: [] });
    expect(textOf(task)).toBe(`Recorded: 1 expectation raised (${e.expectationId}).`);
    const record = await getExpectationRecord(env.client, e.expectationId);
    expect(record?.state).toBe('open');
    expect(record?.agent.id).toBe('shipping-agent');
    expect(record?.origin).toEqual({ taskId: task.id, contextId: sent.contextId });
  });

  it('echoes the activated extension in the A2A-Extensions response header', async () => {
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };

    await send('shipping-agent', message({ facts: [fact] }));

    const last = responses.at(-1)!;
    expect(last.url).toBe(`${env.url}${AGENT_JSONRPC_PATH}`);
    expect(last.headers.get('a2a-extensions')).toBe(EXTENSION_URI);
  });

  it('records a reporter’s facts, and a fact satisfies the expectation waiting on its key', async () => {
    const e = expectation(`wa-fact-${unique()}`);
    await send('shipping-agent', message({ expectations: [e] }));
    const fact = { factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };

    const task = await send('carrier-feed', message({ facts: [fact] }));

    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(task, 'receipt').facts).toEqual([{ factKey: fact.factKey, result: 'recorded' }]);
    await expect.poll(async () => (await getExpectationRecord(env.client, e.expectationId))?.state, { timeout: 15_000 }).toBe('satisfied');
    expect((await getExpectationRecord(env.client, e.expectationId))?.satisfiedBy?.source).toBe('carrier-feed');
  });

  it('withdraws an expectation the same agent raised', async () => {
    const e = expectation(`wa-withdraw-${unique()}`);
    await send('shipping-agent', message({ expectations: [e] }));

    const task = await send('shipping-agent', message({ withdraw: [e.expectationId] }));

    expect(dataOf(task, 'receipt').withdrawn).toEqual([{ expectationId: e.expectationId, result: 'withdrawn' }]);
    await expect.poll(async () => (await getExpectationRecord(env.client, e.expectationId))?.state, { timeout: 15_000 }).toBe('withdrawn');
  });

  it('rejects a reporter raising an expectation (403) with the field path, and starts nothing', async () => {
    const e = expectation(`wa-reporter-${unique()}`);

    const task = await send('carrier-feed', message({ expectations: [e] }));

    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(dataOf(task, 'status')).toMatchObject({
      status: 403,
      type: 'urn:expectations-watcher:problem:forbidden',
      errors: [{ path: path('expectations', 0), message: 'a reporter may carry facts only' }],
    });
    expect(await getExpectationRecord(env.client, e.expectationId)).toBeUndefined();
  });

  it('rejects an invalid item (400) naming the exact field', async () => {
    const e = { ...expectation(`wa-schema-${unique()}`), dueAt: 'tomorrow' };

    const task = await send('shipping-agent', message({ expectations: [e] }));

    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    const problem = dataOf(task, 'status');
    expect(problem.status).toBe(400);
    expect(problem.errors.map((error: { path: string }) => error.path)).toEqual([path('expectations', 0, 'dueAt')]);
    expect(textOf(task)).toContain(path('expectations', 0, 'dueAt'));
  });

  it('rejects a kind the agent’s card does not declare (422) with the rule', async () => {
    const e = expectation(`wa-kind-${unique()}`, { kind: 'customs-clearance' });

    const task = await send('shipping-agent', message({ expectations: [e] }));

    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(dataOf(task, 'status')).toMatchObject({ status: 422, errors: [expect.objectContaining({ path: path('expectations', 0, 'kind') })] });
  });

  it('rejects a message with nothing under metadata[URI] (400)', async () => {
    const empty = { ...message({}), metadata: undefined };

    const task = await send('shipping-agent', empty);

    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(dataOf(task, 'status').errors).toEqual([{ path: path(), message: 'required: {facts, expectations, withdraw}' }]);
  });

  it('refuses a message that does not activate the extension (JSON-RPC error)', async () => {
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };

    await expect(send('carrier-feed', message({ facts: [fact] }), false)).rejects.toThrow(/extension/i);
  });

  it('refuses a bad bearer token with 401 before anything is read', async () => {
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };

    await expect(send({ token: 'not-a-token' }, message({ facts: [fact] }))).rejects.toThrow(/401/);
    expect(responses.at(-1)?.status).toBe(401);
  });
});
