/**
 * A real A2A agent for tests, built with @a2a-js/sdk's server (DefaultRequestHandler, InMemoryTaskStore, the
 * Express card and JSON-RPC handlers) on 127.0.0.1 and a random port. It declares the expectations extension,
 * records every message its executor receives and answers each with a completed Task.
 * Only the fault injection (`failNext`), the attempt log and the bearer check sit in middleware in front of it.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { Role, TaskState, type AgentCard, type Message } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { EXTENSION_URI, type ExpectationKind } from '../../core/schemas/extension.js';

export interface ReceivedMessage {
  /** The A2A Message as the agent executor got it (SDK v1.0 shape: `parts[].content.$case`). */
  message: any;
  /** Request headers, lower-cased names. */
  headers: Record<string, string>;
  receivedAt: Date;
  /** The id of the Task the agent answered with. */
  taskId: string;
}

/** Every request that reached the JSON-RPC endpoint, including the ones a fault or the bearer check answered. */
export interface ReceivedAttempt {
  method?: string;
  messageId?: string;
  headers: Record<string, string>;
  /** The HTTP status the agent answered. */
  status: number;
  receivedAt: Date;
}

export interface TestAgentOptions {
  /** Card and endpoint flavour (default 1.0). */
  version?: '1.0' | '0.3';
  /** Declared in `capabilities.extensions[].params.kinds` (default: one kind `delivery` on `shipment`). */
  kinds?: ExpectationKind[];
  /** Default `handle-lapse`; the card carries a skill with this id. */
  lapseSkill?: string;
  /** Default true. */
  declareExtension?: boolean;
  /** If set, JSON-RPC requests without exactly this Authorization header get 401 (the card stays public). */
  expectedAuthorization?: string;
  /** Default true: echo `A2A-Extensions` when a request activates the extension. */
  echoExtension?: boolean;
}

export interface TestAgent {
  url: string;
  cardUrl: string;
  received: ReceivedMessage[];
  attempts: ReceivedAttempt[];
  /** Answer HTTP `status` for the next `times` requests to the JSON-RPC endpoint (default: until recover()). */
  failNext(status: number, times?: number): void;
  recover(): void;
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** The card it serves, as JSON. */
  card(): any;
  close(): Promise<void>;
}

export const defaultKinds: ExpectationKind[] = [
  { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' },
];

const JSON_RPC_PATH = '/a2a/jsonrpc';
const CARD_PATH = '/.well-known/agent-card.json';

function flatHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function buildCard(url: string, options: Required<Omit<TestAgentOptions, 'expectedAuthorization'>>): AgentCard {
  return {
    name: 'Test shipping agent',
    description: 'Keeps no clock; raises expectations and handles lapse tasks.',
    supportedInterfaces: [
      { url: `${url}${JSON_RPC_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: options.version },
    ],
    provider: { organization: 'expectations-watcher tests', url },
    version: '1.0.0',
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: options.declareExtension
        ? [
            {
              uri: EXTENSION_URI,
              description: 'Expectations: the watcher keeps time for this agent.',
              required: false,
              params: { keepsTime: false, lapseSkill: options.lapseSkill, kinds: options.kinds },
            },
          ]
        : [],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: options.lapseSkill,
        name: 'Handle lapse',
        description: 'Acts on an expectation that lapsed.',
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

/** Starts the agent; `close()` stops it. */
export async function startTestAgent(options: TestAgentOptions = {}): Promise<TestAgent> {
  const settings = {
    version: options.version ?? '1.0',
    kinds: options.kinds ?? defaultKinds,
    lapseSkill: options.lapseSkill ?? 'handle-lapse',
    declareExtension: options.declareExtension ?? true,
    echoExtension: options.echoExtension ?? true,
  } as const;
  const received: ReceivedMessage[] = [];
  const attempts: ReceivedAttempt[] = [];
  const waiters = new Set<() => void>();
  let fault: { status: number; remaining: number } | undefined;

  const executor: AgentExecutor = {
    async execute(requestContext: RequestContext, eventBus: ExecutionEventBus) {
      const context = requestContext.context;
      if (settings.echoExtension && context.requestedExtensions?.includes(EXTENSION_URI)) {
        context.addActivatedExtension(EXTENSION_URI);
      }
      const message: Message = requestContext.userMessage;
      const headers = (context.state.get('headers') ?? {}) as Record<string, string | string[] | undefined>;
      received.push({ message, headers: flatHeaders(headers), receivedAt: new Date(), taskId: requestContext.taskId });
      eventBus.publish(
        AgentEvent.task({
          id: requestContext.taskId,
          contextId: requestContext.contextId,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            timestamp: new Date().toISOString(),
            message: {
              messageId: crypto.randomUUID(),
              contextId: requestContext.contextId,
              taskId: requestContext.taskId,
              role: Role.ROLE_AGENT,
              parts: [
                { content: { $case: 'text', value: 'Noted.' }, metadata: undefined, filename: '', mediaType: '' },
              ],
              metadata: undefined,
              extensions: [],
              referenceTaskIds: [],
            },
          },
          artifacts: [],
          history: [message],
          metadata: undefined,
        }),
      );
      eventBus.finished();
      for (const wake of waiters) wake();
    },
    async cancelTask() {},
  };

  const app = express();
  const server: Server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    listening.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const card = buildCard(url, settings);
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const legacy = settings.version === '0.3';

  if (legacy) {
    // A v0.3 server does not know A2A-Version; dropping it makes the compat router serve the v0.3 card to everyone.
    app.use(CARD_PATH, (req: Request, _res: Response, next: NextFunction) => {
      delete req.headers['a2a-version'];
      next();
    });
    app.use(CARD_PATH, legacyAgentCardRouter({ agentCardProvider: requestHandler, cache: { maxAge: 0 } }));
  } else {
    app.use(CARD_PATH, agentCardHandler({ agentCardProvider: requestHandler, cache: { maxAge: 0 } }));
  }

  app.use(JSON_RPC_PATH, express.json(), (req: Request, res: Response, next: NextFunction) => {
    const body = req.body as { method?: unknown; params?: { message?: { messageId?: unknown } } } | undefined;
    const attempt: ReceivedAttempt = {
      method: typeof body?.method === 'string' ? body.method : undefined,
      messageId: typeof body?.params?.message?.messageId === 'string' ? body.params.message.messageId : undefined,
      headers: flatHeaders(req.headers),
      status: 0,
      receivedAt: new Date(),
    };
    attempts.push(attempt);
    res.on('finish', () => {
      attempt.status = res.statusCode;
    });
    if (fault) {
      const status = fault.status;
      if (--fault.remaining <= 0) fault = undefined;
      res.status(status).json({ error: `injected fault: HTTP ${status}` });
      return;
    }
    if (options.expectedAuthorization !== undefined && req.header('authorization') !== options.expectedAuthorization) {
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'missing or wrong Authorization' });
      return;
    }
    next();
  });
  app.use(
    JSON_RPC_PATH,
    jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: legacy } }),
  );

  const cardUrl = `${url}${CARD_PATH}`;
  const served = await fetch(cardUrl, { headers: legacy ? {} : { 'A2A-Version': '1.0' } });
  if (!served.ok) throw new Error(`test agent: its own card is not served (${served.status})`);
  const servedCard: unknown = await served.json();

  return {
    url,
    cardUrl,
    received,
    attempts,
    failNext(status, times) {
      fault = { status, remaining: times ?? Number.POSITIVE_INFINITY };
    },
    recover() {
      fault = undefined;
    },
    waitForMessages(count, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (received.length < count) return false;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(received.slice());
          return true;
        };
        const wake = () => void check();
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`test agent: ${received.length} of ${count} messages after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(wake);
        check();
      });
    },
    card: () => structuredClone(servedCard),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The lapse object of a message the agent received (undefined for anything else). */
export const lapseOf = (
  received: ReceivedMessage,
): { expectationId: string; lapse: string; dueAt: string } | undefined =>
  received.message?.metadata?.[EXTENSION_URI]?.lapse;

/** Every lapse message the agent received for one expectation. */
export const lapsesFor = (agent: TestAgent, expectationId: string): ReceivedMessage[] =>
  agent.received.filter((received) => lapseOf(received)?.expectationId === expectationId);
