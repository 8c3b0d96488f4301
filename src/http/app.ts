/**
 * The bridge's Express app (DESIGN 4). `createApp(deps)` wires routes to the services and never listens: the
 * entry points listen, and tests call it with a real Temporal client.
 */
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import express, { type Request, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { createWatcherAgentRouter } from '../a2a/agent-endpoint.js';
import { createUiRouter } from './ui-routes.js';
import { createCardResolver } from '../../activities/agent-card/card.js';
import type { PrincipalStore } from '../auth/principals.js';
import { DEFAULT_MAX_CLOCK_SKEW, type TrustProxy } from '../config.js';
import type { OutboundRules } from '../../activities/outbound/address-policy.js';
import { createGuardedFetch } from '../../activities/outbound/guarded-fetch.js';
import { pollerReadiness, workflowPollersOf, type WorkerReadiness } from '../temporal/worker-readiness.js';
import { createMetrics, type WatcherMetrics } from '../metrics.js';
import { parseA2AEvent } from '../schemas/a2a.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import {
  factsBodySchema,
  factsQuerySchema,
  listQuerySchema,
  resendParamsSchema,
  statisticsQuerySchema,
  withdrawBodySchema,
} from '../schemas/http.js';
import {
  BridgeBusyError,
  joinPath,
  NotFoundError,
  SchemaError,
  summarise,
  TemporalUnavailableError,
  UnsupportedMediaTypeError,
  WorkerUnavailableError,
} from '../service/errors.js';
import { extractEvent } from '../service/extract.js';
import { createIngestService } from '../service/ingest.js';
import { createLapseResendService } from '../service/lapse-resend.js';
import type { QuotaSettings } from '../service/quotas.js';
import { createRecordsService } from '../service/records.js';
import { createStatisticsService } from '../service/statistics.js';
import { DEFAULT_FACT_WAIT_MS, settleIntervalOf } from '../../workflows/decisions.js';
import { createTemporalCall, withRequestDeadline } from '../service/temporal-call.js';
import { authenticate, principalOf } from '../web/auth.js';
import { CODEC_PATH, createCodecRouter } from './codec-routes.js';
import { openApiDocument } from './openapi.js';
import { problemMiddleware, sendProblem, toProblem } from '../web/problem.js';
import { wellFormedBody } from '../web/well-formed.js';

export interface AppSettings {
  factRetention: string;
  lateWindow: string;
  maxLineage: number;
  /** How far in the future a fact's `observedAt` may be (ISO 8601 duration); default DEFAULT_MAX_CLOCK_SKEW. */
  maxClockSkew?: string;
  cardCacheSeconds: number;
  /** Per-principal quotas (WATCHER_QUOTA_*, src/service/quotas.ts); absent, none is kept (tests, benchmarks). */
  quotas?: QuotaSettings;
  /**
   * How long a request may wait for a slow Temporal (WATCHER_TEMPORAL_WAIT, ms; default DEFAULT_TEMPORAL_WAIT_MS):
   * every Temporal call of the request shares this deadline.
   */
  temporalWaitMs?: number;
  /** How long a request's facts may take to be stored before a 503 (WATCHER_FACT_WAIT, ms; DESIGN 3.2, 3.3). */
  factWaitMs?: number;
  /** Signs the list's page tokens (WATCHER_PAGE_TOKEN_SECRET), so that every bridge of a deployment takes the others'. */
  pageTokenSecret?: string;
  /** The settle interval before a lapse (ISO 8601); default settleIntervalOf(factWaitMs) (workflows/decisions.ts). */
  // Tests only: shorter than the fact wait, a fact a slow Temporal held back past a deadline finds it lapsed.
  settle?: string;
  /**
   * Requests served at once (WATCHER_MAX_REQUESTS_IN_FLIGHT; default DEFAULT_MAX_REQUESTS_IN_FLIGHT): one past it is
   * answered 503 with Retry-After before any work is done.
   */
  maxRequestsInFlight?: number;
}

/** How long a request waits for a slow Temporal unless WATCHER_TEMPORAL_WAIT says otherwise. */
export const DEFAULT_TEMPORAL_WAIT_MS = 30_000;
/** Requests served at once unless WATCHER_MAX_REQUESTS_IN_FLIGHT says otherwise. */
export const DEFAULT_MAX_REQUESTS_IN_FLIGHT = 256;

export interface AppDeps {
  client: Client;
  taskQueue: string;
  namespace: string;
  principals: PrincipalStore;
  settings: AppSettings;
  /** Base URL of the Temporal UI, for `links.temporalUi`. */
  temporalUiUrl?: string;
  /** Used to fetch agent cards (injected so tests can hand in their own); default the guarded fetch of `outbound`. */
  fetch?: typeof fetch;
  /** WATCHER_OUTBOUND_ALLOW / _DENY: where cards may be fetched from; default no allow list (non-public denied). */
  outbound?: OutboundRules;
  metrics?: WatcherMetrics;
  logger?: Logger;
  /** For `/readyz`; by default a getSystemInfo call with a short deadline. */
  isTemporalReachable?: () => Promise<boolean>;
  /**
   * For `/readyz`: whether a worker takes the work. By default DescribeTaskQueue (pollers of the workflow task queue
   * seen lately, cached a few seconds); the worker's own state when it runs in the bridge's process.
   */
  workerReadiness?: () => Promise<WorkerReadiness>;
  /** The ingest's clock (epoch ms: quotas, clock skew); injected so a test can move it. Default Date.now. */
  now?: () => number;
  /** Express's `trust proxy` (WATCHER_TRUST_PROXY): whose X-Forwarded-For gives `req.ip`; default false (nobody's). */
  trustProxy?: TrustProxy;
  /**
   * The codec endpoint (`/codec/decode`, `/codec/encode`; src/http/codec-routes.ts) with the codec the client uses
   * and the browser origins let in; unset (no WATCHER_CODEC_KEYS_FILE), the bridge serves none.
   */
  codec?: { codec: PayloadCodec; corsOrigins: readonly string[] };
}

const JSON_TYPES = ['application/json', 'application/a2a+json', 'application/*+json'];
const BODY_LIMIT = '1mb';

/** What the routes call: the services over Temporal, and the probes the readiness route and the calls share. */
function createServices(deps: AppDeps) {
  const metrics = deps.metrics ?? createMetrics();
  const temporalWaitMs = deps.settings.temporalWaitMs ?? DEFAULT_TEMPORAL_WAIT_MS;
  const factWaitMs = deps.settings.factWaitMs ?? DEFAULT_FACT_WAIT_MS;
  const maxInFlight = deps.settings.maxRequestsInFlight ?? DEFAULT_MAX_REQUESTS_IN_FLIGHT;
  // A short call of its own for the probe and /readyz: they must answer while the request calls wait.
  const quickCall = createTemporalCall(deps.client, 2_000);
  const isReachable =
    deps.isTemporalReachable ??
    (async () => {
      try {
        await quickCall(() => deps.client.workflowService.getSystemInfo({}));
        return true;
      } catch {
        return false;
      }
    });
  const workerReadiness =
    deps.workerReadiness ??
    pollerReadiness({
      taskQueue: deps.taskQueue,
      pollers: workflowPollersOf(deps.client, deps.namespace, deps.taskQueue, quickCall),
    });
  // Given up early only when waiting is pointless: Temporal does not answer at all, or no worker would serve the call.
  const probe = async (): Promise<Error | undefined> => {
    if (!(await isReachable()))
      return new TemporalUnavailableError(
        'Temporal does not answer; nothing was half-applied that a retry of the same request would not complete',
      );
    const worker = await workerReadiness();
    return worker.ready ? undefined : new WorkerUnavailableError(worker.reason);
  };
  const call = createTemporalCall(deps.client, temporalWaitMs, { probe });
  // Facts are stored by the server alone, and their store is never cancelled at the fact wait (fact-stores.ts): it
  // runs to the Temporal wait, without a probe, which would cancel a slow store as soon as a slow server answered late.
  const factCall = createTemporalCall(deps.client, temporalWaitMs);
  const cardFetch = deps.fetch ?? createGuardedFetch({ rules: deps.outbound });
  const cards = createCardResolver({ fetch: cardFetch, cacheSeconds: deps.settings.cardCacheSeconds });
  const statistics = createStatisticsService({
    client: deps.client,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    call,
  });
  const ingest = createIngestService({
    client: deps.client,
    taskQueue: deps.taskQueue,
    settings: {
      ...deps.settings,
      maxClockSkew: deps.settings.maxClockSkew ?? DEFAULT_MAX_CLOCK_SKEW,
      factWaitMs,
      temporalWaitMs,
      settle: deps.settings.settle ?? settleIntervalOf(factWaitMs),
    },
    quotas: deps.settings.quotas,
    now: deps.now,
    cards,
    call,
    factCall,
    metrics,
    logger: deps.logger,
    observedNeed: statistics.observedNeed,
  });
  const records = createRecordsService({
    client: deps.client,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    call,
    temporalUiUrl: deps.temporalUiUrl,
    metrics,
    ...(deps.settings.pageTokenSecret ? { pageTokenKey: Buffer.from(deps.settings.pageTokenSecret, 'utf8') } : {}),
  });
  const resends = createLapseResendService({ client: deps.client, call });

  return { metrics, temporalWaitMs, maxInFlight, isReachable, workerReadiness, ingest, records, resends, statistics };
}
type Services = ReturnType<typeof createServices>;

/** The extension's echo, request metrics, no caching of the API, and the bound on requests in flight with their deadline. */
function useCommonMiddleware(app: express.Express, { metrics, temporalWaitMs, maxInFlight }: Services): void {
  // Echo the extension when the request activated it (DESIGN 4), on every answer including problems.
  app.use((req, res, next) => {
    const requested = (req.get('a2a-extensions') ?? '').split(',').map((uri) => uri.trim());
    if (requested.includes(EXTENSION_URI)) res.set('A2A-Extensions', EXTENSION_URI);
    next();
  });

  app.use((req, res, next) => {
    const end = metrics.httpRequestDuration.startTimer({ method: req.method });
    res.on('finish', () => {
      const route = req.route?.path as string | undefined;
      end({ route: route ?? 'unmatched', status: String(res.statusCode) });
    });
    next();
  });

  // A reader's data must not outlive "Forget token" in the browser's cache (nor sit in a shared one): problems included.
  const noStore: RequestHandler = (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  };
  app.use('/a2a', noStore);
  app.use('/v1', noStore);

  // The requests that do work: past the bound, 503 with Retry-After before anything is done; each under one deadline.
  let inFlight = 0;
  const bounded: RequestHandler = (_req, res, next) => {
    if (inFlight >= maxInFlight) {
      throw new BridgeBusyError(
        `the bridge is serving ${inFlight} requests, its bound (WATCHER_MAX_REQUESTS_IN_FLIGHT); nothing was done, send it again after Retry-After`,
      );
    }
    inFlight++;
    metrics.requestsInFlight.set(inFlight);
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      inFlight--;
      metrics.requestsInFlight.set(inFlight);
    };
    res.once('finish', release);
    res.once('close', release);
    withRequestDeadline(temporalWaitMs, next);
  };
  app.use('/a2a', bounded);
  app.use('/v1', bounded);
}

/** Content-Type, then the JSON body within its limit and well formed. */
const json: RequestHandler[] = [
  (req, _res, next) => {
    // `req.is` is null without a body (then the schema says what is missing) and false for another type.
    if (req.is(JSON_TYPES) === false) {
      throw new UnsupportedMediaTypeError(
        `Content-Type must be application/json (or application/a2a+json), not '${req.get('content-type') ?? 'none'}'`,
      );
    }
    next();
  },
  express.json({ limit: BODY_LIMIT, type: JSON_TYPES, strict: false }),
  wellFormedBody,
];

/** Liveness, readiness (Temporal and a worker), metrics and the OpenAPI document. */
function mountProbes(app: express.Express, { metrics, isReachable, workerReadiness }: Services): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', async (_req, res) => {
    if (!(await isReachable())) {
      sendProblem(res, toProblem(new TemporalUnavailableError('Temporal does not answer')));
      return;
    }
    // Reachable is not enough: raises accepted with no worker on the queue would never progress.
    const worker = await workerReadiness();
    if (!worker.ready) {
      sendProblem(res, toProblem(new WorkerUnavailableError(worker.reason)));
      return;
    }
    res.json({ status: 'ready', temporal: 'reachable', worker: worker.worker });
  });

  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.get('/openapi.json', (_req, res) => void res.json(openApiDocument()));
}

/** The API: A2A objects, facts, and the expectations' records, withdrawals and lapse resends. */
function mountApi(
  app: express.Express,
  auth: RequestHandler,
  { ingest, records, resends, statistics }: Services,
): void {
  app.post('/a2a/events', auth, ...json, async (req, res) => {
    const parsed = parseA2AEvent(req.body);
    if (!parsed.success) throw schemaError(parsed.issues);
    const extracted = extractEvent(parsed.data);
    // A push notification carries no A2A-Extensions header: an artifact or message listing the URI activates it.
    if (extracted.activated) res.set('A2A-Extensions', EXTENSION_URI);
    res.json(
      await ingest.ingest(principalOf(req), {
        origin: extracted.origin,
        originPaths: extracted.originPaths,
        expectations: extracted.expectations,
        facts: extracted.facts,
        withdraw: extracted.withdraw,
        schemaErrors: extracted.schemaErrors,
        placementErrors: extracted.placementErrors,
        notApplied: extracted.notApplied,
      }),
    );
  });

  app.post('/v1/facts', auth, ...json, async (req, res) => {
    const query = factsQuerySchema.safeParse(req.query);
    if (!query.success) throw schemaError(query.error.issues);
    const parsed = factsBodySchema.safeParse(req.body);
    if (!parsed.success) throw schemaError(parsed.error.issues);
    const result = await ingest.ingest(principalOf(req), {
      origin: {},
      expectations: [],
      facts: parsed.data.facts.map((value, i) => ({ path: ['facts', i], value })),
      withdraw: [],
      waitForFacts: query.data.wait ?? false,
    });
    res.json({ facts: result.facts });
  });

  app.get('/v1/expectations', auth, async (req, res) => {
    const parsed = listQuerySchema.safeParse(req.query);
    if (!parsed.success) throw schemaError(parsed.error.issues);
    res.json(await records.list(principalOf(req), parsed.data));
  });

  app.get('/v1/statistics', auth, async (req, res) => {
    const parsed = statisticsQuerySchema.safeParse(req.query);
    if (!parsed.success) throw schemaError(parsed.error.issues);
    res.json(await statistics.read(principalOf(req), parsed.data));
  });

  app.get('/v1/expectations/:id', auth, async (req: Request<{ id: string }>, res) => {
    res.json(await records.get(principalOf(req), req.params.id));
  });

  app.post('/v1/expectations/:id/withdraw', auth, ...json, async (req: Request<{ id: string }>, res) => {
    const parsed = withdrawBodySchema.safeParse(req.body);
    if (!parsed.success) throw schemaError(parsed.error.issues);
    res.json(await records.withdraw(principalOf(req), req.params.id, parsed.data.reason));
  });

  // No body: the lapse is named in the path. 202 when a new delivery started, 200 when none was needed.
  const resendPath = '/v1/expectations/:id/lapses/:messageId/resend';
  app.post(resendPath, auth, async (req: Request<{ id: string; messageId: string }>, res) => {
    const parsed = resendParamsSchema.safeParse(req.params);
    if (!parsed.success) throw schemaError(parsed.error.issues);
    const answer = await resends.resend(principalOf(req), req.params.id, parsed.data.messageId);
    res.status(answer.result === 'resent' ? 202 : 200).json(answer);
  });
}

/** Builds the bridge app. */
export function createApp(deps: AppDeps): express.Express {
  const services = createServices(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // Behind a load balancer the socket's peer is the balancer: the client's address is in X-Forwarded-For.
  app.set('trust proxy', deps.trustProxy ?? false);
  useCommonMiddleware(app, services);
  mountProbes(app, services);
  mountApi(app, authenticate(deps.principals), services);
  const { ingest } = services;
  if (deps.codec) {
    const { codec, corsOrigins } = deps.codec;
    app.use(
      CODEC_PATH,
      createCodecRouter({ codec, corsOrigins, namespace: deps.namespace, principals: deps.principals }),
    );
  }

  app.use(createWatcherAgentRouter({ ingest, principals: deps.principals, logger: deps.logger }));
  app.use('/ui', createUiRouter());

  app.use((req) => {
    throw new NotFoundError(`no route ${req.method} ${req.path}`);
  });
  app.use(problemMiddleware(deps.logger));
  return app;
}

function schemaError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): SchemaError {
  const errors = issues.map((issue) => ({ path: joinPath(issue.path), message: issue.message }));
  return new SchemaError(summarise(errors, 'fields are invalid'), errors);
}
