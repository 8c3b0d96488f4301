/**
 * The only reader of `process.env` (DESIGN 5). Every setting is validated once, with an error naming the variable.
 */
import { DEFAULT_ROUTER_TASKS_PER_SECOND } from './temporal/router-pacing.js';
import { isIP } from 'node:net';
import path from 'node:path';
import v8 from 'node:v8';
import { z } from 'zod';
import { DEFAULT_CARD_CACHE_SECONDS } from '../activities/agent-card/card.js';
import { ConfigError } from './config-error.js';
import {
  NAMED_RANGES,
  parseRangeList,
  type AddressRange,
  type OutboundRules,
} from '../activities/outbound/address-policy.js';
import { addDuration } from '../core/duration.js';
import { isoDuration } from '../core/schemas/extension.js';
import { resolveConnectionSettings, type TemporalConnectionConfig } from './temporal/connection-settings.js';

export { ConfigError };
export type { TemporalConnectionConfig };

/** How far in the future a fact's `observedAt` may be unless WATCHER_MAX_CLOCK_SKEW says otherwise (DESIGN 3.2). */
export const DEFAULT_MAX_CLOCK_SKEW = 'PT5M';

/** The per-principal quotas unless WATCHER_QUOTA_* say otherwise (src/service/quotas.ts); 0 turns one off. */
export const DEFAULT_QUOTAS = { openExpectations: 10_000, raisesPerMinute: 600, factsPerMinute: 6_000 } as const;

const quota = (fallback: number) => z.coerce.number().int().min(0).default(fallback);

/**
 * Express's `trust proxy` (https://expressjs.com/en/guide/behind-proxies.html): whom to believe about the client's
 * address in X-Forwarded-For. `false` believes nobody (the socket's peer is the client), `true` everyone, a number
 * that many hops, a list the proxies' addresses, CIDR ranges or `loopback`, `linklocal`, `uniquelocal`.
 */
export type TrustProxy = boolean | number | string[];

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address or CIDR range in a `trust proxy` list: `10.0.0.1`, `10.0.0.0/8`, `10.0.0.0/255.0.0.0`, `fd00::/8`. */
function isProxyAddress(entry: string): boolean {
  const [address = '', range, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (family === 4 && isIP(range) === 4) {
    // A netmask: ones, then zeros (255.255.0.0), as Express's proxy-addr requires.
    const bits = range.split('.').reduce((mask, octet) => mask * 256 + Number(octet), 0);
    const zeros = 2 ** 32 - 1 - bits;
    return (zeros & (zeros + 1)) === 0;
  }
  return /^\d{1,3}$/.test(range) && Number(range) <= (family === 4 ? 32 : 128);
}

/** WATCHER_TRUST_PROXY as Express takes it: `true`/`false`, a hop count, or a comma-separated list. */
const trustProxy = z.string().transform((value, ctx): TrustProxy => {
  const text = value.trim();
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^\d+$/.test(text)) return Number(text);
  const entries = text.split(',').map((entry) => entry.trim());
  const bad = entries.filter((entry) => !PROXY_NAMES.has(entry) && !isProxyAddress(entry));
  if (bad.length > 0) {
    const allowed =
      'true, false, a hop count, or a comma-separated list of loopback, linklocal, uniquelocal, addresses and CIDR ranges';
    ctx.addIssue({
      code: 'custom',
      message: `must be ${allowed} (not ${bad.map((entry) => `'${entry}'`).join(', ')})`,
    });
    return z.NEVER;
  }
  return entries;
});

/** WATCHER_OUTBOUND_ALLOW / _DENY: addresses and CIDR ranges (each with one port or none) and named groups; or `none`. */
const addressRanges = z.string().transform((value, ctx): AddressRange[] => {
  const parsed = parseRangeList(value);
  if ('ranges' in parsed) return parsed.ranges;
  const names = Object.keys(NAMED_RANGES).join(', ');
  const allowed = `a comma-separated list of IPv4/IPv6 addresses, CIDR ranges (10.0.0.0/8, fd00::/8), either with one port (10.1.0.5:8443, [fd00::/8]:8443), and ${names}; or none`;
  ctx.addIssue({
    code: 'custom',
    message: `must be ${allowed} (not ${parsed.bad.map((entry) => `'${entry}'`).join(', ')})`,
  });
  return z.NEVER;
});

/**
 * WATCHER_CODEC_CORS_ORIGINS: the browser origins (the Temporal UI's, `scheme://host[:port]`) that may call the codec
 * endpoint, comma-separated. No `*`: the UI sends its credentials, which a wildcard origin cannot carry.
 */
const corsOrigins = z.string().transform((value, ctx): string[] => {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const origins: string[] = [];
  for (const entry of entries) {
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === entry.replace(/\/$/, ''))
        origin = url.origin;
    } catch {
      // not a URL: reported below
    }
    if (!origin) {
      ctx.addIssue({
        code: 'custom',
        message: `'${entry}' is not an origin (scheme://host[:port], e.g. http://localhost:8080)`,
      });
      return z.NEVER;
    }
    origins.push(origin);
  }
  return origins;
});

const envSchema = z.object({
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  // These and the other TEMPORAL_* connection variables are applied over the profile by @temporalio/envconfig
  // (src/temporal/connection-settings.ts, which also reads TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE).
  TEMPORAL_NAMESPACE: z.string().min(1).optional(),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('expectations'),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  TEMPORAL_TLS: z.enum(['true', 'false', '1', '0']).optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: z.string().optional(),
  TEMPORAL_TLS_CLIENT_KEY_PATH: z.string().optional(),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: z.string().optional(),
  TEMPORAL_UI_URL: z.string().url().optional(),
  WATCHER_EMBEDDED_TEMPORAL_PORT: z.coerce.number().int().min(1).max(64535).default(7233),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  WATCHER_LISTEN_HOST: z
    .string()
    .refine((value) => isIP(value) !== 0, {
      message: "must be an IP address to listen on: 127.0.0.1, 0.0.0.0, ::, or one interface's address",
    })
    .optional(),
  WATCHER_DATA_DIR: z.string().min(1).default('.data'),
  WATCHER_PRINCIPALS_FILE: z.string().min(1).optional(),
  WATCHER_FACT_RETENTION: isoDuration.default('P7D'),
  WATCHER_LATE_WINDOW: isoDuration.default('P30D'),
  WATCHER_MAX_LINEAGE: z.coerce.number().int().min(0).default(10),
  WATCHER_MAX_CLOCK_SKEW: isoDuration.default(DEFAULT_MAX_CLOCK_SKEW),
  WATCHER_CARD_CACHE_SECONDS: z.coerce.number().int().min(0).default(DEFAULT_CARD_CACHE_SECONDS),
  WATCHER_TEMPORAL_WAIT: isoDuration.default('PT30S').refine((value) => {
    const ms = addDuration(0, value);
    return ms >= 1_000 && ms <= 600_000;
  }, 'must be between PT1S and PT10M (how long a request waits for a slow Temporal)'),
  WATCHER_FACT_WAIT: isoDuration.default('PT2S').refine((value) => {
    const ms = addDuration(0, value);
    return ms >= 500 && ms <= 60_000;
  }, 'must be between PT0.5S and PT1M (how long a fact may take to be stored; the workflows settle a deadline as long and a second)'),
  WATCHER_MAX_REQUESTS_IN_FLIGHT: z.coerce.number().int().min(1).default(256),
  WATCHER_PAGE_TOKEN_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters (it signs the list page tokens)')
    .optional(),
  WATCHER_TRUST_PROXY: trustProxy.default(false),
  WATCHER_QUOTA_OPEN_EXPECTATIONS: quota(DEFAULT_QUOTAS.openExpectations),
  WATCHER_QUOTA_RAISES_PER_MINUTE: quota(DEFAULT_QUOTAS.raisesPerMinute),
  WATCHER_QUOTA_FACTS_PER_MINUTE: quota(DEFAULT_QUOTAS.factsPerMinute),
  WATCHER_OUTBOUND_ALLOW: addressRanges.optional(),
  WATCHER_OUTBOUND_DENY: addressRanges.optional(),
  WATCHER_WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  WATCHER_WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).optional(),
  WATCHER_ROUTER_TASKS_PER_SECOND: z.coerce.number().min(1).max(10_000).default(DEFAULT_ROUTER_TASKS_PER_SECOND),
  WATCHER_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  WATCHER_CODEC_KEYS_FILE: z.string().min(1).optional(),
  WATCHER_CODEC_CORS_ORIGINS: corsOrigins.optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  WATCHER_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WATCHER_LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
});

/**
 * The variables the schema reads (the connection variables besides: CONNECTION_VARIABLES of
 * src/temporal/connection-settings.ts). The chart's test holds every variable deploy/helm sets to these.
 */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

export interface Config {
  temporal: TemporalConnectionConfig;
  port: number;
  dataDir: string;
  principalsFile?: string;
  factRetention: string;
  lateWindow: string;
  maxLineage: number;
  /** How far in the future a fact's `observedAt` may be (ISO 8601 duration); beyond it the fact is refused (422). */
  maxClockSkew: string;
  /** How long an agent's card is reused, by the bridge (raise rules) and the worker (lapse delivery) alike. */
  cardCacheSeconds: number;
  /** How long a request waits for a slow Temporal before it is answered 503 (ms). */
  temporalWaitMs: number;
  /**
   * How long a request's facts may take to be stored before it is answered 503 (ms), and so how long, plus a second, an
   * expectation settles a deadline before it lapses (DESIGN 3.2, 3.3).
   */
  factWaitMs: number;
  /** Requests the bridge serves at once; one past it is answered 503 with Retry-After before any work. */
  maxRequestsInFlight: number;
  /** Signs list page tokens; the same on every bridge of a deployment. Unset: a random key per process. */
  pageTokenSecret?: string;
  /** Whose X-Forwarded-For the bridge believes for the client's address (its request log, rate decisions). */
  trustProxy: TrustProxy;
  /** Per-principal quotas of the bridge (429 with Retry-After past one); 0 turns one off. */
  quotas: { openExpectations: number; raisesPerMinute: number; factsPerMinute: number };
  /**
   * Where the bridge and the worker may connect to read cards and deliver lapses (activities/outbound/address-policy.ts).
   * Non-public ranges are denied unless WATCHER_OUTBOUND_ALLOW names them; its default is `loopback` when the watcher
   * runs Temporal itself (TEMPORAL_ADDRESS unset: `npm start`'s dev server, a development machine whose agents run
   * on it too) and nothing otherwise (any deployment on an existing cluster).
   */
  outbound: OutboundRules;
  /**
   * The interface the bridge and the worker's metrics endpoint listen on (WATCHER_LISTEN_HOST, an IP address); absent,
   * all of them, as a container needs.
   */
  listenHost?: string;
  /**
   * The worker's Prometheus endpoint (Temporal SDK metrics and lapse counters): port 9464 unless set; 0 serves none.
   * `required` when the variable was set: then a port that cannot be bound stops the process instead of a warning.
   */
  workerMetrics: { port: number; required: boolean };
  /** OpenTelemetry tracing to an OTLP/HTTP collector; absent (off) unless OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing?: { endpoint: string; serviceName?: string };
  /**
   * Workflows the worker keeps in memory between tasks. Expectations sleep for months, so a small cache costs a short
   * replay per fact or lapse and keeps memory flat however many are open (the SDK's default grows with the heap).
   */
  maxCachedWorkflows: number;
  /** Router tasks the worker begins a second, at most (src/temporal/router-pacing.ts). */
  routerTasksPerSecond: number;
  /**
   * A workflow bundle written by `npm run bundle` (the image's, built with it): the worker loads it instead of
   * bundling workflows/ at start. Absolute; unset bundles at start.
   */
  workflowBundle?: string;
  /**
   * Payload encryption (docs/operations.md, "Encrypting payloads"): the key file (absolute) both the bridge's client
   * and the worker seal payloads with, and the browser origins allowed to call the bridge's codec endpoint. Absent:
   * payloads are written as they are and the bridge serves no codec endpoint.
   */
  codec?: { keysFile: string; corsOrigins: string[] };
  logLevel: z.infer<typeof envSchema>['WATCHER_LOG_LEVEL'];
  /** `auto`: short readable lines when stdout is a terminal, JSON lines otherwise. */
  logFormat: z.infer<typeof envSchema>['WATCHER_LOG_FORMAT'];
}

/** The cache's default: at most 500 workflows. */
const MAX_DEFAULT_CACHED_WORKFLOWS = 500;

/** The heap limit of this process (old space and young generation), in MiB: what the cache is sized from. */
export function heapLimitMiB(): number {
  return v8.getHeapStatistics().heap_size_limit / 2 ** 20;
}

/** The worker's cache by default for a heap of `heapMiB`: the SDK's rule, at most 500 (BENCHMARKS.md). */
export function defaultMaxCachedWorkflows(heapMiB: number): number {
  return Math.min(MAX_DEFAULT_CACHED_WORKFLOWS, Math.max(10, Math.floor(((heapMiB - 200) * 600) / 1024)));
}

/**
 * Reads and validates the configuration from an environment (by default `process.env`). An empty variable counts as
 * unset: docker-compose.yml passes every setting through as `${NAME:-}`, which is empty when the host has none.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== '')));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.WATCHER_CODEC_CORS_ORIGINS && !e.WATCHER_CODEC_KEYS_FILE) {
    throw new ConfigError(
      'invalid configuration:\n  WATCHER_CODEC_CORS_ORIGINS: set, but without WATCHER_CODEC_KEYS_FILE there is no codec endpoint to call',
    );
  }
  const connection = resolveConnectionSettings(env);
  return {
    temporal: {
      ...connection,
      namespace: connection.namespace ?? 'default',
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      uiUrl: e.TEMPORAL_UI_URL,
      embeddedPort: e.WATCHER_EMBEDDED_TEMPORAL_PORT,
    },
    port: e.PORT,
    listenHost: e.WATCHER_LISTEN_HOST,
    dataDir: path.resolve(e.WATCHER_DATA_DIR),
    principalsFile: e.WATCHER_PRINCIPALS_FILE,
    factRetention: e.WATCHER_FACT_RETENTION,
    lateWindow: e.WATCHER_LATE_WINDOW,
    maxLineage: e.WATCHER_MAX_LINEAGE,
    maxClockSkew: e.WATCHER_MAX_CLOCK_SKEW,
    cardCacheSeconds: e.WATCHER_CARD_CACHE_SECONDS,
    temporalWaitMs: addDuration(0, e.WATCHER_TEMPORAL_WAIT),
    factWaitMs: addDuration(0, e.WATCHER_FACT_WAIT),
    maxRequestsInFlight: e.WATCHER_MAX_REQUESTS_IN_FLIGHT,
    pageTokenSecret: e.WATCHER_PAGE_TOKEN_SECRET,
    trustProxy: e.WATCHER_TRUST_PROXY,
    quotas: {
      openExpectations: e.WATCHER_QUOTA_OPEN_EXPECTATIONS,
      raisesPerMinute: e.WATCHER_QUOTA_RAISES_PER_MINUTE,
      factsPerMinute: e.WATCHER_QUOTA_FACTS_PER_MINUTE,
    },
    outbound: {
      allow: e.WATCHER_OUTBOUND_ALLOW ?? (e.TEMPORAL_ADDRESS ? [] : [...NAMED_RANGES.loopback!]),
      deny: e.WATCHER_OUTBOUND_DENY ?? [],
    },
    workerMetrics: {
      port: e.WATCHER_WORKER_METRICS_PORT ?? 9464,
      required: e.WATCHER_WORKER_METRICS_PORT !== undefined,
    },
    tracing: e.OTEL_EXPORTER_OTLP_ENDPOINT
      ? { endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT, serviceName: e.OTEL_SERVICE_NAME }
      : undefined,
    maxCachedWorkflows: e.WATCHER_WORKER_MAX_CACHED_WORKFLOWS ?? defaultMaxCachedWorkflows(heapLimitMiB()),
    routerTasksPerSecond: e.WATCHER_ROUTER_TASKS_PER_SECOND,
    workflowBundle: e.WATCHER_WORKFLOW_BUNDLE ? path.resolve(e.WATCHER_WORKFLOW_BUNDLE) : undefined,
    codec: e.WATCHER_CODEC_KEYS_FILE
      ? { keysFile: path.resolve(e.WATCHER_CODEC_KEYS_FILE), corsOrigins: e.WATCHER_CODEC_CORS_ORIGINS ?? [] }
      : undefined,
    logLevel: e.WATCHER_LOG_LEVEL,
    logFormat: e.WATCHER_LOG_FORMAT,
  };
}
