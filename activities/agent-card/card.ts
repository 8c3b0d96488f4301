/**
 * The one reader of agents' cards, for the bridge and the worker alike: fetched with the principal's authorization
 * through the guarded fetch, cached for `cacheSeconds`, and reduced to the skill ids, the extension declaration
 * (DESIGN 3.1) and the security schemes; what a failure says is safe to show the agent.
 */
import {
  createGuardedFetch,
  DEFAULT_MAX_RESPONSE_BYTES,
  outboundRefusalOf,
  readCapped,
  type OutboundRefusedError,
} from '../outbound/guarded-fetch.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { CardUnreachableError } from './errors.js';
import { agentCardSchema, type SecuritySchemeInfo } from './schema.js';

export type { SecuritySchemeInfo };

/** How long a card is reused unless WATCHER_CARD_CACHE_SECONDS says otherwise. */
export const DEFAULT_CARD_CACHE_SECONDS = 60;

/** What the watcher knows about an agent from its card. */
export interface AgentCardInfo {
  version: '1.0' | '0.3';
  skillIds: string[];
  /** The `capabilities.extensions[]` entry with our URI; absent when the card does not declare the extension. */
  declaration?: { index: number; params: unknown };
  /** `securitySchemes` by name, whichever form the card spelt them in. */
  securitySchemes: Record<string, SecuritySchemeInfo>;
  /** Each requirement as scheme name → scopes (v1.0 `securityRequirements`, v0.3 `security`). */
  securityRequirements: Record<string, string[]>[];
}

/** Reads a card already parsed from JSON. Throws CardUnreachableError when it is not an agent card at all. */
export function parseAgentCard(card: unknown, cardUrl = 'the card'): AgentCardInfo {
  const parsed = agentCardSchema.safeParse(card);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CardUnreachableError(
      `${cardUrl} is not an A2A agent card: ${issue.path.join('.') || '(root)'}: ${issue.message}`,
      'not-a-card',
    );
  }
  const c = parsed.data;
  const version = c.supportedInterfaces !== undefined || c.protocolVersion?.startsWith('1.') ? '1.0' : '0.3';
  const extensions = c.capabilities?.extensions ?? [];
  // The index counts every entry, read or not, so that an error's path names the entry as the card lists it.
  const index = extensions.findIndex((e) => isRecord(e) && e.uri === EXTENSION_URI);
  const entry = extensions[index] as Record<string, unknown> | undefined;
  return {
    version,
    skillIds: (c.skills ?? []).map((s) => s.id),
    declaration: entry === undefined ? undefined : { index, params: entry.params },
    securitySchemes: c.securitySchemes ?? {},
    securityRequirements: (c.securityRequirements ?? c.security ?? []).filter((r) => r !== null),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The skill a lapse task invokes (the declaration's `lapseSkill`), for the lapse message to name (DESIGN 3.8);
 * undefined when the card, read at delivery, no longer declares one that names a skill on it.
 */
export function lapseSkillOf(card: AgentCardInfo): string | undefined {
  const params = card.declaration?.params;
  const skill = isRecord(params) ? params.lapseSkill : undefined;
  return typeof skill === 'string' && card.skillIds.includes(skill) ? skill : undefined;
}

/** An agent's card as read: its JSON as served, and what the watcher reads of it. */
export interface AgentCardRead {
  json: unknown;
  info: AgentCardInfo;
}

/** Where a card is, and the Authorization header it is fetched with (the principal's `agent`). */
export interface CardLocation {
  cardUrl: string;
  authorization?: string;
}

export interface CardResolverOptions {
  /** Default: the guarded fetch with no outbound allow list (non-public addresses denied). */
  fetch?: typeof fetch;
  /** The most of a card that is read (default 1 MiB); a larger one is refused. */
  maxBytes?: number;
  /** How long a card that was read is reused; 0 reads it for every call. */
  cacheSeconds: number;
  /** Per fetch (default 5 s). */
  timeoutMs?: number;
  /** Milliseconds since the epoch; the cache's clock. */
  now?: () => number;
}

export interface CardResolver {
  /** The card info of the agent; throws CardUnreachableError when it cannot be fetched or read. */
  resolve(agent: CardLocation): Promise<AgentCardInfo>;
  /** The card and its info; `signal` ends the fetch early (the card reader's own timeout applies too). */
  read(agent: CardLocation, options?: { signal?: AbortSignal }): Promise<AgentCardRead>;
  /** Drops the cached card, e.g. after the agent refused a request made from it: the next read fetches it. */
  forget(agent: CardLocation): void;
}

/**
 * A card reader with a small time-bounded cache keyed by URL and authorization. Concurrent reads of one card share
 * one fetch (many lapses fall due together for one agent); a failed read is not cached.
 */
export function createCardResolver(options: CardResolverOptions): CardResolver {
  const fetchFn = options.fetch ?? createGuardedFetch();
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const cache = new Map<string, { at: number; read: Promise<AgentCardRead> }>();
  const keyOf = ({ cardUrl, authorization }: CardLocation) => `${cardUrl}\n${authorization ?? ''}`;

  async function load({ cardUrl, authorization }: CardLocation, signal?: AbortSignal): Promise<AgentCardRead> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetchFn(cardUrl, {
        // A server with the SDK's v0.3 compatibility serves a v0.3 card to a request without A2A-Version.
        headers: { accept: 'application/json', 'A2A-Version': '1.0', ...(authorization ? { authorization } : {}) },
        signal: signal ? AbortSignal.any([timeout, signal]) : timeout,
      });
    } catch (error) {
      const refused = outboundRefusalOf(error);
      if (refused) throw refusedCard(refused);
      if (timeout.aborted || signal?.aborted || (error instanceof Error && error.name === 'TimeoutError')) {
        throw new CardUnreachableError(`the agent card at ${cardUrl} did not answer in time`, 'timeout');
      }
      const message = `the agent card at ${cardUrl} could not be fetched: ${describe(error)}`;
      throw new CardUnreachableError(message, 'network');
    }
    if (!response.ok) {
      await response.body?.cancel();
      const message = `the agent card at ${cardUrl} answered HTTP ${response.status}`;
      throw new CardUnreachableError(message, 'http', response.status);
    }
    let json: unknown;
    try {
      // TextDecoder drops a byte-order mark, as response.json() does.
      json = JSON.parse(new TextDecoder().decode(await readCapped(response, maxBytes, cardUrl)));
    } catch (error) {
      const refused = outboundRefusalOf(error);
      if (refused) throw refusedCard(refused);
      // Not the parser's message: it quotes the body, and whatever the URL served is none of the agent's business.
      if (error instanceof SyntaxError)
        throw new CardUnreachableError(`the agent card at ${cardUrl} is not JSON`, 'not-json');
      throw new CardUnreachableError(
        `the agent card at ${cardUrl} could not be read whole: ${describe(error)}`,
        'network',
      );
    }
    return { json, info: parseAgentCard(json, cardUrl) };
  }

  const reader: CardResolver = {
    async resolve(agent) {
      return (await reader.read(agent)).info;
    },
    read(agent, readOptions = {}) {
      const key = keyOf(agent);
      const hit = cache.get(key);
      if (hit && now() - hit.at < options.cacheSeconds * 1000) return hit.read;
      const read = load(agent, readOptions.signal);
      if (options.cacheSeconds > 0) {
        const entry = { at: now(), read };
        cache.set(key, entry);
        void read.catch(() => {
          if (cache.get(key) === entry) cache.delete(key);
        });
      }
      return read;
    },
    forget(agent) {
      cache.delete(keyOf(agent));
    },
  };
  return reader;
}

/** A refusal of the guarded fetch as a card failure; the refusal stays its cause, with the detail for operators. */
function refusedCard(refused: OutboundRefusedError): CardUnreachableError {
  const error = new CardUnreachableError(`the agent card: ${refused.message}`, refused.refusal);
  error.cause = refused;
  return error;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
