/**
 * The bridge's request log: one JSON line per request when its answer is sent, with method, path, status,
 * duration, the client's address (`clientIp`, through the proxies WATCHER_TRUST_PROXY trusts), the authenticated
 * principal and the expectations it concerned (expectationId and workflowId when it named one, the ids of the
 * per-item results when it raised several), so an operator can go from a log line to the workflow in the Temporal UI.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { principalOf } from './auth.js';
import { expectationWorkflowId } from '../../core/ids.js';

const ONE_EXPECTATION = /^\/v1\/expectations\/([^/]+)(?:\/withdraw|\/lapses\/[^/]+\/resend)?$/;
const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Expectation ids in an answer: `{expectations: [{expectationId}]}` (ingest results) or `{expectation: {...}}`. */
function expectationIdsIn(body: unknown): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const { expectations } = body as { expectations?: unknown };
  if (!Array.isArray(expectations)) return [];
  return expectations
    .map((item) => (item as { expectationId?: unknown } | null)?.expectationId)
    .filter((id): id is string => typeof id === 'string');
}

function principalIdOf(req: Request): string | undefined {
  try {
    return principalOf(req).id;
  } catch {
    return undefined; // not authenticated: a public route, or a 401
  }
}

/** Express middleware writing the request log through `log` (mount it before the routes). */
export function requestLog(log: Logger): RequestHandler {
  return (req: Request, res: Response, next) => {
    const started = process.hrtime.bigint();
    const path = req.path;
    let answered: unknown;
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      answered = body;
      return json(body);
    };
    res.on('finish', () => {
      const fields: Record<string, unknown> = {
        method: req.method,
        path,
        status: res.statusCode,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
      };
      // req.ip of the app that answered: the client's address behind the proxies WATCHER_TRUST_PROXY trusts.
      if (req.ip) fields.clientIp = req.ip;
      const principal = principalIdOf(req);
      if (principal) fields.principal = principal;
      const named = ONE_EXPECTATION.exec(path)?.[1];
      const ids = named !== undefined ? [decoded(named)] : expectationIdsIn(answered);
      if (ids.length === 1) {
        fields.expectationId = ids[0];
        fields.workflowId = expectationWorkflowId(ids[0]!);
      } else if (ids.length > 1) {
        fields.expectationIds = ids;
        fields.workflowIds = ids.map(expectationWorkflowId);
      }
      // Probes and scrapes come every few seconds: only their failures are worth a line at info.
      const routine = res.statusCode < 400 && PROBES.has(path);
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : routine ? 'debug' : 'info';
      log[level](fields, 'request');
    });
    next();
  };
}
