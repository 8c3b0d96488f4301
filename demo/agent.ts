/**
 * The demo's shipping agent: a real A2A agent (@a2a-js/sdk server) that keeps no clock. Its card declares the
 * expectations extension with three kinds (pickup, transit, delivery) and a skill for lapse tasks.
 * - Asked to ship (a data part `{shipmentId}`), it answers with a task whose "plan" artifact carries three
 *   expectations under metadata[URI], and delivers that artifact to the watcher (`POST /a2a/events`, its bearer
 *   token), as an agent does when the watcher is its push-notification receiver, with `expectations-watcher/client`.
 * - A lapse task from the watcher is handed to `onLapse` and answered "I will chase the carrier".
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Role, TaskState, type AgentCard, type Artifact, type Message, type Part } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import {
  artifactUpdateEvent,
  EXTENSION_URI,
  WatcherClient,
  withExtension,
  type EventResult,
  type Expectation,
  type ExpectationKind,
  type Lapse,
} from 'expectations-watcher/client';

export const LAPSE_SKILL = 'handle-lapse';

export const demoKinds: ExpectationKind[] = [
  {
    kind: 'pickup',
    subjectType: 'shipment',
    basis: 'observed',
    describes: 'The carrier collects the shipment from the shipper',
  },
  { kind: 'transit', subjectType: 'shipment', basis: 'contract', describes: 'The shipment leaves the origin hub' },
  { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The consignee receives the shipment' },
];

export interface DemoAgent {
  url: string;
  cardUrl: string;
  close(): Promise<void>;
}

function card(url: string): AgentCard {
  return {
    name: 'Demo shipping agent',
    description: 'Promises deliveries to its users and keeps no clock: the watcher tells it when a step is late.',
    supportedInterfaces: [
      { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ],
    provider: { organization: 'expectations-watcher demo', url },
    version: '1.0.0',
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [
        {
          uri: EXTENSION_URI,
          description: 'Raises expectations about its shipments; handles lapse tasks.',
          required: false,
          params: { keepsTime: false, lapseSkill: LAPSE_SKILL, kinds: demoKinds },
        },
      ],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: LAPSE_SKILL,
        name: 'Handle a lapse',
        description: 'Chases the carrier when a step of a shipment plan is late.',
        tags: ['expectations', 'lapse'],
        examples: [],
        inputModes: ['text/plain', 'application/json'],
        outputModes: ['text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

export interface DemoAgentOptions {
  /** The watcher's bridge and this agent's bearer token there. */
  watcher: { url: string; token: string };
  /** The plan the agent promises for a shipment, as expectations. */
  planFor(shipmentId: string): Expectation[];
  /** What the bridge answered when the plan was delivered. */
  onPlanDelivered(result: EventResult, taskId: string, contextId: string): void;
  onLapse(lapse: Lapse, message: Message, taskId: string): void;
}

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

/** What a message asks for: a lapse from the watcher, or a shipment to plan (a data part `{shipmentId}`). */
function readRequest(message: Message): { lapse: Lapse } | { shipmentId: string } | undefined {
  const lapse = (message.metadata?.[EXTENSION_URI] as { lapse?: Lapse } | undefined)?.lapse;
  if (lapse) return { lapse };
  for (const part of message.parts) {
    if (part.content?.$case === 'data' && typeof part.content.value?.shipmentId === 'string')
      return { shipmentId: part.content.value.shipmentId };
  }
  return undefined;
}

/** Starts the agent on 127.0.0.1 and a free port. */
export async function startDemoAgent(options: DemoAgentOptions): Promise<DemoAgent> {
  const app = express();
  const server: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    listening.once('error', reject);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const watcher = new WatcherClient({ baseUrl: options.watcher.url, token: options.watcher.token });

  /**
   * Delivers the plan artifact to the watcher, as the push notification of an artifact update (ProtoJSON parts); a
   * refusal throws a WatcherProblemError naming the fields at fault.
   */
  const deliverPlan = (taskId: string, contextId: string, artifact: Artifact): Promise<EventResult> =>
    watcher.sendEvent(
      artifactUpdateEvent({
        taskId,
        contextId,
        artifact: {
          artifactId: artifact.artifactId,
          name: artifact.name,
          parts: [{ text: 'plan' }],
          metadata: artifact.metadata,
          extensions: artifact.extensions,
        },
      }),
    );

  const executor: AgentExecutor = {
    async execute(requestContext, eventBus) {
      const { context, userMessage, taskId, contextId } = requestContext;
      if (context.requestedExtensions?.includes(EXTENSION_URI)) context.addActivatedExtension(EXTENSION_URI);
      const request = readRequest(userMessage);
      const artifacts: Artifact[] = [];
      let reply: string;
      if (request && 'lapse' in request) {
        options.onLapse(request.lapse, userMessage, taskId);
        reply = 'I will chase the carrier.';
      } else if (request) {
        const plan = options.planFor(request.shipmentId);
        const artifact: Artifact = withExtension(
          {
            artifactId: `plan-${taskId}`,
            name: 'plan',
            description: `The steps of shipment ${request.shipmentId}`,
            parts: [text(plan.map((e) => `${e.kind}: ${e.expects} by ${e.dueAt}`).join('\n'))],
            metadata: undefined,
            extensions: [],
          },
          { expectations: plan },
        );
        artifacts.push(artifact);
        options.onPlanDelivered(await deliverPlan(taskId, contextId, artifact), taskId, contextId);
        reply = `Shipment ${request.shipmentId} is planned; the watcher keeps time for its ${plan.length} steps.`;
      } else {
        reply = 'Send {"shipmentId": "..."} in a data part to plan a shipment.';
      }
      eventBus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            timestamp: new Date().toISOString(),
            message: {
              messageId: crypto.randomUUID(),
              contextId,
              taskId,
              role: Role.ROLE_AGENT,
              parts: [text(reply)],
              metadata: undefined,
              extensions: [],
              referenceTaskIds: [],
            },
          },
          artifacts,
          history: [userMessage],
          metadata: undefined,
        }),
      );
      eventBus.finished();
    },
    async cancelTask() {},
  };
  const requestHandler = new DefaultRequestHandler(card(url), new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

  return {
    url,
    cardUrl: `${url}/.well-known/agent-card.json`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
