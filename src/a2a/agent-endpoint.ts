/**
 * The watcher as an A2A agent: its card and a JSON-RPC endpoint (A2A v1.0 and v0.3) whose `SendMessage` is applied by
 * the same ingest service as `POST /a2a/events` and answered with a receipt Task (docs/api.md, "The watcher as an A2A
 * agent"). Unlike `/a2a/events` (DESIGN 3.1), a Message here may raise expectations: it is addressed to the watcher.
 */
import { AgentCard, Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  type User,
} from '@a2a-js/sdk/server';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import express, { type Request, type Router } from 'express';
import type { Logger } from 'pino';
import pkg from '../../package.json' with { type: 'json' };
import type { Principal, PrincipalStore } from '../auth/principals.js';
import { authenticate, principalOf } from '../web/auth.js';
import { toProblem, type Problem } from '../web/problem.js';
import { z } from 'zod';
import { EXTENSION_MEMBERS, EXTENSION_URI, extensionMetadataSchema } from '../../core/schemas/extension.js';
import type { Origin } from '../../core/schemas/record.js';
import { joinPath, RuleViolationError, SchemaError, type FieldError } from '../service/errors.js';
import { unknownMembers, type Located, type OriginPaths } from '../service/extract.js';
import type { IngestResult, IngestService } from '../service/ingest.js';
import { jsonRpcEnvelope } from './jsonrpc-envelope.js';
import { RecentTaskStore, type Budget } from './recent-task-store.js';
import { WatcherRequestHandler } from './request-handler.js';

export const AGENT_CARD_PATH = '/.well-known/agent-card.json';
export const AGENT_JSONRPC_PATH = '/a2a/jsonrpc';
/** The id of the watcher's one skill. */
export const RECORD_SKILL = 'record-expectations-and-facts';

export interface WatcherAgentDeps {
  ingest: IngestService;
  principals: PrincipalStore;
  logger?: Logger;
  /** How many receipts are kept for GetTask (default 1000). */
  recentTasks?: number;
  /** How many bytes of receipts are kept for GetTask (default 32 MiB): each holds the message it answers. */
  recentTaskBytes?: number;
  /** What one caller's receipts may take of those (default 200 receipts, 4 MiB), so no caller evicts another's. */
  recentTaskBudget?: Budget;
}

/** How long a client may keep the card (its content changes only with a new release or another host name). */
const CARD_MAX_AGE_SECONDS = 300;

/**
 * The watcher's agent card (the SDK's in-memory form), with its JSON-RPC interface under `baseUrl`: once as v1.0 and
 * once as v0.3 at the same URL, which the SDK's v0.3 compatibility requires of the card (a v1.0 client picks 1.0).
 */
export function watcherAgentCard(baseUrl: string): AgentCard {
  const base = baseUrl.replace(/\/+$/, '');
  const jsonRpcUrl = `${base}${AGENT_JSONRPC_PATH}`;
  return {
    name: 'Expectations watcher',
    description:
      'Keeps time for agents that keep no clock. Report facts, raise expectations ("I expect fact F about subject S ' +
      'by time T") and withdraw them under metadata["' +
      EXTENSION_URI +
      '"] of a message; when an expectation is overdue, skipped or stalled the watcher sends its agent a lapse task.',
    supportedInterfaces: [
      { url: jsonRpcUrl, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: jsonRpcUrl, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: { organization: 'expectations-watcher', url: base },
    version: pkg.version,
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [
        {
          uri: EXTENSION_URI,
          description:
            'Expectations: this agent is a watcher. Activate the extension (A2A-Extensions header) and put ' +
            '{facts, expectations, withdraw} under metadata[URI] of the message.',
          required: true,
          // The watcher keeps time and raises no expectations of its own; lapse tasks go to the raising agents.
          params: { keepsTime: true, lapseSkill: RECORD_SKILL, kinds: [], role: 'watcher' },
        },
      ],
    },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            description: 'The bearer token of a principal (agent or reporter).',
            scheme: 'Bearer',
            bearerFormat: '',
          },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills: [
      {
        id: RECORD_SKILL,
        name: 'Report facts, raise and withdraw expectations',
        description:
          'Records the facts, expectations and withdraw list found under metadata[URI] of the message (any ' +
          'principal may report facts; only an agent may raise or withdraw) and answers with a completed task ' +
          'whose "receipt" artifact holds one result per item.',
        tags: ['expectations', 'facts', 'watcher', 'deadlines'],
        examples: [
          'metadata[URI] = {"facts":[{"factKey":"shipment/S-1/delivered","observedAt":"2026-12-01T09:30:00Z"}]}',
          'metadata[URI] = {"expectations":[{"expectationId":"EXP-42","kind":"delivery",...}]}',
        ],
        inputModes: ['application/json'],
        outputModes: ['application/json', 'text/plain'],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

/**
 * The card as it goes on the wire: A2A v1.0 ProtoJSON (camelCase fields, a oneof as its member's field name,
 * defaults omitted). `JSON.stringify` of the SDK's object, which its own card handler serves, spells a oneof as
 * `{"$case", "value"}`, so that other A2A implementations read no security scheme from it.
 */
export function watcherAgentCardJson(baseUrl: string): unknown {
  return AgentCard.toJSON(watcherAgentCard(baseUrl));
}

/** The A2A user of a request the bridge's bearer check let in. */
class PrincipalUser implements User {
  constructor(
    readonly principal: Principal,
    /** The message's contextId as the agent sent it, before the SDK fills in one of its own where there was none. */
    readonly sentContextId: string | undefined,
  ) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.principal.id;
  }
}

const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});
const dataPart = (value: unknown): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: 'application/json',
});

/** What this endpoint reads under metadata[URI]: the extension's members and `origin` (see raiseOriginOf). */
const JSONRPC_MEMBERS: ReadonlySet<string> = new Set([...EXTENSION_MEMBERS, 'origin']);

/** What the message asks for: its items with their paths in the JSON-RPC request body. */
function locate(message: Message) {
  const base = ['params', 'message', 'metadata', EXTENSION_URI];
  const found = {
    expectations: [] as Located[],
    facts: [] as Located[],
    withdraw: [] as Located<string>[],
    schemaErrors: [] as FieldError[],
    notApplied: [] as FieldError[],
  };
  const payload: unknown = message.metadata?.[EXTENSION_URI];
  if (payload === undefined) return found;
  const parsed = extensionMetadataSchema.safeParse(payload);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      found.schemaErrors.push({ path: joinPath([...base, ...issue.path]), message: issue.message });
    }
    return found;
  }
  found.notApplied.push(...unknownMembers(payload, base, JSONRPC_MEMBERS));
  parsed.data.expectations?.forEach((value, i) =>
    found.expectations.push({ path: [...base, 'expectations', i], value }),
  );
  parsed.data.facts?.forEach((value, i) => found.facts.push({ path: [...base, 'facts', i], value }));
  parsed.data.withdraw?.forEach((value, i) => found.withdraw.push({ path: [...base, 'withdraw', i], value }));
  return found;
}

/** metadata[URI].origin: the agent's own task, named outright. */
const explicitOriginSchema = z.strictObject({
  taskId: z.string().min(1, { message: 'must not be empty' }),
  contextId: z.string().min(1, { message: 'must not be empty' }).optional(),
});

/**
 * The agent's own task, which its lapses will name (DESIGN 3.8): `metadata[URI].origin` = `{taskId, contextId?}`
 * when the message has it, else the first of the message's `referenceTaskIds` and its `contextId`. Never the receipt
 * task the watcher makes for the message, which the agent never had. A message that raises and names no task of its
 * own is refused: its lapse could reference nothing the agent knows.
 */
export function raiseOriginOf(message: Message, raises: boolean): { origin: Origin; originPaths: OriginPaths } {
  const at = ['params', 'message'];
  const explicit: unknown = (message.metadata?.[EXTENSION_URI] as Record<string, unknown> | undefined)?.origin;
  if (explicit !== undefined) {
    const originAt = [...at, 'metadata', EXTENSION_URI, 'origin'];
    const parsed = explicitOriginSchema.safeParse(explicit);
    if (!parsed.success) {
      const errors = parsed.error.issues.map((issue) => ({
        path: joinPath([...originAt, ...issue.path]),
        message: issue.message,
      }));
      throw new SchemaError(`${joinPath(originAt)} must be {taskId, contextId?}: the agent's own task`, errors);
    }
    return {
      origin: parsed.data,
      originPaths: { taskId: [...originAt, 'taskId'], contextId: [...originAt, 'contextId'] },
    };
  }
  const taskId = message.referenceTaskIds[0];
  if (raises && !taskId) {
    const path = joinPath([...at, 'referenceTaskIds']);
    throw new RuleViolationError(
      `a raise names the agent's own task, which its lapses will reference: ${path} is empty`,
      [
        {
          path,
          rule: 'origin-task',
          message:
            "required for a raise: the id of the agent's own task first in referenceTaskIds (with its contextId in " +
            `params.message.contextId), or metadata["${EXTENSION_URI}"].origin = {taskId, contextId}`,
        },
      ],
    );
  }
  return {
    origin: { ...(taskId ? { taskId } : {}), ...(message.contextId ? { contextId: message.contextId } : {}) },
    originPaths: { taskId: [...at, 'referenceTaskIds', 0], contextId: [...at, 'contextId'] },
  };
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** One line a person reads: what was recorded. */
export function receiptText(result: IngestResult): string {
  type Item = { result: string; expectationId?: string; factKey?: string };
  // Each group of the line: its items, their noun, the words for the outcome, and the outcome.
  const said: Array<[items: Item[], noun: string, words: string, outcome: string]> = [
    [result.expectations, 'expectation', 'raised', 'raised'],
    [result.expectations, 'expectation', 'unchanged', 'unchanged'],
    [result.facts, 'fact', 'recorded', 'recorded'],
    [result.facts, 'fact', 'already known', 'duplicate'],
    [result.withdrawn, 'expectation', 'withdrawn', 'withdrawn'],
    [result.withdrawn, 'expectation', 'not open (nothing to withdraw)', 'not-open'],
  ];
  const groups = said.flatMap(([items, noun, words, outcome]) => {
    const ids = items.filter((item) => item.result === outcome).map((item) => item.expectationId ?? item.factKey);
    return ids.length > 0 ? [`${count(ids.length, noun)} ${words} (${ids.join(', ')})`] : [];
  });
  const warnings = result.warnings?.length
    ? ` Warnings: ${result.warnings.map((w) => `${w.path}: ${w.message}`).join('; ')}.`
    : '';
  return `Recorded: ${groups.join('; ')}.${warnings}`;
}

/** One paragraph a person reads: why nothing was recorded. */
export function problemText(problem: Problem): string {
  const fields = problem.errors?.map((error) => `\n- ${error.path || '(message)'}: ${error.message}`).join('') ?? '';
  return `${problem.title} (${problem.status}): ${problem.detail}${fields}`;
}

/** The executor: applies the message through the ingest service and publishes the receipt task. */
/** The receipt task of a message: final the moment it is made. */
const receipt = (requestContext: RequestContext, state: TaskState, parts: Part[], artifacts: Task['artifacts']) =>
  AgentEvent.task({
    id: requestContext.taskId,
    contextId: requestContext.contextId,
    status: {
      state,
      timestamp: new Date().toISOString(),
      message: {
        messageId: crypto.randomUUID(),
        contextId: requestContext.contextId,
        taskId: requestContext.taskId,
        role: Role.ROLE_AGENT,
        parts,
        metadata: undefined,
        extensions: [EXTENSION_URI],
        referenceTaskIds: [],
      },
    },
    artifacts,
    history: [requestContext.userMessage],
    metadata: undefined,
  });

/** A receipt that refuses the message with its problem: rejected for a 4xx, failed for a 5xx. */
const refuse = (requestContext: RequestContext, eventBus: ExecutionEventBus, problem: Problem) => {
  const state = problem.status < 500 ? TaskState.TASK_STATE_REJECTED : TaskState.TASK_STATE_FAILED;
  eventBus.publish(receipt(requestContext, state, [textPart(problemText(problem)), dataPart(problem)], []));
};

export function createWatcherAgentExecutor(deps: Pick<WatcherAgentDeps, 'ingest' | 'logger'>): AgentExecutor {
  return {
    async execute(requestContext, eventBus) {
      const { context } = requestContext;
      const user = context.user;
      try {
        if (!(user instanceof PrincipalUser)) throw new Error('the watcher agent runs only behind the bearer check');
        // The card marks the extension required, so the SDK has refused any request that did not activate it.
        context.addActivatedExtension(EXTENSION_URI);
        const found = locate(requestContext.userMessage);
        if (found.expectations.length + found.facts.length + found.withdraw.length + found.schemaErrors.length === 0) {
          const at = joinPath(['params', 'message', 'metadata', EXTENSION_URI]);
          throw new SchemaError(
            `the message carries nothing to record: put facts, expectations or withdraw under ${at}`,
            [{ path: at, message: 'required: {facts, expectations, withdraw}' }],
          );
        }
        // The message as the agent sent it: the SDK fills in a contextId of its own where the agent gave none.
        const sent = { ...requestContext.userMessage, contextId: user.sentContextId ?? '' };
        const { origin, originPaths } = raiseOriginOf(sent, found.expectations.length > 0);
        const result = await deps.ingest.ingest(user.principal, { origin, originPaths, ...found });
        deps.logger?.info(
          { principal: user.principal.id, taskId: origin.taskId, contextId: origin.contextId, result },
          'watcher agent: message recorded',
        );
        const text = receiptText(result);
        eventBus.publish(
          receipt(
            requestContext,
            TaskState.TASK_STATE_COMPLETED,
            [textPart(text)],
            [
              {
                artifactId: 'receipt',
                name: 'receipt',
                description:
                  'One result per item of the message: raised/unchanged, recorded/duplicate, withdrawn/not-open.',
                parts: [dataPart(result), textPart(text)],
                metadata: undefined,
                extensions: [EXTENSION_URI],
              },
            ],
          ),
        );
      } catch (error) {
        const problem = toProblem(error);
        if (problem.status >= 500)
          deps.logger?.[problem.status === 500 ? 'error' : 'warn']({ err: error }, problem.detail);
        refuse(requestContext, eventBus, problem);
      } finally {
        eventBus.finished();
      }
    },
    async cancelTask() {
      // Receipts are final when they are created: there is nothing running to cancel.
    },
  };
}

/**
 * The card and the JSON-RPC endpoint, as one router the bridge mounts (`app.use(createWatcherAgentRouter(...))`).
 * The card needs no token (clients read it to learn how to authenticate); the endpoint needs a principal's.
 */
export function createWatcherAgentRouter(deps: WatcherAgentDeps): Router {
  // The interface URL in this card is not served: the card handler below builds one per request, from its origin.
  const requestHandler = new WatcherRequestHandler(
    watcherAgentCard('http://watcher.invalid'),
    new RecentTaskStore(deps.recentTasks, deps.recentTaskBytes, deps.recentTaskBudget),
    createWatcherAgentExecutor(deps),
  );
  const router = express.Router();
  // Express adds the ETag and answers If-None-Match with 304, as the SDK's card handler does. The card is v1.0 for
  // every request: a v0.3 card for requests without A2A-Version (the SDK's legacy card router) would hand strict
  // v1.0 clients that send none a card they cannot parse.
  router.get(AGENT_CARD_PATH, (req, res) => {
    // Its interface URL is built from the request's origin, so a shared cache must keep one copy per origin: a card
    // cached for a forged Host would send every later client elsewhere.
    res
      .set('Cache-Control', `public, max-age=${CARD_MAX_AGE_SECONDS}`)
      .set('Vary', 'Host, X-Forwarded-Host, X-Forwarded-Proto')
      .json(watcherAgentCardJson(originOf(req)));
  });
  router.use(
    AGENT_JSONRPC_PATH,
    authenticate(deps.principals),
    // JSON-RPC 2.0's answers to a body that is no request (-32700, -32600), to a notification (204, not executed)
    // and to params A2A requires that the SDK lets through (-32602); a body over 1 MiB is the bridge's 413.
    ...jsonRpcEnvelope({ limit: '1mb', logger: deps.logger }),
    jsonRpcHandler({
      requestHandler,
      userBuilder: async (req) => new PrincipalUser(principalOf(req), sentContextIdOf(req.body)),
      // v0.3 agents (message/send, X-A2A-Extensions) reach the same executor; lapse delivery speaks v0.3 to them too.
      legacyCompat: { enabled: true },
    }),
  );
  return router;
}

/** `params.message.contextId` of a JSON-RPC body (v1.0 `SendMessage` and v0.3 `message/send` alike), if a string. */
function sentContextIdOf(body: unknown): string | undefined {
  const contextId: unknown = (body as { params?: { message?: { contextId?: unknown } } } | undefined)?.params?.message
    ?.contextId;
  return typeof contextId === 'string' && contextId !== '' ? contextId : undefined;
}

/** The origin the caller reached us at (honours `trust proxy` when the app sets it). */
function originOf(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}
