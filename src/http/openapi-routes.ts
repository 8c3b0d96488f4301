/**
 * The bridge's routes as the OpenAPI document describes them (src/http/openapi.ts builds it from this table): for
 * each operation its roles, the zod schemas its request is parsed with and its answers are typed by, and every status
 * it can answer. test/e2e/openapi.test.ts holds the table to the app: every route the app mounts is here and nothing
 * else, and every status listed is one a real request gets.
 */
import { z } from 'zod';
import { AGENT_CARD_PATH, AGENT_JSONRPC_PATH } from '../a2a/agent-endpoint.js';
import type { Role } from '../auth/principals.js';
import { eventV03Schema, streamResponseV1Schema } from '../schemas/a2a.js';
import {
  expectationParamsSchema,
  expectationPageSchema,
  factsBodySchema,
  FACT_TAKEN_WAIT_MS,
  factsQuerySchema,
  factsResultSchema,
  healthSchema,
  ingestResultSchema,
  listQuerySchema,
  readinessSchema,
  resendParamsSchema,
  resendResultSchema,
  statisticsQuerySchema,
  statisticsSchema,
  withdrawBodySchema,
  withdrawResultSchema,
} from '../schemas/http.js';
import { openExpectationRecordSchema } from '../../core/schemas/record.js';
import { COMPUTATIONS_PER_MINUTE, MAX_COMPUTATIONS } from '../service/statistics-cache.js';

/**
 * `POST /a2a/events` takes either version of an A2A object (parseA2AEvent dispatches on `kind` by hand, so that issue
 * paths stay exact; this union says the same).
 */
export const a2aEventSchema = z.union([streamResponseV1Schema, eventV03Schema]);

/** The A2A objects the SDK answers on the A2A routes; only what a client needs to find its way is described. */
export const agentCardSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  version: z.string(),
  supportedInterfaces: z.array(z.looseObject({ url: z.string(), protocolBinding: z.string() })),
  capabilities: z.looseObject({}),
  skills: z.array(z.looseObject({ id: z.string(), name: z.string() })),
});

const jsonRpcId = z.union([z.string(), z.number(), z.null()]);

export const jsonRpcRequestSchema = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: jsonRpcId.optional(),
  method: z.string(),
  params: z.unknown().optional(),
});

export const jsonRpcResponseSchema = z.looseObject({
  jsonrpc: z.literal('2.0'),
  id: jsonRpcId,
  result: z.unknown().optional(),
  error: z.looseObject({ code: z.number().int(), message: z.string() }).optional(),
});

/** What `/openapi.json` answers: this document (its structure is OpenAPI 3.1's). */
export const openApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.looseObject({})),
});

/** A 2xx/3xx answer: its media type and the schema of its body (none for a 304). */
export interface SuccessSpec {
  description: string;
  mediaType?: string;
  schema?: z.ZodType;
  headers?: Record<string, string>;
}

/** An answer per status; a string is a problem+json answer, saying when it is given. */
export type ResponseSpec = SuccessSpec | string;

export interface OperationSpec {
  method: 'get' | 'post';
  /** The OpenAPI path template, e.g. `/v1/expectations/{id}`. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  /** The roles that let a principal call it, each with what it may do (empty: no condition). Absent: no token. */
  roles?: Partial<Record<Role, string>>;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** `problems`: what the route answers before its own rules are read (bad JSON, too large, not JSON). */
  body?: { schema: z.ZodType; mediaTypes: readonly string[]; description: string; problems?: Record<number, string> };
  responses: Record<number, ResponseSpec>;
}

/** What `/a2a/events`, `/v1/facts` and withdraw accept (app.ts: any `application/*+json` too). */
const JSON_BODY = ['application/json', 'application/a2a+json'] as const;
const json = (schema: z.ZodType, description: string): SuccessSpec => ({
  description,
  mediaType: 'application/json',
  schema,
});

// The problems every JSON body route can answer before its own rules are read.
const bodyProblems = {
  400: 'the body is not valid JSON, or a field does not match its schema (`errors` names each)',
  401: 'no Authorization header, not `Bearer <token>`, or a token that names no principal',
  413: 'the body is over 1 MiB',
  415: 'the body is not JSON (`Content-Type` other than application/json, application/a2a+json, application/*+json)',
} as const;
const unauthenticated = bodyProblems[401];
const jsonBody = (schema: z.ZodType, description: string) => ({
  schema,
  mediaTypes: JSON_BODY,
  description,
  problems: bodyProblems,
});
const temporalDown =
  'Temporal did not answer in time, or is overloaded (`temporal-busy`); nothing is half-applied that the same request sent again would not complete';
const tooManyItems =
  'the body is over 1 MiB, or carries more items than one request may (`too-many-items`, docs/api.md "Bounds and quotas")';
const quotaExceeded =
  'a per-principal quota is used up (`quota` names it); `Retry-After` says when the same request fits again';

export const operations: readonly OperationSpec[] = [
  {
    method: 'post',
    path: '/a2a/events',
    operationId: 'ingestA2AEvent',
    tag: 'Ingress',
    summary: 'Take one A2A object: raise, report and withdraw what its metadata carries',
    description:
      "One A2A object as a push notification (point the task's push-notification config here) or as the agent " +
      'delivers it: v1.0 ProtoJSON `{task}`, `{message}`, `{statusUpdate}` or `{artifactUpdate}`, or a v0.3 object ' +
      'with `kind`. Expectations, facts and withdraw lists are read from `metadata["https://rsaxb.com/a2a/expectations/v1"]` ' +
      '(an ExtensionPayload) of its artifacts and messages; every item is validated before any is applied.',
    roles: { agent: 'expectations, facts, withdraw (its own expectations)', reporter: 'facts only (403 otherwise)' },
    body: jsonBody(a2aEventSchema, 'One A2A object'),
    responses: {
      200: json(ingestResultSchema, 'One result per item, in the order found'),
      413: tooManyItems,
      403: "the role does not allow it, a reporter carries expectations or withdraw lists, or an item names another agent's expectation",
      409: 'an expectation id raised before with other content, or by another agent',
      422: 'a rule of the extension is broken, or a field is over its bound (each error names its `rule`)',
      429: quotaExceeded,
      502: "the raising agent's card could not be fetched or read; nothing was started",
      503: temporalDown,
    },
  },
  {
    method: 'post',
    path: '/v1/facts',
    operationId: 'reportFacts',
    tag: 'Ingress',
    summary: 'Report facts from a feed that does not speak A2A',
    description:
      'Each fact is recorded with `source` = the principal; a different `source` in the payload is kept as `claimedSource`. ' +
      'A fact is answered `accepted` once Temporal has stored it (no worker needed): it counts from when the bridge received it, ' +
      'provided it was stored within WATCHER_FACT_WAIT; otherwise the request is answered 503 and the fact counts from the retry. ' +
      `With \`wait=true\` the answer waits (at most ${FACT_TAKEN_WAIT_MS / 1000} s) until the expectations waiting on each new fact have taken it, and ` +
      'lists under `expectations` those the principal may read, with the state the fact left them in; `awaitedBy` counts all of them.',
    roles: { agent: '', reporter: '' },
    query: factsQuerySchema,
    body: jsonBody(factsBodySchema, 'At least one fact'),
    responses: {
      200: json(factsResultSchema, 'One result per fact, in order'),
      413: tooManyItems,
      403: 'the principal is neither agent nor reporter',
      422: "an observedAt is more than WATCHER_MAX_CLOCK_SKEW ahead of the watcher's clock, or a field is over its bound; no fact is recorded",
      429: quotaExceeded,
      503: temporalDown,
    },
  },
  {
    method: 'get',
    path: '/v1/expectations',
    operationId: 'listExpectations',
    tag: 'Expectations',
    summary: 'A page of expectation summaries from the visibility store',
    description:
      'Search attributes; eventually consistent (a just-raised expectation may take a moment to appear). Each parameter may be given once.',
    roles: { agent: 'only the expectations it raised', reader: '', admin: '' },
    query: listQuerySchema,
    responses: {
      200: json(expectationPageSchema, 'One page; `nextPageToken` is absent on the last'),
      400: 'a parameter does not match its schema, subjectId without subjectType, or a pageToken not from this list',
      401: unauthenticated,
      403: 'the principal is neither reader, admin nor agent',
      503: temporalDown,
    },
  },
  {
    method: 'get',
    path: '/v1/statistics',
    operationId: 'getStatistics',
    tag: 'Expectations',
    summary: 'What each kind actually does: outcomes and times over a window',
    description:
      'Per kind and agent, the expectations raised in the window: how many are open, satisfied on time or late, ' +
      'withdrawn, lapsed by type, and the p10/p50/p90/p99 of raise to satisfaction and of satisfaction against dueAt. ' +
      'Read from the visibility store (no worker, no billable action), eventually consistent, reused for 30 s for the ' +
      'same filters (a window compared as a span: PT1H and PT60M are one). A principal starts at most ' +
      `${COMPUTATIONS_PER_MINUTE} computations a minute, and the bridge runs at most ${MAX_COMPUTATIONS} at once.`,
    roles: { agent: 'its own figures only (`agent` naming another: 403)', reader: '', admin: '' },
    query: statisticsQuerySchema,
    responses: {
      200: json(statisticsSchema, 'One item per kind and agent, sorted by kind'),
      400: 'a parameter does not match its schema (window not an ISO 8601 duration from PT1M to P90D)',
      401: unauthenticated,
      403: 'the principal is neither reader, admin nor agent, or an agent names another agent',
      429: `the principal started its ${COMPUTATIONS_PER_MINUTE} statistics computations of the last minute (\`quota\` names \`statistics-per-minute\`)`,
      503: `${temporalDown}; or the bridge computes its ${MAX_COMPUTATIONS} statistics at once (\`bridge-busy\`)`,
    },
  },
  {
    method: 'get',
    path: '/v1/expectations/{id}',
    operationId: 'getExpectation',
    tag: 'Expectations',
    summary: 'The ExpectationRecord',
    description:
      "From the workflow's memo (DescribeWorkflowExecution) while it runs, its result once closed: no worker answers it.",
    roles: { agent: "the expectations it raised (another agent's: 403)", reader: '', admin: '' },
    params: expectationParamsSchema,
    responses: {
      200: json(
        openExpectationRecordSchema,
        'The record (each `lapse` an open set: a known value, or one a later watcher adds)',
      ),
      400: 'the id is not valid percent-encoding',
      401: unauthenticated,
      403: "the principal may not read expectations, or it is another agent's",
      404: 'no expectation has this id',
      503: temporalDown,
    },
  },
  {
    method: 'post',
    path: '/v1/expectations/{id}/withdraw',
    operationId: 'withdrawExpectation',
    tag: 'Expectations',
    summary: 'Withdraw an open (or lapsed) expectation',
    description:
      'The reason is recorded as `withdrawnReason`. A satisfied, withdrawn or closed expectation answers `not-open`.',
    roles: { agent: "the expectations it raised (another agent's: 403)", admin: '' },
    params: expectationParamsSchema,
    body: jsonBody(withdrawBodySchema, 'Why it is withdrawn'),
    responses: {
      200: json(withdrawResultSchema, 'withdrawn, or not-open (nothing to withdraw)'),
      403: "the principal may not withdraw expectations, or it is another agent's",
      404: 'no expectation has this id',
      503: temporalDown,
    },
  },
  {
    method: 'post',
    path: '/v1/expectations/{id}/lapses/{messageId}/resend',
    operationId: 'resendLapse',
    tag: 'Expectations',
    summary: 'Re-send a lapse task whose delivery failed for good',
    description:
      'For a delivery the agent refused (a 4xx) or could not be reached for in its 7-day budget, once the agent can ' +
      'take it: the lapse goes out again under its original messageId, with a 7-day budget of its own from `resentAt`, ' +
      'and the outcome lands on the same `lapses[]` entry of the record. Idempotent by messageId: a delivery on its ' +
      'way or delivered is not sent again. No body.',
    roles: { admin: '' },
    params: expectationParamsSchema.extend({
      messageId: resendParamsSchema.shape.messageId.describe(
        "The lapse's `lapses[].delivery.messageId` in the record (a UUID)",
      ),
    }),
    responses: {
      202: json(resendResultSchema, 'A new delivery started: `result` is `resent`, `delivery` is `pending`'),
      200: json(
        resendResultSchema,
        'Nothing sent: `result` is `pending` (on its way) or `delivered`, with the delivery as it stands',
      ),
      400: 'the messageId is not a UUID, or the id is not valid percent-encoding',
      401: unauthenticated,
      403: "the principal is not an admin (the agent that raised the expectation included: a lapse is the watcher's to send)",
      404: 'no expectation has this id, or none of its lapses has this messageId (`detail` says which)',
      409: 'the lapse was not delivered and the expectation has ended: satisfied, withdrawn, past its late window, or closed',
      503: temporalDown,
    },
  },
  {
    method: 'get',
    path: '/healthz',
    operationId: 'health',
    tag: 'Operations',
    summary: 'Liveness',
    description: 'Answers while the process runs.',
    responses: { 200: json(healthSchema, 'The process runs') },
  },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    tag: 'Operations',
    summary: 'Readiness: Temporal answers and a worker polls the task queue',
    description:
      "A getSystemInfo call with a 2 s deadline; then the worker of the bridge's own process is running (`npm start`), " +
      'or for a bridge alone DescribeTaskQueue saw a poller of the workflow task queue in the last 2 minutes (asked at most every 5 s).',
    responses: {
      200: json(readinessSchema, 'Temporal answered and a worker takes the work'),
      503: 'Temporal did not answer within 2 s (`temporal-unavailable`), or no worker polls the task queue (`worker-unavailable`, `detail` says why)',
    },
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    tag: 'Operations',
    summary: 'Prometheus metrics',
    description: "The bridge's metrics in the Prometheus text format (docs/api.md lists them).",
    responses: {
      200: { description: 'Prometheus text exposition format', mediaType: 'text/plain', schema: z.string() },
    },
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApiDocument',
    tag: 'Operations',
    summary: 'This document',
    description: 'OpenAPI 3.1, generated from the zod schemas the routes parse with.',
    responses: { 200: json(openApiDocumentSchema, 'The OpenAPI document') },
  },
  {
    method: 'get',
    path: AGENT_CARD_PATH,
    operationId: 'watcherAgentCard',
    tag: 'A2A agent',
    summary: "The watcher's A2A agent card",
    description:
      'The watcher is itself an A2A v1.0 agent (https://a2a-protocol.org/latest/specification/): its card names its ' +
      'JSON-RPC interface, its one skill and the expectations extension (required). Served by @a2a-js/sdk with an ETag.',
    responses: {
      200: { ...json(agentCardSchema, 'An A2A v1.0 AgentCard'), headers: { ETag: 'Send it back as If-None-Match' } },
      304: { description: 'The card has not changed since the ETag sent as If-None-Match' },
    },
  },
  {
    method: 'post',
    path: AGENT_JSONRPC_PATH,
    operationId: 'watcherAgentJsonRpc',
    tag: 'A2A agent',
    summary: "The watcher's A2A JSON-RPC interface",
    description:
      'A2A v1.0 JSON-RPC 2.0 (https://a2a-protocol.org/latest/specification/), served by @a2a-js/sdk: `SendMessage` ' +
      'with facts, expectations and withdraw lists under metadata[URI] of the message (activate the extension with ' +
      'the A2A-Extensions header) answers a receipt Task: completed with one result per item, or rejected/failed with ' +
      'the problem. Errors after authentication, roles included, are answered in-band (a JSON-RPC error or a rejected ' +
      'Task), not as HTTP statuses: a body that is not JSON is -32700, one that is no request object (a batch ' +
      'included) -32600; a notification (no `id`) is neither executed nor answered (204).',
    roles: {
      agent: 'expectations, facts, withdraw (its own expectations)',
      reporter: 'facts only (a rejected Task otherwise)',
    },
    body: { schema: jsonRpcRequestSchema, mediaTypes: ['application/json'], description: 'A JSON-RPC 2.0 request' },
    responses: {
      200: json(jsonRpcResponseSchema, 'A JSON-RPC 2.0 response: its result (e.g. the receipt Task) or its error'),
      204: { description: 'A notification (a request with no `id`): not executed, and nothing is answered' },
      401: unauthenticated,
      413: bodyProblems[413],
    },
  },
];
