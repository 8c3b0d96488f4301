/**
 * Lapse delivery (DESIGN 3.8): one A2A message to the agent that raised the expectation, through @a2a-js/sdk's
 * client, on the JSON-RPC interface its card advertises (v1.0 `SendMessage`, v0.3 `message/send`).
 */
import { Role, type Message, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  withA2AExtensions,
  type ServiceParameters,
} from '@a2a-js/sdk/client';
import { ApplicationFailure } from '@temporalio/common';
import { MAX_LENGTH } from '../core/limits.js';
import { createCardResolver, lapseSkillOf, type AgentCardRead, type CardResolver } from './agent-card/card.js';
import { CardUnreachableError } from './agent-card/errors.js';
import { createGuardedFetch, outboundRefusalOf, type OutboundRefusedError } from './outbound/guarded-fetch.js';
import { EXTENSION_URI, type Lapse } from '../core/schemas/extension.js';
import { LAPSE_REJECTED, type DeliverLapseInput, type DeliverLapseResult } from '../workflows/activity-types.js';

/** ApplicationFailure type of a delivery that may succeed later (network, timeout, 408, 429, 5xx): retried. */
export const LAPSE_UNAVAILABLE = 'LapseDeliveryUnavailable';

/** How long one attempt (card fetch and send) may take before it is abandoned and retried. */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 20_000;

/** Where an agent is reached: read from the principals file at delivery time, never from Temporal. */
export interface AgentContact {
  cardUrl?: string;
  /** The Authorization header value the watcher sends to the agent. */
  authorization?: string;
}

/** Finds an agent's contact by its principal id (the principals file, reloaded when it changes). */
export interface AgentDirectory {
  /** Undefined when no principal has this id (any more). */
  contact(agentId: string): Promise<AgentContact | undefined>;
}

export interface DeliveryDeps {
  /**
   * For the card and the SDK's transport alike. Default: the guarded fetch (./outbound/guarded-fetch.ts) with no
   * outbound allow list, so that a card naming a non-public address gets nothing sent.
   */
  fetch?: typeof fetch;
  /**
   * The agents' card URLs and credentials (the worker always has one). Without one, the contact is read from the
   * delivery input itself, which the workflows never fill: for tests of the activity alone.
   */
  agents?: AgentDirectory;
  /** Per-attempt timeout; defaults to {@link DEFAULT_ATTEMPT_TIMEOUT_MS}. */
  attemptTimeoutMs?: number;
  /**
   * The card reader the bridge uses too (./agent-card/card.ts), with WATCHER_CARD_CACHE_SECONDS; without one, each
   * delivery reads the card afresh through `fetch`.
   */
  cards?: CardResolver;
}

// JSON-RPC error codes that say the request itself is unacceptable: sending it again cannot help.
const INVALID_REQUEST_CODES = new Set([
  -32700, // parse error
  -32600, // invalid request
  -32601, // method not found
  -32602, // invalid params
  -32004, // unsupported operation
  -32005, // content type not supported
  -32008, // extension support required
  -32009, // version not supported
]);

/** What the agent answered over HTTP last, seen through the wrapped fetch. */
interface Observed {
  url: string;
  status: number;
  statusText: string;
  headers: Headers;
}

/**
 * The sentence a person (or the agent's model) reads in the lapse task's text part; it names the card's lapse skill
 * when there is one (A2A has no field that routes a message to a skill, so the text and the metadata say it).
 */
export function lapseText(lapse: Lapse, lapseSkill?: string): string {
  const act = lapseSkill === undefined ? 'act on it' : `act on it with your skill ${lapseSkill}`;
  const opening = `Expectation ${lapse.expectationId} (${lapse.kind}) lapsed; the watcher asks you to ${act}`;
  return `${opening}: expects ${lapse.expects} for ${lapse.subject.type} ${lapse.subject.id} by ${lapse.dueAt}: ${lapse.lapse}`;
}

/**
 * The lapse task's first Message, in the SDK's v1.0 shape (the v0.3 transport translates it). `lapseSkill`, the
 * skill of the card's declaration the lapse task invokes, goes next to the lapse under `metadata[URI]`.
 */
export function lapseMessage(input: DeliverLapseInput, lapseSkill?: string): Message {
  const text = lapseText(input.lapse, lapseSkill);
  return {
    messageId: input.messageId,
    contextId: input.origin.contextId ?? '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' },
      { content: { $case: 'data', value: input.lapse }, metadata: undefined, filename: '', mediaType: '' },
    ],
    metadata: { [EXTENSION_URI]: { lapse: input.lapse, ...(lapseSkill === undefined ? {} : { lapseSkill }) } },
    extensions: [EXTENSION_URI],
    referenceTaskIds: input.origin.taskId ? [input.origin.taskId] : [],
  };
}

/**
 * A failure's message ends up on the expectation's record (`delivery.error`) and so in its carried state: an agent's
 * answer quoted in it is cut to MAX_LENGTH.deliveryError characters (core/limits.ts).
 */
function bounded(message: string): string {
  const limit = MAX_LENGTH.deliveryError;
  return message.length <= limit ? message : `${message.slice(0, limit - 1)}…`;
}

const retryable = (message: string, cause?: unknown) =>
  ApplicationFailure.create({
    type: LAPSE_UNAVAILABLE,
    nonRetryable: false,
    message: bounded(message),
    cause: asError(cause),
  });

const rejected = (message: string, cause?: unknown) =>
  ApplicationFailure.create({
    type: LAPSE_REJECTED,
    nonRetryable: true,
    message: bounded(message),
    cause: asError(cause),
  });

function asError(cause: unknown): Error | undefined {
  if (cause === undefined) return undefined;
  return cause instanceof Error ? cause : new Error(String(cause));
}

/** 4xx other than 408 and 429 is the agent refusing this request; everything else may pass later. */
const isRefusal = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429;

function httpFailure(what: string, observed: Observed, cause?: unknown): ApplicationFailure {
  const message = `${what}: HTTP ${observed.status}${observed.statusText ? ` ${observed.statusText}` : ''} from ${observed.url}`;
  return isRefusal(observed.status) ? rejected(message, cause) : retryable(message, cause);
}

function isTimeout(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'));
}

/** The extension URIs an agent echoed, from either spelling of the header (v0.3 used `X-A2A-Extensions`). */
function echoedExtensions(headers: Headers): string[] {
  const value = [headers.get('A2A-Extensions'), headers.get('X-A2A-Extensions')].filter(Boolean).join(',');
  return value
    .split(',')
    .map((uri) => uri.trim())
    .filter(Boolean);
}

const isMessage = (result: Message | Task): result is Message => 'messageId' in result && 'role' in result;

type A2AClient = Awaited<ReturnType<ClientFactory['createFromAgentCard']>>;
type Agent = { id: string } & AgentContact;

/** A fetch that remembers the agent's last HTTP answer: the SDK reports HTTP failures only as text. */
function observing(baseFetch: typeof fetch): { fetch: typeof fetch; last(): Observed | undefined; forget(): void } {
  let last: Observed | undefined;
  return {
    async fetch(resource, init) {
      const response = await baseFetch(resource, init);
      last = {
        url: urlOf(resource),
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      };
      return response;
    },
    last: () => last,
    forget: () => void (last = undefined),
  };
}

/** A client on the card's JSON-RPC interface; a v0.3 card gets the v0.3 compat transport. */
async function clientOf(agent: Agent, card: AgentCardRead, fetchImpl: typeof fetch): Promise<A2AClient> {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
  });
  try {
    return await factory.createFromAgentCard(card.json as Parameters<ClientFactory['createFromAgentCard']>[0]);
  } catch (error) {
    throw rejected(
      `agent ${agent.id}: its card at ${agent.cardUrl} offers no usable JSON-RPC interface: ${describe(error)}`,
      error,
    );
  }
}

/** Why a send failed, refused or to be retried: by the guarded fetch, the clock, the HTTP status, the JSON-RPC code. */
function sendFailure(
  agentId: string,
  error: unknown,
  timedOut: boolean,
  observed: Observed | undefined,
  timeoutMs: number,
) {
  const refused = outboundRefusalOf(error);
  if (refused) return refusal(`agent ${agentId}: the lapse was not delivered`, refused);
  if (timedOut) return retryable(`sending the lapse for agent ${agentId} timed out after ${timeoutMs} ms`, error);
  if (observed && (observed.status < 200 || observed.status >= 300)) {
    return httpFailure(`agent ${agentId} did not accept the lapse`, observed, error);
  }
  const code = jsonRpcCode(error);
  if (code !== undefined) {
    const message = `agent ${agentId} answered the lapse with JSON-RPC error ${code}: ${describe(error)}`;
    return INVALID_REQUEST_CODES.has(code) ? rejected(message, error) : retryable(message, error);
  }
  // A parser's message quotes the body it choked on: not something to put on the agent's record.
  const what = error instanceof SyntaxError ? 'the answer is not JSON' : describe(error);
  return retryable(`agent ${agentId}: lapse delivery failed: ${what}`, error);
}

/** The lapse task's id, when the agent answered with a task whose id the record may keep, and what to warn of. */
function deliveryResult(
  agentId: string,
  lapseSkill: string | undefined,
  response: Observed | undefined,
  result: Message | Task,
): DeliverLapseResult {
  const warnings: string[] = [];
  if (lapseSkill === undefined) {
    warnings.push(`agent ${agentId}'s card declares no lapseSkill that names a skill on it: the lapse task names none`);
  }
  if (!response || !echoedExtensions(response.headers).includes(EXTENSION_URI)) {
    warnings.push(`agent ${agentId} did not echo ${EXTENSION_URI} in A2A-Extensions: the extension may not be active`);
  }
  if (isMessage(result)) {
    warnings.push(`agent ${agentId} answered the lapse with a message, not a task: no lapse task id`);
    return { warnings };
  }
  // The task id is kept on the record: an agent's id past the bound of an id is not (core/limits.ts).
  if (result.id.length > MAX_LENGTH.id) {
    warnings.push(
      `agent ${agentId} answered with a task id of ${result.id.length} characters, over ${MAX_LENGTH.id}: not recorded`,
    );
    return { warnings };
  }
  return { taskId: result.id, warnings };
}

/** The delivery activity, built from its HTTP client and card reader (STYLE 6). */
export function createDeliveryActivities(deps: DeliveryDeps) {
  const baseFetch = deps.fetch ?? createGuardedFetch();
  const attemptTimeoutMs = deps.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  // A cached card is forgotten when a send made from it fails, so a changed card is read again on the retry.
  const cards = deps.cards ?? createCardResolver({ fetch: baseFetch, cacheSeconds: 0 });

  /** The agent's card URL and credential as the principals file says now (a rotated token applies at once). */
  async function contactOf(ref: DeliverLapseInput['agent']): Promise<Agent> {
    if (!deps.agents) return ref as Agent;
    const contact = await deps.agents.contact(ref.id);
    if (!contact) throw rejected(`agent ${ref.id} is not in the principals file: nowhere to deliver the lapse`);
    return { id: ref.id, ...contact };
  }

  return {
    /**
     * Sends the lapse task's first Message to the agent. Throws a non-retryable `LAPSE_REJECTED` failure when the
     * agent refuses it (4xx, invalid-request JSON-RPC errors, no JSON-RPC interface) and a retryable one otherwise.
     */
    async deliverLapse(input: DeliverLapseInput): Promise<DeliverLapseResult> {
      const agent = await contactOf(input.agent);
      const cardUrl = agent.cardUrl;
      if (!cardUrl) throw rejected(`agent ${agent.id} has no cardUrl: nowhere to deliver the lapse`);
      const signal = AbortSignal.timeout(attemptTimeoutMs);
      const answers = observing(baseFetch);

      // 1. The card, read by us so that the agent's Authorization goes with it (or reused for a while).
      const location = { cardUrl, authorization: agent.authorization };
      const card = await cards.read(location, { signal }).catch((error: unknown) => {
        throw cardFailure(agent.id, error);
      });
      // Read at delivery, like the card URL: a card changed since the raise names the skill it has now.
      const lapseSkill = lapseSkillOf(card.info);

      // 2. The client, 3. the message. The SDK sets A2A-Version from the interface and spells the extensions header.
      const client = await clientOf(agent, card, answers.fetch).catch((error: unknown) => {
        cards.forget(location);
        throw error;
      });
      const serviceParameters: ServiceParameters = agent.authorization ? { Authorization: agent.authorization } : {};
      withA2AExtensions(EXTENSION_URI)(serviceParameters);
      answers.forget();
      let result: Message | Task;
      try {
        result = await client.sendMessage(
          {
            tenant: '',
            message: lapseMessage(input, lapseSkill),
            // Non-blocking: the watcher needs the task id, not the agent's handling of the lapse.
            configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
            metadata: undefined,
          },
          { signal, serviceParameters },
        );
      } catch (error) {
        cards.forget(location);
        throw sendFailure(agent.id, error, isTimeout(error, signal), answers.last(), attemptTimeoutMs);
      }
      return deliveryResult(agent.id, lapseSkill, answers.last(), result);
    },
  };
}

/** A refusal of the guarded fetch as a non-retryable failure: its message for the agent, its detail in the cause. */
function refusal(what: string, refused: OutboundRefusedError): ApplicationFailure {
  return rejected(`${what}: ${refused.message}`, new Error(refused.detail));
}

/**
 * A card that could not be read: refused (4xx, not a card, or by the guarded fetch) or retried (network, timeout, 5xx,
 * a body not JSON).
 */
function cardFailure(agentId: string, error: unknown): ApplicationFailure {
  if (!(error instanceof CardUnreachableError)) return retryable(`agent ${agentId}: ${describe(error)}`, error);
  const refused = outboundRefusalOf(error.cause);
  if (refused) return refusal(`agent ${agentId}: the lapse was not delivered: its card was not read`, refused);
  const message = `agent ${agentId}: ${error.message}`;
  if (error.reason === 'not-a-card') return rejected(message, error);
  if (error.reason === 'http' && error.status !== undefined && isRefusal(error.status)) return rejected(message, error);
  return retryable(message, error);
}

function urlOf(resource: string | URL | Request): string {
  if (typeof resource === 'string') return resource;
  return resource instanceof URL ? resource.href : resource.url;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function jsonRpcCode(error: unknown): number | undefined {
  const code = (error as { envelopeCode?: unknown } | null)?.envelopeCode;
  return typeof code === 'number' ? code : undefined;
}
