/**
 * The JSON-RPC 2.0 envelope of `/a2a/jsonrpc`, checked before @a2a-js/sdk sees the request and answered as JSON-RPC
 * and A2A require (docs/api.md, "JSON-RPC 2.0 answers of `/a2a/jsonrpc`").
 */
import { A2A_VERSION_HEADER, TaskState } from '@a2a-js/sdk';
import { JsonRpcRequestMalformedError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from 'pino';
import { illFormedStrings } from '../web/well-formed.js';

/** JSON-RPC 2.0's own error codes. */
export const JSON_RPC_ERROR = { parse: -32700, invalidRequest: -32600, invalidParams: -32602 } as const;

/** The largest `pageSize` of ListTasks (the SDK's and A2A's bound). */
export const MAX_PAGE_SIZE = 100;

type JsonRpcId = string | number | null;
type JsonObject = Record<string, unknown>;

/** A request the envelope refuses: the JSON-RPC error code, its message (naming the field and rule) and the field. */
class EnvelopeError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const describe = (value: unknown): string =>
  Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;

/** v0.3 when the request names no version or 0.3, as the SDK's compatibility layer decides. */
const isLegacy = (req: Request): boolean => (req.get(A2A_VERSION_HEADER) || '0.3') === '0.3';

/** The id to answer with: the request's when it is a valid one, null otherwise (JSON-RPC 2.0 section 5). */
function answerId(body: unknown): JsonRpcId {
  if (!isObject(body)) return null;
  const id = body.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

function sendError(req: Request, res: Response, id: JsonRpcId, error: EnvelopeError): void {
  let body: { code: number; message: string; data?: unknown };
  if (error.code === JSON_RPC_ERROR.invalidParams && !isLegacy(req)) {
    // The SDK's own shape for v1.0: data holds a google.rpc.ErrorInfo (reason INVALID_PARAMS), here with the field.
    const metadata = error.field ? { field: error.field } : undefined;
    body = JsonRpcTransportHandler.mapToJSONRPCError(
      new JsonRpcRequestMalformedError({ message: error.message, metadata }),
    );
  } else {
    body = { code: error.code, message: error.message };
  }
  res.status(200).json({ jsonrpc: '2.0', id, error: body });
}

/** The body as JSON, or a -32700 EnvelopeError. */
function parseBody(raw: unknown): unknown {
  const bytes = Buffer.isBuffer(raw) ? raw : Buffer.alloc(0);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new EnvelopeError(JSON_RPC_ERROR.parse, 'Parse error: the body is not UTF-8 text');
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    const reason = text.trim() === '' ? 'the body is empty' : (error as Error).message;
    throw new EnvelopeError(JSON_RPC_ERROR.parse, `Parse error: ${reason}`);
  }
  return body;
}

/** Throws a -32600 EnvelopeError for a string holding a lone surrogate, or a body nested past MAX_BODY_DEPTH. */
function checkWellFormed(body: unknown): void {
  const [ill] = illFormedStrings(body);
  if (ill) {
    const field = ill.path.split('/').join('.') || '(body)';
    throw new EnvelopeError(JSON_RPC_ERROR.invalidRequest, `Invalid Request: ${field} ${ill.message}`, field);
  }
}

/** Throws a -32600 EnvelopeError unless `body` is one JSON-RPC 2.0 request object; -32602 for array params. */
function checkRequest(body: unknown): asserts body is JsonObject & { method: string } {
  const invalid = (field: string | undefined, rule: string) =>
    new EnvelopeError(JSON_RPC_ERROR.invalidRequest, `Invalid Request: ${rule}`, field);
  if (Array.isArray(body))
    throw invalid(undefined, 'the body must be one request object; batches (arrays) are not supported');
  if (!isObject(body)) throw invalid(undefined, `the body must be a request object, not ${describe(body)}`);
  if (body.jsonrpc !== '2.0') throw invalid('jsonrpc', 'jsonrpc must be exactly "2.0"');
  if (typeof body.method !== 'string' || body.method === '')
    throw invalid('method', 'method must be a non-empty string');
  if ('id' in body) {
    const id = body.id;
    if (!(id === null || typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)))) {
      throw invalid('id', `id must be a string, an integer or null, not ${describe(id)}`);
    }
  }
  if ('params' in body && !isObject(body.params)) {
    if (Array.isArray(body.params)) {
      throw new EnvelopeError(
        JSON_RPC_ERROR.invalidParams,
        'Invalid params: params must be an object (A2A params are named)',
        'params',
      );
    }
    throw invalid('params', `params must be an object, not ${describe(body.params)}`);
  }
}

const invalidParams = (field: string, rule: string) =>
  new EnvelopeError(JSON_RPC_ERROR.invalidParams, `Invalid params: ${field} ${rule}`, field);

/** A value as an error text quotes it: JSON, cut short (a param may be a megabyte long). */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

/** ProtoJSON integers: a number or a decimal string. */
function integerOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value);
  return undefined;
}

const present = (params: JsonObject, key: string): boolean => params[key] !== undefined && params[key] !== null;

function checkHistoryLength(params: JsonObject): void {
  if (!present(params, 'historyLength')) return;
  const n = integerOf(params.historyLength);
  if (n === undefined || n < 0) {
    throw invalidParams('params.historyLength', `must be an integer of 0 or more, not ${shown(params.historyLength)}`);
  }
}

/** The role values each protocol version spells. */
const ROLES = { v1: ['ROLE_USER', 'ROLE_AGENT', 1, 2], legacy: ['user', 'agent'] } as const;

function checkMessage(params: JsonObject, legacy: boolean): void {
  const message = params.message;
  if (!isObject(message))
    throw invalidParams('params.message', `is required: a Message object, not ${describe(message)}`);
  const roles: readonly unknown[] = legacy ? ROLES.legacy : ROLES.v1;
  if (!roles.includes(message.role)) {
    const allowed = legacy ? '"user" or "agent"' : 'ROLE_USER or ROLE_AGENT';
    const got = message.role === undefined ? 'it is missing' : `not ${shown(message.role)}`;
    throw invalidParams('params.message.role', `is required: ${allowed}, ${got}`);
  }
  if (!Array.isArray(message.parts) || message.parts.length === 0) {
    throw invalidParams('params.message.parts', 'is required: an array of at least one Part');
  }
}

/** RFC 3339 date-time (a full date, a time, a zone): what A2A's Timestamp fields hold. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const TASK_STATE_NAMES = Object.keys(TaskState).filter((key) => key.startsWith('TASK_STATE_'));

/** A ListTasks `status`: a state's ProtoJSON name, or its number (UNRECOGNIZED, -1, is none). */
const isTaskState = (value: unknown): boolean =>
  (typeof value === 'string' && TASK_STATE_NAMES.includes(value)) ||
  (typeof value === 'number' && value >= 0 && TaskState[value] !== undefined);

const isTimestamp = (value: unknown): boolean =>
  typeof value === 'string' && RFC3339.test(value) && !Number.isNaN(Date.parse(value));

function checkListTasks(params: JsonObject): void {
  if (present(params, 'pageSize')) {
    const n = integerOf(params.pageSize);
    if (n === undefined || n < 1 || n > MAX_PAGE_SIZE) {
      throw invalidParams(
        'params.pageSize',
        `must be an integer from 1 to ${MAX_PAGE_SIZE}, not ${shown(params.pageSize)}`,
      );
    }
  }
  checkHistoryLength(params);
  if (present(params, 'statusTimestampAfter') && !isTimestamp(params.statusTimestampAfter)) {
    const rule = 'must be an RFC 3339 timestamp with a zone (e.g. 2026-12-01T09:30:00Z)';
    throw invalidParams('params.statusTimestampAfter', `${rule}, not ${shown(params.statusTimestampAfter)}`);
  }
  if (present(params, 'status') && !isTaskState(params.status)) {
    throw invalidParams(
      'params.status',
      `must be a task state (${TASK_STATE_NAMES.join(', ')}), not ${shown(params.status)}`,
    );
  }
  if (present(params, 'pageToken') && typeof params.pageToken !== 'string') {
    const rule = 'must be a string (the nextPageToken of an earlier answer)';
    throw invalidParams('params.pageToken', `${rule}, not ${describe(params.pageToken)}`);
  }
}

/** The params rules per method: v1.0 names with `A2A-Version: 1.0`, v0.3 names otherwise. */
const PARAMS_RULES: Record<'v1' | 'legacy', Record<string, (params: JsonObject) => void>> = {
  v1: {
    SendMessage: (params) => checkMessage(params, false),
    SendStreamingMessage: (params) => checkMessage(params, false),
    GetTask: checkHistoryLength,
    ListTasks: checkListTasks,
  },
  legacy: {
    'message/send': (params) => checkMessage(params, true),
    'message/stream': (params) => checkMessage(params, true),
    'tasks/get': checkHistoryLength,
  },
};

/**
 * The middleware chain to mount before the SDK's `jsonRpcHandler`: it reads the body itself (up to `limit`; a larger
 * one is the bridge's 413 problem), answers what it refuses and notifications, and hands on the parsed request.
 */
export function jsonRpcEnvelope(options: { limit?: string; logger?: Logger } = {}): RequestHandler[] {
  const raw = express.raw({ type: () => true, limit: options.limit ?? '1mb' });
  // Only a POST to the endpoint itself is JSON-RPC; anything else falls through to the bridge's 404, as before.
  const isCall = (req: Request) => req.method === 'POST' && req.path === '/';
  const readBody: RequestHandler = (req, res, next) => (isCall(req) ? raw(req, res, next) : next());
  const check: RequestHandler = (req, res, next) => {
    if (!isCall(req)) return next();
    const contentType = req.get('content-type');
    // Another media type is the SDK's -32005 (Content type not supported), answered before it reads the body.
    if (contentType && contentType.split(';', 1)[0]!.trim().toLowerCase() !== 'application/json') return next();
    let body: unknown;
    try {
      body = parseBody(req.body);
      checkWellFormed(body);
      checkRequest(body);
      if (!('id' in body)) {
        const note = 'watcher agent: JSON-RPC notification ignored (no id: nothing is executed or answered)';
        options.logger?.info({ method: body.method }, note);
        res.status(204).end();
        return;
      }
      const rules = PARAMS_RULES[isLegacy(req) ? 'legacy' : 'v1'];
      if (Object.hasOwn(rules, body.method)) rules[body.method]!(isObject(body.params) ? body.params : {});
    } catch (error) {
      if (!(error instanceof EnvelopeError)) throw error;
      sendError(req, res, answerId(body), error);
      return;
    }
    req.body = body;
    next();
  };
  return [readBody, check];
}
