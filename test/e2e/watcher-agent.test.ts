/**
 * The watcher as an A2A agent, driven by @a2a-js/sdk's client exactly as another agent would: the card from the
 * bridge's well-known URL, SendMessage on the JSON-RPC interface it advertises, the bearer token of a principal.
 * The card is checked as A2A v1.0 ProtoJSON field by field; v0.3 clients (by hand, and the SDK's compat transport)
 * send `message/send` to the same endpoint. Behind it: the real bridge app, a real worker on the shared dev server
 * and a real SDK agent whose card the raising principal points at.
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
import pkg from '../../package.json' with { type: 'json' };
import { AGENT_JSONRPC_PATH, RECORD_SKILL, watcherAgentCard } from '../../src/a2a/agent-endpoint.js';
import { createCardResolver } from '../../activities/agent-card/card.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { lapsesFor, startTestAgent, type TestAgent } from '../support/agent.js';
import { dueExpectation, expectation } from '../support/fixtures.js';
import { startBridgeEnv, unique, type BridgeEnv } from '../support/bridge.js';
import { loopbackFetch } from '../support/outbound.js';

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
    responses.push({
      url: String(input instanceof Request ? input.url : input),
      status: response.status,
      headers: response.headers,
    });
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

/**
 * A v1.0 message carrying `payload` under metadata[URI], from an agent working on its own task `ownTask` in
 * `contextId`: the task it names in referenceTaskIds, which its lapses will reference.
 */
function message(
  payload: unknown,
  contextId = `ctx-${unique()}`,
  ownTask: string | null = `agent-task-${unique()}`,
): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text', value: 'for the watcher' },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      },
    ],
    metadata: { [EXTENSION_URI]: payload },
    extensions: [EXTENSION_URI],
    referenceTaskIds: ownTask ? [ownTask] : [],
  };
}

/** Sends as `principal` (its bearer token), with the extension activated unless told otherwise. */
async function send(principal: string | { token: string }, msg: Message, activate = true): Promise<Task> {
  const token = typeof principal === 'string' ? env.tokens[principal]! : principal.token;
  const serviceParameters: ServiceParameters = { Authorization: `Bearer ${token}` };
  if (activate) withA2AExtensions(EXTENSION_URI)(serviceParameters);
  const result = await client.sendMessage(
    { tenant: '', message: msg, configuration: undefined, metadata: undefined },
    { serviceParameters },
  );
  if (!('status' in result)) throw new Error(`expected a Task, got ${JSON.stringify(result)}`);
  return result;
}

const dataOf = (task: Task, where: 'receipt' | 'status'): any => {
  const parts =
    where === 'receipt' ? task.artifacts.find((a) => a.name === 'receipt')?.parts : task.status?.message?.parts;
  const part = parts?.find((p) => p.content?.$case === 'data');
  return part?.content?.$case === 'data' ? part.content.value : undefined;
};
const textOf = (task: Task): string =>
  (task.status?.message?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

/** The card as A2A v1.0 ProtoJSON spells it: camelCase proto field names, oneofs by member name, defaults omitted. */
const expectedCard = (base: string) => ({
  name: 'Expectations watcher',
  description:
    'Keeps time for agents that keep no clock. Report facts, raise expectations ("I expect fact F about subject S by ' +
    `time T") and withdraw them under metadata["${EXTENSION_URI}"] of a message; when an expectation is overdue, ` +
    'skipped or stalled the watcher sends its agent a lapse task.',
  supportedInterfaces: [
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
  ],
  provider: { url: base, organization: 'expectations-watcher' },
  version: pkg.version,
  capabilities: {
    streaming: false,
    pushNotifications: false,
    extensions: [
      {
        uri: EXTENSION_URI,
        description:
          'Expectations: this agent is a watcher. Activate the extension (A2A-Extensions header) and put ' +
          '{facts, expectations, withdraw} under metadata[URI] of the message.',
        required: true,
        params: { keepsTime: true, lapseSkill: RECORD_SKILL, kinds: [], role: 'watcher' },
      },
    ],
    extendedAgentCard: false,
  },
  securitySchemes: {
    bearer: {
      httpAuthSecurityScheme: { description: 'The bearer token of a principal (agent or reporter).', scheme: 'Bearer' },
    },
  },
  securityRequirements: [{ schemes: { bearer: {} } }],
  defaultInputModes: ['application/json', 'text/plain'],
  defaultOutputModes: ['application/json', 'text/plain'],
  skills: [
    {
      id: RECORD_SKILL,
      name: 'Report facts, raise and withdraw expectations',
      description:
        'Records the facts, expectations and withdraw list found under metadata[URI] of the message (any principal ' +
        'may report facts; only an agent may raise or withdraw) and answers with a completed task whose "receipt" ' +
        'artifact holds one result per item.',
      tags: ['expectations', 'facts', 'watcher', 'deadlines'],
      examples: [
        'metadata[URI] = {"facts":[{"factKey":"shipment/S-1/delivered","observedAt":"2026-12-01T09:30:00Z"}]}',
        'metadata[URI] = {"expectations":[{"expectationId":"EXP-42","kind":"delivery",...}]}',
      ],
      inputModes: ['application/json'],
      outputModes: ['application/json', 'text/plain'],
    },
  ],
});

describe('the watcher agent card', () => {
  const cardUrl = () => `${env.url}/.well-known/agent-card.json`;

  it('is A2A v1.0 ProtoJSON, field by field, served without a token', async () => {
    const response = await fetch(cardUrl(), { headers: { 'A2A-Version': '1.0' } });
    const text = await response.text();

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    // Built from the request's origin: a shared cache keeps one per origin, never a card made for a forged Host.
    expect(response.headers.get('vary')).toBe('Host, X-Forwarded-Host, X-Forwarded-Proto');
    expect(JSON.parse(text)).toStrictEqual(expectedCard(env.url));
    expect(text).not.toContain('$case');
  });

  it('is the same v1.0 card for a request without A2A-Version (a v0.3 client), not a v0.3 card', async () => {
    const response = await fetch(cardUrl());

    expect(await response.json()).toStrictEqual(expectedCard(env.url));
  });

  it('reads back in the SDK’s card resolver as the card the watcher holds, bearer scheme included', async () => {
    const resolved = await new DefaultAgentCardResolver().resolve(env.url);

    expect(resolved).toEqual(watcherAgentCard(env.url));
    expect(resolved.securitySchemes.bearer?.scheme).toEqual({
      $case: 'httpAuthSecurityScheme',
      value: expect.objectContaining({ scheme: 'Bearer', bearerFormat: '' }),
    });
  });

  it('reads in the watcher’s own card reader with its security scheme and requirement', async () => {
    const { info } = await createCardResolver({ cacheSeconds: 0, fetch: loopbackFetch }).read({ cardUrl: cardUrl() });

    expect(info).toEqual({
      version: '1.0',
      skillIds: [RECORD_SKILL],
      declaration: { index: 0, params: { keepsTime: true, lapseSkill: RECORD_SKILL, kinds: [], role: 'watcher' } },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'Bearer', description: 'The bearer token of a principal (agent or reporter).' },
      },
      securityRequirements: [{ bearer: [] }],
    });
  });
});

describe('SendMessage to the watcher', () => {
  it('raises an agent’s expectation and answers with a completed receipt task; the record is readable', async () => {
    const e = expectation(`wa-raise-${unique()}`);
    const sent = message({ expectations: [e] });

    const task = await send('shipping-agent', sent);

    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(dataOf(task, 'receipt')).toEqual({
      expectations: [{ expectationId: e.expectationId, result: 'raised' }],
      facts: [],
      withdrawn: [],
    });
    expect(textOf(task)).toBe(`Recorded: 1 expectation raised (${e.expectationId}).`);
    const record = await getExpectationRecord(env.client, e.expectationId);
    expect(record?.state).toBe('open');
    expect(record?.agent.id).toBe('shipping-agent');
    // The origin is the agent's own task, never the watcher's receipt task.
    expect(record?.origin).toEqual({ taskId: sent.referenceTaskIds[0], contextId: sent.contextId });
    expect(task.id).not.toBe(sent.referenceTaskIds[0]);
  });

  it('sends the lapse to the agent referencing the agent’s own task and context, not the receipt', async () => {
    const e = dueExpectation(`wa-lapse-${unique()}`, new Date(Date.now() - 60_000));
    const sent = message({ expectations: [e] });

    const task = await send('shipping-agent', sent);

    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await expect.poll(() => lapsesFor(agent, e.expectationId).length, { timeout: 20_000 }).toBe(1);
    const lapse = lapsesFor(agent, e.expectationId)[0]!.message!;
    expect(lapse.referenceTaskIds).toEqual(sent.referenceTaskIds);
    expect(lapse.contextId).toBe(sent.contextId);
  });

  it('takes the origin named outright under metadata[URI].origin before referenceTaskIds', async () => {
    const e = expectation(`wa-explicit-${unique()}`);
    const origin = { taskId: `agent-task-${unique()}`, contextId: `agent-ctx-${unique()}` };

    await send('shipping-agent', message({ expectations: [e], origin }));

    expect((await getExpectationRecord(env.client, e.expectationId))?.origin).toEqual(origin);
  });

  it('records no contextId of the SDK’s making when the agent sent none', async () => {
    const e = expectation(`wa-no-context-${unique()}`);
    const sent = { ...message({ expectations: [e] }), contextId: '' };

    await send('shipping-agent', sent);

    expect((await getExpectationRecord(env.client, e.expectationId))?.origin).toEqual({
      taskId: sent.referenceTaskIds[0],
    });
  });

  it('refuses a raise that names no task of the agent’s own (422 origin-task) and starts nothing', async () => {
    const e = expectation(`wa-no-origin-${unique()}`);

    const task = await send('shipping-agent', message({ expectations: [e] }, `ctx-${unique()}`, null));

    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(dataOf(task, 'status')).toMatchObject({
      status: 422,
      errors: [
        {
          path: 'params/message/referenceTaskIds',
          rule: 'origin-task',
          message: expect.stringContaining('referenceTaskIds'),
        },
      ],
    });
    expect(await getExpectationRecord(env.client, e.expectationId)).toBeUndefined();
  });

  it('answers members of metadata[URI] it does not read as ignored warnings, beside what it recorded', async () => {
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };

    const task = await send('carrier-feed', message({ facts: [fact], expectation: { expectationId: 'typo' } }));

    expect(dataOf(task, 'receipt')).toMatchObject({
      facts: [{ factKey: fact.factKey, result: 'accepted' }],
      warnings: [{ path: path('expectation'), rule: 'unknown-member', message: expect.stringContaining('ignored') }],
    });
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
    expect(dataOf(task, 'receipt').facts).toEqual([{ factKey: fact.factKey, result: 'accepted' }]);
    await expect
      .poll(async () => (await getExpectationRecord(env.client, e.expectationId))?.state, { timeout: 15_000 })
      .toBe('satisfied');
    expect((await getExpectationRecord(env.client, e.expectationId))?.satisfiedBy?.source).toBe('carrier-feed');
  });

  it('withdraws an expectation the same agent raised', async () => {
    const e = expectation(`wa-withdraw-${unique()}`);
    await send('shipping-agent', message({ expectations: [e] }));

    const task = await send('shipping-agent', message({ withdraw: [e.expectationId] }));

    expect(dataOf(task, 'receipt').withdrawn).toEqual([{ expectationId: e.expectationId, result: 'withdrawn' }]);
    await expect
      .poll(async () => (await getExpectationRecord(env.client, e.expectationId))?.state, { timeout: 15_000 })
      .toBe('withdrawn');
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
    expect(dataOf(task, 'status')).toMatchObject({
      status: 422,
      errors: [expect.objectContaining({ path: path('expectations', 0, 'kind') })],
    });
  });

  it('rejects a message with nothing under metadata[URI] (400)', async () => {
    const empty = { ...message({}), metadata: undefined };

    const task = await send('shipping-agent', empty);

    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(dataOf(task, 'status').errors).toEqual([
      { path: path(), message: 'required: {facts, expectations, withdraw}' },
    ]);
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

describe('message/send to the watcher from a v0.3 client (the SDK’s compatibility layer)', () => {
  const endpoint = () => `${env.url}${AGENT_JSONRPC_PATH}`;

  const activated = { 'X-A2A-Extensions': EXTENSION_URI };

  /** A v0.3 JSON-RPC `message/send`, as a v0.3 agent writes it by hand: `kind`s, no A2A-Version, X-A2A-Extensions. */
  async function sendV03(token: string, payload: unknown, headers: Record<string, string> = activated) {
    const contextId = `ctx-${unique()}`;
    const ownTask = `agent-task-${unique()}`;
    const response = await fetch(endpoint(), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: {
          message: {
            kind: 'message',
            messageId: crypto.randomUUID(),
            role: 'user',
            contextId,
            referenceTaskIds: [ownTask],
            parts: [{ kind: 'text', text: 'for the watcher' }],
            metadata: { [EXTENSION_URI]: payload },
            extensions: [EXTENSION_URI],
          },
        },
      }),
    });
    return { response, contextId, ownTask, body: (await response.json()) as any };
  }

  const dataPartOf = (parts: any[]) => parts.find((p) => p.kind === 'data').data;
  const receiptOf = (task: any) => dataPartOf(task.artifacts.find((a: any) => a.name === 'receipt').parts);

  it('records a fact carried under metadata[URI] with a bearer token and answers a v0.3 receipt task', async () => {
    const e = expectation(`wa-v03-fact-${unique()}`);
    await send('shipping-agent', message({ expectations: [e] }));
    const fact = { factKey: e.satisfiedBy.factKey, observedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') };

    const { response, body } = await sendV03(env.tokens['carrier-feed']!, { facts: [fact] });

    expect(response.status).toBe(200);
    expect(response.headers.get('x-a2a-extensions')).toBe(EXTENSION_URI);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { kind: 'task', status: { state: 'completed' } } });
    expect(receiptOf(body.result)).toEqual({
      expectations: [],
      facts: [{ factKey: fact.factKey, result: 'accepted' }],
      withdrawn: [],
    });
    const state = async () => (await getExpectationRecord(env.client, e.expectationId))?.state;
    await expect.poll(state, { timeout: 15_000 }).toBe('satisfied');
    expect((await getExpectationRecord(env.client, e.expectationId))?.satisfiedBy?.source).toBe('carrier-feed');
  });

  it('raises an agent’s expectation with the task its v0.3 message references as its origin', async () => {
    const e = expectation(`wa-v03-raise-${unique()}`);

    const { body, contextId, ownTask } = await sendV03(env.tokens['shipping-agent']!, { expectations: [e] });

    expect(receiptOf(body.result).expectations).toEqual([{ expectationId: e.expectationId, result: 'raised' }]);
    const record = await getExpectationRecord(env.client, e.expectationId);
    expect(record?.agent.id).toBe('shipping-agent');
    expect(record?.origin).toEqual({ taskId: ownTask, contextId });
    expect(body.result.id).not.toBe(ownTask);
  });

  it('answers a v0.3 rejected task with the problem for an item that breaks a rule', async () => {
    const e = expectation(`wa-v03-reporter-${unique()}`);

    const { body } = await sendV03(env.tokens['carrier-feed']!, { expectations: [e] });

    expect(body.result.status.state).toBe('rejected');
    expect(dataPartOf(body.result.status.message.parts)).toMatchObject({
      status: 403,
      errors: [{ path: path('expectations', 0), message: 'a reporter may carry facts only' }],
    });
    expect(await getExpectationRecord(env.client, e.expectationId)).toBeUndefined();
  });

  it('refuses a v0.3 message that does not activate the extension (JSON-RPC error)', async () => {
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };

    const { response, body } = await sendV03(env.tokens['carrier-feed']!, { facts: [fact] }, {});

    expect(response.status).toBe(200);
    expect(body.error.message).toMatch(/extension/i);
    expect(body.result).toBeUndefined();
  });

  it('refuses a v0.3 request with a bad bearer token with 401 before anything is read', async () => {
    const { response, body } = await sendV03('not-a-token', { facts: [] });

    expect(response.status).toBe(401);
    expect(body.type).toBe('urn:expectations-watcher:problem:unauthenticated');
  });

  it('serves the SDK’s v0.3 compat transport, chosen from the card’s 0.3 interface (A2A-Version: 0.3)', async () => {
    const card = await new DefaultAgentCardResolver().resolve(env.url);
    const v03Only = {
      ...card,
      supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === '0.3'),
    };
    const seen: Headers[] = [];
    const recording: typeof fetch = async (input, init) => {
      seen.push(new Headers(init?.headers));
      return fetch(input, init);
    };
    const legacyClient = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl: recording, legacyCompat: { enabled: true } })],
    }).createFromAgentCard(v03Only);
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };
    const serviceParameters: ServiceParameters = { Authorization: `Bearer ${env.tokens['carrier-feed']}` };
    withA2AExtensions(EXTENSION_URI)(serviceParameters);

    const result = await legacyClient.sendMessage(
      { tenant: '', message: message({ facts: [fact] }), configuration: undefined, metadata: undefined },
      { serviceParameters },
    );

    expect([seen[0]?.get('a2a-version'), seen[0]?.get('x-a2a-extensions')]).toEqual(['0.3', EXTENSION_URI]);
    expect('status' in result && result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect('status' in result && dataOf(result, 'receipt').facts).toEqual([
      { factKey: fact.factKey, result: 'accepted' },
    ]);
  });

  it('keeps the v1.0 path: the SDK’s client picks the 1.0 interface and sends A2A-Version 1.0', async () => {
    const fact = { factKey: `shipment/S-${unique()}/picked-up`, observedAt: '2026-01-05T10:00:00Z' };
    const before = responses.length;

    const task = await send('carrier-feed', message({ facts: [fact] }));

    expect(client.protocolVersion).toBe('1.0');
    expect(dataOf(task, 'receipt').facts).toEqual([{ factKey: fact.factKey, result: 'accepted' }]);
    expect(responses.slice(before).map((r) => r.headers.get('a2a-extensions'))).toEqual([EXTENSION_URI]);
  });
});
