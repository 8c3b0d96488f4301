/**
 * Push notifications from a real @a2a-js/sdk agent: its push-notification config points at the bridge's
 * `/a2a/events`, its executor raises expectations in an artifact, and the SDK's own push sender delivers every
 * event. Two configs on the same task make the SDK deliver each event twice: the second delivery changes nothing.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { Role, TaskState, type AgentCard, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPrincipalStore, tokenSha256 } from '../../src/auth/principals.js';
import { createApp } from '../../src/http/app.js';
import { createMetrics } from '../../src/metrics.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { expectation } from '../support/fixtures.js';
import { request, unique } from '../support/bridge.js';
import { close, listen, urlOf } from '../support/net.js';
import { loopbackAgents } from '../support/outbound.js';
import { useWatcherWorker } from '../support/watcher.js';

interface Delivery {
  kind: string;
  authorization?: string;
  contentType?: string;
  status: number;
  /** The A2A-Extensions header of the push request, and of the bridge's answer. */
  activation?: string;
  echoed?: string;
  answer: unknown;
}

const suffix = unique();
const expectations = [
  expectation(`push-pickup-${suffix}`, {
    kind: 'pickup',
    basis: 'observed',
    subject: { type: 'shipment', id: `S-${suffix}` },
  }),
  expectation(`push-delivery-${suffix}`, { subject: { type: 'shipment', id: `S-${suffix}` } }),
];
expectations[1]!.after = [expectations[0]!.expectationId];

const taskQueue = `bridge-push-${randomUUID()}`;
const watcher = useWatcherWorker(taskQueue);
let bridge: Server;
let bridgeUrl: string;
let agentServer: Server;
let agentUrl: string;
const agentToken = `push-agent-${randomUUID()}`;
const deliveries: Delivery[] = [];
const metrics = createMetrics();
let releaseArtifact: () => void;
const artifactGate = new Promise<void>((resolve) => (releaseArtifact = resolve));

/** The agent: answers with a task at once, then (once released) an artifact raising two expectations, then completes. */
const executor: AgentExecutor = {
  async execute(context, bus) {
    const { taskId, contextId } = context;
    const task: Task = {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [context.userMessage],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    await artifactGate;
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'shipment-plan',
          name: 'Shipment plan',
          description: 'What should happen next, and by when',
          parts: [
            {
              content: { $case: 'text', value: 'Pickup, then delivery.' },
              metadata: undefined,
              filename: '',
              mediaType: 'text/plain',
            },
          ],
          metadata: { [EXTENSION_URI]: { expectations } },
          extensions: [EXTENSION_URI],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  },
  async cancelTask() {},
};

function agentCard(url: string): AgentCard {
  return {
    name: 'Shipping agent (push)',
    description: 'Raises expectations in artifacts and pushes every task event.',
    supportedInterfaces: [
      { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: false,
      pushNotifications: true,
      extendedAgentCard: false,
      extensions: [
        {
          uri: EXTENSION_URI,
          description: 'The watcher keeps time for this agent.',
          required: false,
          params: {
            keepsTime: false,
            lapseSkill: 'handle-lapse',
            kinds: [
              {
                kind: 'pickup',
                subjectType: 'shipment',
                basis: 'observed',
                describes: 'The carrier picks the shipment up',
              },
              { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' },
            ],
          },
        },
      ],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'handle-lapse',
        name: 'Handle lapse',
        description: 'Acts on a lapsed expectation.',
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

beforeAll(async () => {
  const agentApp = express();
  agentServer = await listen(agentApp);
  agentUrl = urlOf(agentServer);
  const handler = new DefaultRequestHandler(agentCard(agentUrl), new InMemoryTaskStore(), executor);
  agentApp.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  agentApp.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

  const app = createApp({
    client: watcher.client,
    taskQueue,
    namespace: 'default',
    principals: createPrincipalStore({
      principals: [
        {
          id: 'push-agent',
          tokenSha256: tokenSha256(agentToken),
          roles: ['agent'],
          agent: { cardUrl: `${agentUrl}/.well-known/agent-card.json` },
        },
      ],
    }),
    settings: { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 60, settle: 'PT1S' },
    metrics,
    outbound: loopbackAgents,
  });
  // Records what the SDK delivered and what the bridge answered (test instrumentation around the real app).
  const outer = express();
  outer.use((req, res, next) => {
    const send = res.send.bind(res);
    res.send = (body) => {
      const parsed = req.body as Record<string, unknown> | undefined;
      deliveries.push({
        kind: parsed ? Object.keys(parsed).join(',') : '(none)',
        authorization: req.get('authorization'),
        contentType: req.get('content-type'),
        status: res.statusCode,
        activation: req.get('A2A-Extensions'),
        echoed: res.get('A2A-Extensions'),
        answer: typeof body === 'string' ? JSON.parse(body) : body,
      });
      return send(body);
    };
    next();
  });
  outer.use(app);
  bridge = await listen(outer);
  bridgeUrl = urlOf(bridge);
});

afterAll(async () => {
  if (bridge) await close(bridge);
  if (agentServer) await close(agentServer);
});

describe('push notifications from a real @a2a-js/sdk agent', () => {
  it('records the expectations the artifact raises, and the second delivery of the same event changes nothing', async () => {
    const client = await new ClientFactory().createFromUrl(agentUrl);
    const pushConfig = (id: string) => ({
      tenant: '',
      id,
      taskId: '',
      url: `${bridgeUrl}/a2a/events`,
      token: '',
      authentication: { scheme: 'Bearer', credentials: agentToken },
    });
    const message: Message = {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [
        { content: { $case: 'text', value: `Ship S-${suffix}` }, metadata: undefined, filename: '', mediaType: '' },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };

    const first = (await client.sendMessage({
      tenant: '',
      message,
      configuration: {
        acceptedOutputModes: [],
        taskPushNotificationConfig: pushConfig('first'),
        returnImmediately: true,
      },
      metadata: undefined,
    })) as Task;
    await client.createTaskPushNotificationConfig({ ...pushConfig('second'), taskId: first.id });
    releaseArtifact();

    await vi.waitFor(() => expect(deliveries.filter((d) => d.kind === 'artifactUpdate')).toHaveLength(2), {
      timeout: 20_000,
      interval: 100,
    });
    await vi.waitFor(() => expect(deliveries.filter((d) => d.kind === 'statusUpdate')).toHaveLength(2), {
      timeout: 20_000,
      interval: 100,
    });
    const artifactDeliveries = deliveries.filter((d) => d.kind === 'artifactUpdate');
    const results = artifactDeliveries.map(
      (d) => (d.answer as { expectations: { expectationId: string; result: string }[] }).expectations,
    );
    expect(artifactDeliveries.map((d) => [d.status, d.authorization, d.contentType])).toEqual([
      [200, `Bearer ${agentToken}`, 'application/a2a+json'],
      [200, `Bearer ${agentToken}`, 'application/a2a+json'],
    ]);
    // The SDK dispatches to both configs at once: per expectation, one delivery raised it and the other found it.
    for (const [i, e] of expectations.entries()) {
      expect(results.map((r) => r[i]!.result).sort()).toEqual(['raised', 'unchanged']);
      expect(results.map((r) => r[i]!.expectationId)).toEqual([e.expectationId, e.expectationId]);
    }
    for (const e of expectations) {
      const read = await request(`${bridgeUrl}/v1/expectations/${e.expectationId}`, { token: agentToken });
      expect(read.body).toMatchObject({
        expectation: e,
        state: 'open',
        agent: { id: 'push-agent' },
        origin: { taskId: first.id, contextId: first.contextId },
      });
    }
    const raisedCount = (await metrics.expectationsRaised.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(raisedCount).toBe(2);
  });

  it("reads the artifact's extensions as activation (a push carries no A2A-Extensions header) and echoes it", () => {
    // The deliveries of the test above: the artifact lists the URI in `extensions`; the status updates list nothing.
    const echoes = (kind: string) => deliveries.filter((d) => d.kind === kind).map((d) => d.echoed);

    expect(deliveries.filter((d) => d.activation !== undefined)).toEqual([]);
    expect(echoes('artifactUpdate')).toEqual([EXTENSION_URI, EXTENSION_URI]);
    expect(echoes('statusUpdate')).toEqual([undefined, undefined]);
  });
});
