/**
 * Reading and withdrawing expectations (DESIGN 4): one record by id (the workflow's memo while it runs, its
 * result once closed: no worker answers it), lists from the visibility store by search attributes, and the withdraw call.
 * Readers (and admins) see everything; an agent sees and withdraws only what it raised.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { z } from 'zod';
import { hasRole, type Principal } from '../auth/principals.js';
import type { WatcherMetrics } from '../metrics.js';
import type { ExpectationState } from '../../core/schemas/extension.js';
import type { expectationPageSchema, expectationSummarySchema, withdrawResultSchema } from '../schemas/http.js';
import type { ExpectationRecord } from '../../core/schemas/record.js';
import { getExpectationRecord, withdrawExpectation } from '../temporal/expectations.js';
import { expectationWorkflowId, keywordValue, parseSubjectKey, subjectKey, subjectTypePrefix } from '../../core/ids.js';
import { timestampMs } from '../../core/timestamps.js';
import { decodePayloads } from '../../activities/payloads.js';
import {
  ExpectationAgent,
  ExpectationDueAt,
  ExpectationFactKey,
  ExpectationKind,
  ExpectationLate,
  ExpectationState as ExpectationStateKey,
  ExpectationSubject,
} from '../temporal/search-attributes.js';
import { ForbiddenError, NotFoundError, SchemaError } from './errors.js';
import type { TemporalCall } from './temporal-call.js';

/** Which list a page token belongs to: a short hash of the visibility query. */
const queryTag = (visibilityQuery: string): string =>
  createHash('sha256').update(visibilityQuery).digest('base64url').slice(0, 16);

/** Wraps the visibility store's page token with the list it belongs to, signed with HMAC-SHA256 under `key`. */
// A forged token must never reach the store, which may answer it with an internal error.
export function encodePageToken(storeToken: Uint8Array, visibilityQuery: string, key: Uint8Array): string {
  const q = queryTag(visibilityQuery);
  const t = Buffer.from(storeToken).toString('base64');
  return Buffer.from(JSON.stringify({ q, t, s: signature(key, q, t) })).toString('base64url');
}

const signature = (key: Uint8Array, q: string, t: string): string =>
  createHmac('sha256', key).update(`${q}\n${t}`).digest('base64url');

/** The visibility store's token inside one of ours; a SchemaError naming `pageToken` otherwise. */
export function decodePageToken(pageToken: string, visibilityQuery: string, key: Uint8Array): Buffer {
  const refuse = (message: string) => new SchemaError('invalid pageToken', [{ path: 'pageToken', message }]);
  const notOurs = 'not a page token from a previous answer';
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(pageToken, 'base64url').toString('utf8'));
  } catch {
    throw refuse(notOurs);
  }
  const { q, t, s } = (parsed ?? {}) as { q?: unknown; t?: unknown; s?: unknown };
  if (typeof q !== 'string' || typeof t !== 'string' || typeof s !== 'string' || t.length === 0) throw refuse(notOurs);
  const expected = Buffer.from(signature(key, q, t));
  const given = Buffer.from(s);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw refuse(
      `${notOurs} (its signature does not match: forged, or from a bridge with another WATCHER_PAGE_TOKEN_SECRET)`,
    );
  }
  if (q !== queryTag(visibilityQuery)) throw refuse('the page token belongs to a list with other filters');
  return Buffer.from(t, 'base64');
}

export interface RecordsDeps {
  client: Client;
  namespace: string;
  /** The bridge's task queue: lists are of its expectations only. */
  taskQueue: string;
  call: TemporalCall;
  temporalUiUrl?: string;
  metrics?: WatcherMetrics;
  /** Signs page tokens (WATCHER_PAGE_TOKEN_SECRET); absent, a random key: tokens then hold on this process only. */
  pageTokenKey?: Uint8Array;
}

export interface ListQuery {
  subjectType?: string;
  subjectId?: string;
  state?: ExpectationState;
  kind?: string;
  /** The raising agent's principal id. */
  agent?: string;
  /** RFC 3339 instants: the current dueAt at or after `dueAfter`, before `dueBefore`. */
  dueAfter?: string;
  dueBefore?: string;
  late?: boolean;
  pageSize: number;
  pageToken?: string;
}

/** One expectation as the visibility store knows it (eventually consistent; the record is the truth). */
export type ExpectationSummary = z.infer<typeof expectationSummarySchema>;

export const WORKFLOW_TYPE = 'expectationWorkflow';
const WORKFLOW_ID_PREFIX = 'expectation:';

/** Reader or admin: may read every expectation, not only its own. */
export const canRead = (principal: Principal) => hasRole(principal, 'reader') || hasRole(principal, 'admin');

/**
 * The agent whose expectations a principal's request covers: for a reader or admin the one it names (or every agent),
 * for an agent itself, naming another is a 403 on `agent`; any other principal is a 403.
 */
export function agentScope(
  principal: Principal,
  requested: string | undefined,
  words: { action: string; own: string; hint: string },
): string | undefined {
  if (canRead(principal)) return requested;
  if (!hasRole(principal, 'agent')) {
    throw new ForbiddenError(`principal '${principal.id}' may not ${words.action} (needs reader, admin or agent)`);
  }
  if (requested !== undefined && requested !== principal.id) {
    throw new ForbiddenError(`principal '${principal.id}' may ${words.own} only, not agent '${requested}'`, [
      { path: 'agent', message: `${words.hint}: leave agent out or give '${principal.id}'` },
    ]);
  }
  return principal.id;
}

/** A string literal for a visibility query. */
export const quote = (value: string): string => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

/**
 * The visibility query for a list request (and the agent's own filter): the expectations of the bridge's task queue
 * only, whatever else shares the namespace.
 */
export function listQuery(
  taskQueue: string,
  query: Omit<ListQuery, 'pageSize' | 'pageToken'>,
  agentId: string | undefined = query.agent,
): string {
  const clauses = [`WorkflowType = ${quote(WORKFLOW_TYPE)}`, `TaskQueue = ${quote(taskQueue)}`];
  if (query.subjectType !== undefined && query.subjectId !== undefined) {
    clauses.push(`${ExpectationSubject.name} = ${quote(subjectKey({ type: query.subjectType, id: query.subjectId }))}`);
  } else if (query.subjectType !== undefined) {
    clauses.push(`${ExpectationSubject.name} STARTS_WITH ${quote(subjectTypePrefix(query.subjectType))}`);
  }
  if (query.state !== undefined) clauses.push(`${ExpectationStateKey.name} = ${quote(query.state)}`);
  if (query.kind !== undefined) clauses.push(`${ExpectationKind.name} = ${quote(query.kind)}`);
  const instant = (value: string) => quote(new Date(value).toISOString());
  if (query.dueAfter !== undefined) clauses.push(`${ExpectationDueAt.name} >= ${instant(query.dueAfter)}`);
  if (query.dueBefore !== undefined) clauses.push(`${ExpectationDueAt.name} < ${instant(query.dueBefore)}`);
  if (query.late !== undefined) clauses.push(`${ExpectationLate.name} = ${query.late}`);
  if (agentId !== undefined) clauses.push(`${ExpectationAgent.name} = ${quote(agentId)}`);
  return clauses.join(' AND ');
}

/**
 * The visibility query for the running expectations on the task queue that wait on a fact key, or are on a subject
 * (open or lapsed): what their router forwards to, counted without a worker or a billable action.
 */
export function occupancyQuery(
  taskQueue: string,
  of: { factKey: string } | { subject: { type: string; id: string } },
  agentId?: string,
): string {
  const clause =
    'factKey' in of
      ? `${ExpectationFactKey.name} = ${quote(keywordValue(of.factKey))}`
      : `${ExpectationSubject.name} = ${quote(subjectKey(of.subject))}`;
  return [
    `WorkflowType = ${quote(WORKFLOW_TYPE)}`,
    `TaskQueue = ${quote(taskQueue)}`,
    `ExecutionStatus = 'Running'`,
    `${ExpectationStateKey.name} IN ('open', 'lapsed')`,
    clause,
    ...(agentId === undefined ? [] : [`${ExpectationAgent.name} = ${quote(agentId)}`]),
  ].join(' AND ');
}

/**
 * The visibility query for an agent's open expectations (DESIGN 3.7: not satisfied, not withdrawn; lapsed counts) on
 * the bridge's task queue, for its open-expectations quota: running workflows only, as a lapsed one closes after its
 * late window.
 */
export function openExpectationsQuery(taskQueue: string, agentId: string): string {
  return [
    `WorkflowType = ${quote(WORKFLOW_TYPE)}`,
    `TaskQueue = ${quote(taskQueue)}`,
    `ExecutionStatus = 'Running'`,
    `${ExpectationAgent.name} = ${quote(agentId)}`,
    `${ExpectationStateKey.name} IN ('open', 'lapsed')`,
  ].join(' AND ');
}

/** The record, after the read/ownership check; 404 when unknown. */
async function readable(deps: RecordsDeps, principal: Principal, expectationId: string, action: 'read' | 'withdraw') {
  const allowed =
    action === 'read'
      ? canRead(principal) || hasRole(principal, 'agent')
      : hasRole(principal, 'admin') || hasRole(principal, 'agent');
  if (!allowed) {
    throw new ForbiddenError(
      action === 'read'
        ? `principal '${principal.id}' may not read expectations (needs reader, admin, or the agent that raised it)`
        : `principal '${principal.id}' may not withdraw expectations (needs admin, or the agent that raised it)`,
    );
  }
  const record = await deps.call(() => getExpectationRecord(deps.client, expectationId));
  if (!record) throw new NotFoundError(`no expectation '${expectationId}'`);
  const privileged = action === 'read' ? canRead(principal) : hasRole(principal, 'admin');
  if (!privileged && record.agent.id !== principal.id) {
    throw new ForbiddenError(`expectation '${expectationId}' was raised by another agent`);
  }
  return record;
}

export function createRecordsService(deps: RecordsDeps) {
  const pageTokenKey = deps.pageTokenKey ?? randomBytes(32);
  const temporalUi = (workflowId: string) =>
    deps.temporalUiUrl
      ? `${deps.temporalUiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(deps.namespace)}/workflows/${encodeURIComponent(workflowId)}`
      : undefined;

  /**
   * The memo's raised id, decoded as the client decodes: the memo passes through the payload codecs (encrypted under
   * WATCHER_CODEC_KEYS_FILE), search attributes do not.
   */
  async function memoText(payload: temporal.api.common.v1.IPayload | null | undefined): Promise<string | undefined> {
    if (!payload) return undefined;
    return (await decodePayloads(deps.client, [payload]))[0] as string | undefined;
  }

  return {
    /** The record plus `links.temporalUi`. */
    async get(principal: Principal, expectationId: string): Promise<ExpectationRecord> {
      const record = await readable(deps, principal, expectationId, 'read');
      const ui = temporalUi(expectationWorkflowId(expectationId));
      return ui ? { ...record, links: { ...record.links, temporalUi: ui } } : record;
    },

    /**
     * One page of summaries from the visibility store; an agent sees only its own. A page may hold fewer than
     * `pageSize` (what the store found beyond the filter is left out); only its `nextPageToken` says there is more.
     */
    async list(principal: Principal, query: ListQuery): Promise<z.infer<typeof expectationPageSchema>> {
      const agentFilter = agentScope(principal, query.agent, {
        action: 'list expectations',
        own: 'list its own expectations',
        hint: 'an agent lists its own',
      });
      const visibilityQuery = listQuery(deps.taskQueue, query, agentFilter);
      const nextPageToken = query.pageToken
        ? decodePageToken(query.pageToken, visibilityQuery, pageTokenKey)
        : undefined;
      const response = await deps.call(() => listExecutions(deps, visibilityQuery, query.pageSize, nextPageToken));
      const token = response.nextPageToken?.length
        ? encodePageToken(response.nextPageToken, visibilityQuery, pageTokenKey)
        : undefined;
      const items = await Promise.all(
        response.executions.map(async (info) =>
          summaryOf(info, await memoText(info.memo?.fields?.expectationId), temporalUi),
        ),
      );
      // The store compares as its collation does (MySQL's may ignore case: `alice` would find `Alice`'s): only the
      // agent's own, exactly, are the principal's to read.
      const readable = agentFilter === undefined ? items : items.filter((item) => item.agent === agentFilter);
      return { items: readable, ...(token ? { nextPageToken: token } : {}) };
    },

    /** Withdraws an open (or lapsed) expectation; a closed one is a no-op reported as `not-open`. */
    async withdraw(
      principal: Principal,
      expectationId: string,
      reason: string,
    ): Promise<z.infer<typeof withdrawResultSchema>> {
      await readable(deps, principal, expectationId, 'withdraw');
      const outcome = await deps.call(() => withdrawExpectation(deps.client, expectationId, { reason }));
      if (outcome === 'unknown') throw new NotFoundError(`no expectation '${expectationId}'`);
      if (outcome === 'withdrawn') deps.metrics?.withdrawals.inc();
      return { expectationId, result: outcome };
    },
  };
}

function summaryOf(
  info: temporal.api.workflow.v1.IWorkflowExecutionInfo,
  memoId: string | undefined,
  temporalUi: (workflowId: string) => string | undefined,
): ExpectationSummary {
  const fields = info.searchAttributes?.indexedFields ?? {};
  const read = (name: string): unknown => {
    const payload = fields[name];
    return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
  };
  const text = (name: string): string | undefined => {
    const value = read(name);
    return Array.isArray(value) ? (value[0] as string | undefined) : (value as string | undefined);
  };
  const workflowId = info.execution?.workflowId ?? '';
  const expectationId =
    memoId ?? (workflowId.startsWith(WORKFLOW_ID_PREFIX) ? workflowId.slice(WORKFLOW_ID_PREFIX.length) : workflowId);
  const subject = text(ExpectationSubject.name);
  const dueAt = text(ExpectationDueAt.name);
  const late = read(ExpectationLate.name);
  return withoutUndefined({
    expectationId,
    workflowId,
    kind: text(ExpectationKind.name),
    subject: subject !== undefined ? parseSubjectKey(subject) : undefined,
    state: text(ExpectationStateKey.name),
    agent: text(ExpectationAgent.name),
    factKey: text(ExpectationFactKey.name),
    dueAt: dueAt !== undefined ? new Date(dueAt).toISOString() : undefined,
    late: typeof late === 'boolean' ? late : undefined,
    raisedAt: timestamp(info.startTime),
    closedAt: timestamp(info.closeTime),
    links: withoutUndefined({
      self: `/v1/expectations/${encodeURIComponent(expectationId)}`,
      temporalUi: temporalUi(workflowId),
    }),
  });
}

/** One page of the visibility store's executions; a token it no longer accepts is the caller's error (400). */
async function listExecutions(
  deps: RecordsDeps,
  query: string,
  pageSize: number | undefined,
  nextPageToken: Uint8Array | undefined,
) {
  try {
    return await deps.client.workflowService.listWorkflowExecutions({
      namespace: deps.namespace,
      query,
      pageSize,
      nextPageToken,
    });
  } catch (error) {
    // INVALID_ARGUMENT: a well-formed token the visibility store no longer accepts.
    if ((error as { code?: unknown }).code === 3) {
      throw new SchemaError('the list request was refused by the visibility store', [
        { path: 'pageToken', message: `not a page token from a previous answer (${(error as Error).message})` },
      ]);
    }
    throw error;
  }
}

export type RecordsService = ReturnType<typeof createRecordsService>;

function timestamp(value: { seconds?: unknown; nanos?: number | null } | null | undefined): string | undefined {
  if (!value || value.seconds === undefined || value.seconds === null) return undefined;
  return new Date(timestampMs(value)).toISOString();
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
