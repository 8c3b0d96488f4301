/**
 * What the bridge's e2e tests share: the bridge (`createApp`) listening on a random port, wired to a real Temporal
 * client and a real worker on the shared dev server with its own task queue; a small server of agent cards whose
 * content each test chooses; principals of every role; and fetch helpers.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import express from 'express';
import { inject } from 'vitest';
import { createPrincipalStore, tokenSha256, type PrincipalsFile } from '../../src/auth/principals.js';
import { createApp, type AppDeps } from '../../src/http/app.js';
import { createMetrics, type WatcherMetrics } from '../../src/metrics.js';
import { EXTENSION_URI, type Expectation } from '../../src/schemas/extension.js';
import { createWatcherWorker, type WatcherWorker } from '../../src/temporal/worker.js';

export { artifactUpdate, unique } from '../support/payloads.js';

export const UI_URL = 'http://temporal-ui.test:8233';

/** A v1.0 card (the SDK's JSON shape) declaring the extension with `delivery` and `pickup` kinds. */
export function cardJson(overrides: { params?: unknown; skills?: string[]; declare?: boolean } = {}) {
  const params = overrides.params ?? {
    keepsTime: false,
    lapseSkill: 'handle-lapse',
    kinds: [
      { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' },
      { kind: 'pickup', subjectType: 'shipment', basis: 'observed', describes: 'The carrier picks the shipment up' },
    ],
  };
  return {
    name: 'Card of a test agent',
    description: 'Keeps no clock.',
    supportedInterfaces: [{ url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    version: '1.0.0',
    capabilities: {
      extensions: overrides.declare === false ? [] : [{ uri: EXTENSION_URI, description: '', required: false, params }],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: (overrides.skills ?? ['handle-lapse']).map((id) => ({ id, name: id, description: '', tags: [], examples: [] })),
    signatures: [],
  };
}

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
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (name) => `${base}/cards/${name}`,
    set: (name, card) => void cards.set(name, card),
    authorizations,
    close: () => close(server),
  };
}

export function listen(app: express.Express): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
    server.once('error', reject);
  });
}

export function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}

export interface PrincipalSpec {
  id: string;
  roles: PrincipalsFile['principals'][number]['roles'];
  cardUrl?: string;
  authorization?: string;
}

export interface BridgeEnv {
  url: string;
  client: Client;
  taskQueue: string;
  metrics: WatcherMetrics;
  /** principal id → bearer token */
  tokens: Record<string, string>;
  close(): Promise<void>;
}

/** Starts a worker on its own task queue and the bridge on a random port. */
export async function startBridgeEnv(
  principals: PrincipalSpec[],
  options: { settings?: Partial<AppDeps['settings']>; name: string },
): Promise<BridgeEnv> {
  const taskQueue = `bridge-${options.name}-${randomUUID()}`;
  const watcher: WatcherWorker = await createWatcherWorker({
    address: inject('temporalAddress'),
    namespace: 'default',
    taskQueue,
    workflowBundlePath: inject('workflowBundlePath'),
  });
  const running = watcher.run();
  const tokens = Object.fromEntries(principals.map((p) => [p.id, `${p.id}-${randomUUID()}`]));
  const store = createPrincipalStore({
    principals: principals.map((p) => ({
      id: p.id,
      tokenSha256: tokenSha256(tokens[p.id]!),
      roles: p.roles,
      ...(p.cardUrl ? { agent: { cardUrl: p.cardUrl, authorization: p.authorization } } : {}),
    })),
  });
  const metrics = createMetrics();
  const app = createApp({
    client: watcher.client,
    taskQueue,
    namespace: 'default',
    principals: store,
    settings: { factRetention: 'P7D', lateWindow: 'P30D', maxLineage: 10, cardCacheSeconds: 0, ...options.settings },
    temporalUiUrl: UI_URL,
    metrics,
  });
  const server = await listen(app);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    client: watcher.client,
    taskQueue,
    metrics,
    tokens,
    async close() {
      await close(server);
      await watcher.shutdown();
      await running;
    },
  };
}

/** A unique suffix for ids, so files and tests never collide on the shared server. */

/** An expectation of kind `delivery`, due in a year (it never lapses during a test). */
export function expectation(id: string, overrides: Partial<Expectation> = {}): Expectation {
  const dueAt = new Date(Date.now() + 365 * 24 * 3600 * 1000);
  dueAt.setUTCMilliseconds(0);
  return {
    expectationId: id,
    kind: 'delivery',
    subject: { type: 'shipment', id: `S-${id}` },
    expects: 'The shipment is delivered to the consignee',
    satisfiedBy: { factKey: `shipment/${id}/delivered` },
    dueAt: dueAt.toISOString().replace('.000Z', 'Z'),
    basis: 'contract',
    ...overrides,
  };
}


export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** A request to the bridge, answered with status, headers and the parsed body. */
export async function request(
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
  const response = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (e.g. /metrics)
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

export const problem = (slug: string) => `urn:expectations-watcher:problem:${slug}`;
