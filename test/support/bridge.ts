/**
 * The bridge for e2e tests: `createApp` on a real Temporal client, listening on a random port with one random token
 * per principal (`startBridgeApp`), or together with a watcher worker on a task queue of its own
 * (`startBridgeEnv`); a server of agent cards whose content each test chooses; requests to the bridge; and the
 * payloads the tests send it (the expectations and cards in them come from fixtures.ts).
 */
import { randomUUID } from 'node:crypto';
import { Client, type Connection } from '@temporalio/client';
import express from 'express';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Expectation } from '../../core/types.js';
import { createPrincipalStore } from '../../src/auth/principals.js';
import { createApp, type AppDeps, type AppSettings } from '../../src/http/app.js';
import { createMetrics, type WatcherMetrics } from '../../src/metrics.js';
import { startTestAgent, type TestAgent, type TestAgentOptions } from './agent.js';
import { principalsFileOf, registerAgents, type PrincipalSpec } from './agents.js';
import { artifactUpdate, cardJson } from './fixtures.js';
import { unique } from './ids.js';
import { close, listen, urlOf } from './net.js';
import { loopbackAgents } from './outbound.js';
import { startWatcherWorker } from './watcher.js';

export const UI_URL = 'http://temporal-ui.test:8233';

export { unique };
export { artifactUpdate };

export interface CardServer {
  url(name: string): string;
  set(name: string, card: unknown): void;
  /** Authorization headers each card was fetched with. */
  authorizations: string[];
  close(): Promise<void>;
}

/** Serves `GET /cards/<name>` with whatever card `set` gave it (404 for an unknown name). */
export async function startCardServer(): Promise<CardServer> {
  const cards = new Map<string, unknown>();
  const authorizations: string[] = [];
  const app = express();
  app.get('/cards/:name', (req, res) => {
    authorizations.push(req.get('authorization') ?? '');
    const card = cards.get(req.params.name);
    if (card === undefined) res.status(404).json({ error: 'no such card' });
    else res.json(card);
  });
  const server = await listen(app);
  const base = urlOf(server);
  return {
    url: (name) => `${base}/cards/${name}`,
    set: (name, card) => void cards.set(name, card),
    authorizations,
    close: () => close(server),
  };
}

export type { PrincipalSpec };

export interface BridgeApp {
  url: string;
  /** principal id → bearer token */
  tokens: Record<string, string>;
  close(): Promise<void>;
}

/** What a test may set of the app's dependencies: settings one by one, the rest whole. */
export type BridgeOverrides = Partial<Omit<AppDeps, 'client' | 'taskQueue' | 'principals' | 'settings'>> & {
  settings?: Partial<AppDeps['settings']>;
};

/**
 * `createApp` on `client`, listening on 127.0.0.1 and a random port, with one random token per principal; its
 * principals are registered as the agents of `taskQueue`'s in-process workers. It reads cards on loopback
 * (WATCHER_OUTBOUND_ALLOW=loopback) unless `overrides.outbound` says otherwise.
 */
export async function startBridgeApp(
  client: Client,
  taskQueue: string,
  principals: PrincipalSpec[],
  overrides: BridgeOverrides = {},
): Promise<BridgeApp> {
  const tokens = Object.fromEntries(principals.map((p) => [p.id, `${p.id}-${randomUUID()}`]));
  const store = createPrincipalStore(principalsFileOf(principals, tokens));
  // The workers of this task queue deliver lapses to these agents (test/support/agents.ts).
  registerAgents(taskQueue, store);
  const app = createApp({
    client,
    taskQueue,
    namespace: 'default',
    principals: store,
    outbound: loopbackAgents,
    ...overrides,
    settings: {
      factRetention: 'P7D',
      lateWindow: 'P30D',
      maxLineage: 10,
      cardCacheSeconds: 0,
      // The product's default wait (WATCHER_TEMPORAL_WAIT, PT30S): on a busy two-core machine a request to a
      // loaded dev server waits instead of failing; the settle interval stays far shorter than it (the settle
      // tests and the no-false-lapse tests of raise-path.test.ts keep the coupled default).
      temporalWaitMs: 30_000,
      settle: 'PT1S',
      ...overrides.settings,
    },
  });
  const server = await listen(app);
  return { url: urlOf(server), tokens, close: () => close(server) };
}

/**
 * `createApp` on a client of `connection` with these principals and tokens, no worker and no agent behind it,
 * listening on a random port; `settings` over a lineage of 10 and no card cache.
 */
export async function listenBridge(
  connection: Connection,
  taskQueue: string,
  principals: PrincipalSpec[],
  tokens: Record<string, string>,
  settings: Partial<AppSettings>,
): Promise<{ url: string; close(): Promise<void> }> {
  const app = createApp({
    client: new Client({ connection }),
    taskQueue,
    namespace: 'default',
    principals: createPrincipalStore(principalsFileOf(principals, tokens)),
    settings: { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 0, ...settings },
  });
  const server = await listen(app);
  return { url: urlOf(server), close: () => close(server) };
}

export interface BridgeEnv extends BridgeApp {
  client: Client;
  taskQueue: string;
  metrics: WatcherMetrics;
}

/**
 * Starts a worker on its own task queue and the bridge (with UI links and its own metrics) on a random port. With
 * `codec`, worker and bridge seal payloads with it and the bridge serves the codec endpoint.
 */
export async function startBridgeEnv(
  principals: PrincipalSpec[],
  options: {
    settings?: Partial<AppDeps['settings']>;
    name: string;
    codec?: NonNullable<AppDeps['codec']>;
    address?: string;
  },
): Promise<BridgeEnv> {
  const taskQueue = `bridge-${options.name}-${randomUUID()}`;
  const dataConverter = options.codec ? { payloadCodecs: [options.codec.codec] } : undefined;
  const watcher = await startWatcherWorker(taskQueue, { dataConverter, address: options.address });
  const metrics = createMetrics();
  const bridge = await startBridgeApp(watcher.client, taskQueue, principals, {
    settings: options.settings,
    temporalUiUrl: UI_URL,
    metrics,
    ...(options.codec ? { codec: options.codec } : {}),
  });
  return {
    ...bridge,
    client: watcher.client,
    taskQueue,
    metrics,
    async close() {
      await bridge.close();
      await watcher.stop();
    },
  };
}

/** A test file's bridge from `useBridgeEnv`, with the URL of the good card its agents have. */
export interface CardBridgeEnv extends BridgeEnv {
  cardUrl: string;
}

/**
 * One test file's bridge: a card server serving a good card to every agent of `agents` (ids), the other principals
 * as given, started in `beforeAll` and closed in `afterAll`. The object is filled in when the hook has run.
 */
export function useBridgeEnv(agents: string[], others: PrincipalSpec[], name: string): CardBridgeEnv {
  const env = {} as CardBridgeEnv;
  let cards: CardServer | undefined;
  let started: BridgeEnv | undefined;
  beforeAll(async () => {
    cards = await startCardServer();
    cards.set('good', cardJson());
    const withCards = agents.map((id): PrincipalSpec => ({ id, roles: ['agent'], cardUrl: cards!.url('good') }));
    started = await startBridgeEnv([...withCards, ...others], { name });
    Object.assign(env, started, { cardUrl: cards.url('good') });
  });
  afterAll(async () => {
    await started?.close();
    await cards?.close();
  });
  return env;
}

/** A test file's bridge beside real @a2a-js/sdk agents (`useAgentBridge`), and those agents by principal id. */
export interface AgentBridge {
  env: BridgeEnv;
  agents: Record<string, TestAgent>;
}

/**
 * One test file's bridge (`startBridgeEnv` named `name`) and a real agent per entry of `agents` (principal id → the
 * agent's options), that principal's card being the agent's; beside them the principals `others` answers when the
 * hook runs (a card server the file started before may give their card URLs). Started in `beforeAll`, closed in
 * `afterAll`: the objects are filled in when the hook has run.
 */
export function useAgentBridge(
  name: string,
  agents: Record<string, TestAgentOptions>,
  others: () => PrincipalSpec[] = () => [],
): AgentBridge {
  const fixture: AgentBridge = { env: {} as BridgeEnv, agents: {} };
  let started: BridgeEnv | undefined;
  beforeAll(async () => {
    for (const [id, options] of Object.entries(agents)) fixture.agents[id] = await startTestAgent(options);
    const withAgents = Object.entries(fixture.agents).map(([id, agent]): PrincipalSpec => ({
      id,
      roles: ['agent'],
      cardUrl: agent.cardUrl,
    }));
    started = await startBridgeEnv([...withAgents, ...others()], { name });
    Object.assign(fixture.env, started);
  });
  afterAll(async () => {
    await started?.close();
    await Promise.all(Object.values(fixture.agents).map((agent) => agent.close()));
  });
  return fixture;
}

export const problem = (slug: string) => `urn:expectations-watcher:problem:${slug}`;

/** The status and title of each problem type as the contract writes them (kept here, not read from src/). */
const problemKinds: Record<string, [status: number, title: string]> = {
  'invalid-request': [400, 'The request does not match the schema'],
  'malformed-body': [400, 'The body is not valid JSON'],
  unauthenticated: [401, 'No valid bearer token'],
  forbidden: [403, 'Not allowed for this principal'],
  'not-found': [404, 'Not found'],
  conflict: [409, 'Expectation id reused with other content'],
  'expectation-ended': [409, 'The expectation has ended'],
  'payload-too-large': [413, 'The body is over 1 MiB'],
  'unsupported-media-type': [415, 'The body must be JSON'],
  'rule-violation': [422, 'A rule of the extension is broken'],
  'agent-card-unreachable': [502, "The agent's card could not be fetched"],
};

/** The whole problem+json body of type `slug` with `detail`, and `errors` where fields are at fault. */
export function problemBody(slug: string, detail: unknown, errors?: unknown[]) {
  const kind = problemKinds[slug];
  if (!kind) throw new Error(`no status and title written down for problem type '${slug}'`);
  const [status, title] = kind;
  return { type: problem(slug), title, status, detail, ...(errors ? { errors } : {}) };
}

/** The 400 body for schema errors, each a [path, message]; a single error is also the detail, prefixed by its path. */
export function invalidRequest(...errors: Array<[path: string, message: string]>) {
  const [path, message] = errors[0]!;
  const detail =
    errors.length === 1 ? `${path || '(body)'}: ${message}` : `${errors.length} fields are invalid; see errors`;
  return problemBody(
    'invalid-request',
    detail,
    errors.map(([path, message]) => ({ path, message })),
  );
}

/** The Temporal UI link the bridge gives for an expectation's workflow. */
export const temporalUiOf = (expectationId: string) =>
  `${UI_URL}/namespaces/default/workflows/${encodeURIComponent(`expectation:${expectationId}`)}`;

/** The record GET /v1/expectations/{id} answers for `e` just raised by `agent` from the task `origin`. */
export function openRecordOf(e: Expectation, agent: string, origin: { taskId: string; contextId: string }) {
  const links = { temporalUi: temporalUiOf(e.expectationId) };
  return { expectation: e, state: 'open', lapses: [], lineage: 0, agent: { id: agent }, origin, links };
}

/** A list item (a summary from the search attributes) of an open `delivery` expectation `id` of `agent`. */
export function listItemOf(id: string, subject: { type: string; id: string }, agent: string) {
  const links = { self: `/v1/expectations/${id}`, temporalUi: temporalUiOf(id) };
  const at = expect.stringMatching(/Z$/);
  return {
    expectationId: id,
    workflowId: `expectation:${id}`,
    kind: 'delivery',
    subject,
    state: 'open',
    agent,
    factKey: `shipment/${id}/delivered`,
    dueAt: at,
    raisedAt: at,
    links,
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  contentType: string;
  /** The parsed JSON, or the text when it is not JSON (e.g. /metrics). */
  body: any;
  /** How long the bridge took to answer. */
  ms: number;
}

/** Sends one request and reads the whole answer. */
async function exchange(
  url: string,
  method: string | undefined,
  headers: Record<string, string>,
  body?: string | Buffer,
) {
  const started = Date.now();
  const response = await fetch(url, { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (e.g. /metrics)
  }
  const contentType = response.headers.get('content-type') ?? '';
  return { status: response.status, headers: response.headers, contentType, body: parsed, ms: Date.now() - started };
}

/** A request to the bridge: a JSON `body` (content type unless `headers` set one) or a `rawBody`, bearer token. */
export function request(
  url: string,
  init: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  return exchange(url, init.method, headers, body);
}

/**
 * `send` as a client that follows the contract does: a 429 or 503 is sent again, the same body, after its Retry-After,
 * until `giveUpMs`; `url` may name each attempt's (round-robin over bridges). With `onRetry`, told why each attempt
 * was sent again, no answer at all (refused, reset) is sent again too, after 250 ms.
 */
export async function sendFollowingRetryAfter(
  url: string | (() => string),
  init: Parameters<typeof send>[1],
  giveUpMs = 60_000,
  onRetry?: (why: string) => void,
): Promise<Answer> {
  const started = Date.now();
  for (;;) {
    let waitMs = 250;
    try {
      const answer = await send(typeof url === 'string' ? url : url(), init);
      if ((answer.status !== 429 && answer.status !== 503) || Date.now() - started > giveUpMs) return answer;
      onRetry?.(`${answer.status} ${answer.body?.detail ?? ''}`);
      waitMs = Number(answer.headers.get('retry-after') ?? 1) * 1000 || 1000;
    } catch (error) {
      if (!onRetry || Date.now() - started > giveUpMs) throw error;
      onRetry(`${(error as Error).message} (${(error as { cause?: { code?: string } }).cause?.code ?? 'no code'})`);
    }
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

/** One request to the bridge: JSON body (or a raw one with its own content type), bearer token or a whole header. */
export function send(
  url: string,
  init: {
    method?: string;
    token?: string;
    /** The whole Authorization header, for malformed ones. */
    authorization?: string;
    json?: unknown;
    raw?: string | Buffer;
    contentType?: string;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.authorization !== undefined) headers.authorization = init.authorization;
  let body: string | Buffer | undefined = init.raw;
  if (init.json !== undefined) body = JSON.stringify(init.json);
  if (body !== undefined) headers['content-type'] = init.contentType ?? 'application/json';
  return exchange(url, init.method, headers, body);
}
