/**
 * Zod schemas of the bridge's own HTTP bodies and query strings (DESIGN 4). The A2A bodies are in a2a.ts, the
 * extension's objects in core/schemas/extension.ts. Items inside `facts` are checked one by one by the service, so
 * that every bad item is reported with its path; here they are only required to be an array. The answers' schemas
 * are here too: the services' result types are inferred from them, and the OpenAPI document (src/http/openapi.ts) is
 * generated from them, so neither can drift from what the routes answer.
 */
import { z } from 'zod';
import { expectationStates, NO_CONTROL_CHARACTER, subjectSchema, utcDateTime } from '../../core/schemas/extension.js';
import { lapseDeliverySchema } from '../../core/schemas/record.js';
import { addDurationParts, matchDuration } from '../../core/duration-math.js';

/** `POST /v1/facts`. */
export const factsBodySchema = z.object({
  facts: z.array(z.unknown()).min(1, { message: 'must carry at least one fact' }),
});

/** How long `POST /v1/facts?wait=true` waits, at most, for the expectations a fact was sent on to. */
export const FACT_TAKEN_WAIT_MS = 5_000;

/** `POST /v1/facts` query string. */
export const factsQuerySchema = z.object({
  wait: z
    .enum(['true', 'false'], { message: 'wait must be true or false' })
    .transform((value) => value === 'true')
    .optional()
    .describe(
      `true: answer once the expectations waiting on each fact have taken it (at most ${FACT_TAKEN_WAIT_MS / 1000} s), ` +
        'listing those the principal may read with their state; `recorded` or `duplicate`, an answer that needs a worker. ' +
        'Without it a fact is answered `accepted` once Temporal has stored it, with no worker',
    ),
});

/** `POST /v1/expectations/{id}/withdraw`. */
export const withdrawBodySchema = z.object({
  reason: z
    .string()
    .trim()
    .min(1, { message: 'reason must not be empty' })
    .max(1000, { message: 'reason must be at most 1000 characters' }),
});

/** The `{id}` of `/v1/expectations/{id}` (Express matches one non-empty path segment, percent-decoded). */
export const expectationParamsSchema = z.object({
  id: z.string().min(1).describe('The expectationId, percent-encoded as one path segment'),
});

/** A filter value: once, not empty, and with no control character (no id, key or kind holds one, DESIGN 2). */
const single = (name: string) =>
  z
    .string({ message: `${name} must be given once, as a string` })
    .min(1, { message: `${name} must not be empty` })
    .regex(NO_CONTROL_CHARACTER, { message: `${name} must not contain control characters (U+0000 to U+001F, U+007F)` });

/** An instant in a query string: RFC 3339 with `Z` or an offset (the list compares it as an instant). */
const instant = (name: string) =>
  z.iso.datetime({ offset: true, message: `${name} must be an RFC 3339 date-time, e.g. 2026-12-01T00:00:00Z` });

/** `GET /v1/expectations` query string. */
export const listQuerySchema = z
  .object({
    subjectType: single('subjectType')
      .optional()
      .describe('Subject type, matched exactly (`/` included); alone it lists every subject of that type'),
    subjectId: single('subjectId').optional().describe('Subject id; needs subjectType (400 otherwise)'),
    state: z
      .enum(expectationStates, { message: `state must be one of ${expectationStates.join(', ')}` })
      .optional()
      .describe('The expectation state'),
    kind: single('kind').optional().describe('The kind'),
    agent: single('agent')
      .optional()
      .describe('The agent that raised it (its principal id); an agent may name only itself'),
    dueAfter: instant('dueAfter')
      .optional()
      .describe('Only expectations whose current dueAt is at or after this instant (RFC 3339)'),
    dueBefore: instant('dueBefore')
      .optional()
      .describe('Only expectations whose current dueAt is before this instant (RFC 3339); later than dueAfter'),
    late: z
      .enum(['true', 'false'], { message: 'late must be true or false' })
      .transform((value) => value === 'true')
      .optional()
      .describe('true: satisfied by a late fact; false: satisfied on time (neither lists an unsatisfied one)'),
    pageSize: z.coerce
      .number({ message: 'pageSize must be a number' })
      .int({ message: 'pageSize must be an integer' })
      .min(1, { message: 'pageSize must be at least 1' })
      .max(1000, { message: 'pageSize must be at most 1000' })
      .default(100)
      .describe('Items per page'),
    pageToken: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, { message: 'pageToken must be a token from a previous answer (base64url)' })
      .optional()
      .describe('nextPageToken of the previous page, with the same filters'),
  })
  .refine((q) => q.subjectId === undefined || q.subjectType !== undefined, {
    message: 'subjectId needs subjectType',
    path: ['subjectId'],
  })
  .refine((q) => !q.dueAfter || !q.dueBefore || Date.parse(q.dueAfter) < Date.parse(q.dueBefore), {
    message: 'dueBefore must be later than dueAfter',
    path: ['dueBefore'],
    // Only two instants that parsed are compared: a bad one has its own error.
    when: ({ issues }) => !issues.some((issue) => issue.path?.[0] === 'dueAfter' || issue.path?.[0] === 'dueBefore'),
  });
export type ListQueryInput = z.infer<typeof listQuerySchema>;

/** The statistics' window bounds, in milliseconds (a month counts as 31 days here). */
const WINDOW_MS = { min: 60_000, max: 92 * 86_400_000 };

/** `GET /v1/statistics` query string. */
export const statisticsQuerySchema = z.object({
  kind: single('kind').optional().describe('Only this kind'),
  agent: single('agent')
    .optional()
    .describe("Only this agent's expectations (its principal id); an agent may name only itself"),
  window: z
    .string()
    .refine((value) => matchDuration(value) !== undefined, {
      message: 'window must be an ISO 8601 duration, e.g. P7D or PT6H',
      abort: true,
    })
    .refine(
      (value) => {
        const span = addDurationParts(0, matchDuration(value)!);
        return span >= WINDOW_MS.min && span <= WINDOW_MS.max;
      },
      { message: 'window must be between PT1M and P90D' },
    )
    .default('P7D')
    .describe('The expectations raised this long before now (ISO 8601 duration, PT1M to P90D)'),
});

// ── answers ────────────────────────────────────────────────────────────────────────────────────────────────

/** One bad field (or a warning): a slash-separated path into the request body, segments escaped as in RFC 6901. */
export const fieldErrorSchema = z.object({
  path: z.string(),
  message: z.string(),
  /** For broken rules (422): the rule's name, e.g. `kind-declared`. */
  rule: z.string().optional(),
  /** For a bound exceeded (413 `too-many-items`, 422 `max-length`/`max-items`): the bound. */
  limit: z.number().int().optional(),
});

/** An `application/problem+json` body (RFC 9457); `errors` names each bad field. */
export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  errors: z.array(fieldErrorSchema).optional(),
  /** For 429 `quota-exceeded`: which per-principal quota, its limit, and the `Retry-After` seconds. */
  quota: z
    .object({
      name: z.enum(['open-expectations', 'raises-per-minute', 'facts-per-minute', 'statistics-per-minute']),
      limit: z.number().int(),
      retryAfterSeconds: z.number().int(),
    })
    .optional(),
});

export const expectationResultSchema = z.object({
  expectationId: z.string(),
  result: z.enum(['raised', 'unchanged']),
  /**
   * Raised, but worth a look: `observed-due` when the kind's basis is `observed` and dueAt comes sooner after the
   * raise than nine in ten of the agent's recent expectations of the kind needed (GET /v1/statistics). Never a refusal.
   */
  warnings: z.array(fieldErrorSchema).optional(),
});

/** An expectation after it took a fact, as `POST /v1/facts?wait=true` lists it. */
export const factTakenSchema = z.object({
  expectationId: z.string(),
  state: z.enum(expectationStates),
  satisfiedAt: utcDateTime.optional(),
  late: z.boolean().optional(),
});

export const factResultSchema = z.object({
  factKey: z.string(),
  /**
   * `accepted`: Temporal stored the fact; it is routed, deduplicated and counted from its reception (DESIGN 3.2), and
   * no worker was needed to answer. With `wait=true`, what it did: `recorded` (new) or `duplicate` (a re-delivery).
   */
  result: z.enum(['accepted', 'recorded', 'duplicate']),
  /**
   * With `wait=true`, for a fact recorded now: the expectations that waited on its key and took it within the wait,
   * those the principal may read (reader, admin, or the agent that raised them), with the state it left them in.
   */
  expectations: z.array(factTakenSchema).optional(),
  /** With `wait=true`: how many expectations waited on the key (those listed, those not readable, those late to answer). */
  awaitedBy: z.number().int().optional(),
});

/** The answer of `POST /v1/expectations/{id}/withdraw`, and one item of `withdrawn`. */
export const withdrawResultSchema = z.object({
  expectationId: z.string(),
  result: z.enum(['withdrawn', 'not-open']),
});

/** The answer of `POST /a2a/events` (and the receipt of a SendMessage): one result per item, in the order found. */
export const ingestResultSchema = z.object({
  expectations: z.array(expectationResultSchema),
  facts: z.array(factResultSchema),
  withdrawn: z.array(withdrawResultSchema),
  /** Accepted, but worth a look (e.g. subject.type differs from the kind's subjectType). Absent when none. */
  warnings: z.array(fieldErrorSchema).optional(),
});

/** The answer of `POST /v1/facts`. */
export const factsResultSchema = z.object({ facts: z.array(factResultSchema) });

/** One expectation as the visibility store knows it (eventually consistent; the record is the truth). */
export const expectationSummarySchema = z.object({
  expectationId: z.string(),
  workflowId: z.string(),
  kind: z.string().optional(),
  subject: subjectSchema.optional(),
  state: z.string().optional(),
  agent: z.string().optional(),
  factKey: z.string().optional(),
  dueAt: utcDateTime.optional(),
  /** Set once satisfied (the record's `late`); absent on expectations satisfied before the watcher recorded it. */
  late: z.boolean().optional(),
  raisedAt: utcDateTime.optional(),
  closedAt: utcDateTime.optional(),
  links: z.object({ self: z.string(), temporalUi: z.string().optional() }),
});

/** The answer of `GET /v1/expectations`; `nextPageToken` is absent on the last page. */
export const expectationPageSchema = z.object({
  items: z.array(expectationSummarySchema),
  nextPageToken: z.string().optional(),
});

/** A distribution in seconds (nearest-rank percentiles); only `count` when there is none. */
const secondsDistributionSchema = z.object({
  count: z.number().int(),
  p10: z.number().optional(),
  p50: z.number().optional(),
  p90: z.number().optional(),
  p99: z.number().optional(),
});

/**
 * The answer of `GET /v1/statistics`: per kind and agent, the expectations raised in the window by how they stand
 * (a lapsed one satisfied late counts as satisfiedLate), and for the satisfied ones the time from the raise to the
 * satisfying fact's observedAt and that observedAt against dueAt (negative: early). `truncated` when more than the
 * bound (5,000) were raised in the window: the figures are of the latest ones.
 */
export const statisticsSchema = z.object({
  window: z.string(),
  since: utcDateTime,
  until: utcDateTime,
  truncated: z.boolean(),
  items: z.array(
    z.object({
      kind: z.string(),
      agent: z.string(),
      raised: z.number().int(),
      open: z.number().int(),
      satisfiedOnTime: z.number().int(),
      satisfiedLate: z.number().int(),
      withdrawn: z.number().int(),
      lapsed: z.object({ overdue: z.number().int(), skipped: z.number().int(), stalled: z.number().int() }),
      timeToSatisfySeconds: secondsDistributionSchema,
      satisfiedRelativeToDueSeconds: secondsDistributionSchema,
    }),
  ),
});

/** `GET /healthz`. */
export const healthSchema = z.object({ status: z.literal('ok') });

/**
 * `GET /readyz` when Temporal answers and a worker takes the work: `running`, the worker of the bridge's own process;
 * `polling`, Temporal saw a worker poll the workflow task queue lately.
 */
export const readinessSchema = z.object({
  status: z.literal('ready'),
  temporal: z.literal('reachable'),
  worker: z.enum(['running', 'polling']),
});

/** `POST /v1/expectations/{id}/lapses/{messageId}/resend`: the lapse by its delivery's messageId (a UUID). */
export const resendParamsSchema = z.object({
  messageId: z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, {
    message: "messageId must be a lapse's delivery.messageId from its record (a UUID)",
  }),
});

/**
 * The answer of `POST /v1/expectations/{id}/lapses/{messageId}/resend`: `resent` when a new delivery started (202; it
 * is `pending` in `delivery`), `pending` or `delivered` when nothing was sent because one is on its way or the agent
 * has the task (200). `lapseTaskId` once the agent answered with a task.
 */
export const resendResultSchema = z.object({
  expectationId: z.string(),
  result: z.enum(['resent', 'pending', 'delivered']),
  delivery: lapseDeliverySchema,
  lapseTaskId: z.string().optional(),
});
