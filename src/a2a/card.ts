/**
 * The raising agent's card: fetched from the principal's `cardUrl` with its authorization, parsed as an A2A v1.0
 * card (v0.3 accepted), reduced to what the rules of DESIGN 3.1 read: the skill ids and the extension declaration.
 * Cached for `cacheSeconds` (a cache a restart may lose: it only saves fetches).
 */
import { z } from 'zod';
import { EXTENSION_URI } from '../schemas/extension.js';
import { CardUnreachableError } from '../service/errors.js';

const agentCardSchema = z.looseObject({
  name: z.string().optional(),
  /** v1.0 */
  supportedInterfaces: z.array(z.looseObject({})).optional(),
  /** v0.3 */
  protocolVersion: z.string().optional(),
  url: z.string().optional(),
  capabilities: z
    .looseObject({
      extensions: z.array(z.looseObject({ uri: z.string(), params: z.unknown().optional() })).optional(),
    })
    .optional(),
  skills: z.array(z.looseObject({ id: z.string() })).optional(),
});

/** What the bridge knows about an agent from its card. */
export interface AgentCardInfo {
  version: '1.0' | '0.3';
  skillIds: string[];
  /** The `capabilities.extensions[]` entry with our URI; absent when the card does not declare the extension. */
  declaration?: { index: number; params: unknown };
}

/** Reads a card already parsed from JSON. Throws CardUnreachableError when it is not an agent card at all. */
export function parseAgentCard(card: unknown, cardUrl = 'the card'): AgentCardInfo {
  const parsed = agentCardSchema.safeParse(card);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CardUnreachableError(
      `${cardUrl} is not an A2A agent card: ${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
  }
  const c = parsed.data;
  const version = c.supportedInterfaces !== undefined || c.protocolVersion?.startsWith('1.') ? '1.0' : '0.3';
  const extensions = c.capabilities?.extensions ?? [];
  const index = extensions.findIndex((e) => e.uri === EXTENSION_URI);
  return {
    version,
    skillIds: (c.skills ?? []).map((s) => s.id),
    declaration: index === -1 ? undefined : { index, params: extensions[index]!.params },
  };
}

export interface CardResolverOptions {
  fetch?: typeof fetch;
  cacheSeconds: number;
  timeoutMs?: number;
  now?: () => number;
}

export interface CardResolver {
  /** The card info of the agent; throws CardUnreachableError when it cannot be fetched or read. */
  resolve(agent: { cardUrl: string; authorization?: string }): Promise<AgentCardInfo>;
}

/** A card resolver with a small time-bounded cache keyed by URL and authorization. */
export function createCardResolver(options: CardResolverOptions): CardResolver {
  const fetchFn = options.fetch ?? globalThis.fetch;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const cache = new Map<string, { at: number; info: AgentCardInfo }>();

  async function load(cardUrl: string, authorization?: string): Promise<AgentCardInfo> {
    let response: Response;
    try {
      response = await fetchFn(cardUrl, {
        headers: { accept: 'application/json', ...(authorization ? { authorization } : {}) },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new CardUnreachableError(`the agent card at ${cardUrl} could not be fetched: ${describe(error)}`);
    }
    if (!response.ok) {
      throw new CardUnreachableError(`the agent card at ${cardUrl} answered HTTP ${response.status}`);
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw new CardUnreachableError(`the agent card at ${cardUrl} is not JSON: ${describe(error)}`);
    }
    return parseAgentCard(body, cardUrl);
  }

  return {
    async resolve({ cardUrl, authorization }) {
      const key = `${cardUrl}\n${authorization ?? ''}`;
      const hit = cache.get(key);
      if (hit && now() - hit.at < options.cacheSeconds * 1000) return hit.info;
      const info = await load(cardUrl, authorization);
      cache.set(key, { at: now(), info });
      return info;
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
