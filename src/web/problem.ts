/**
 * The one place errors become HTTP (STYLE 7): typed domain errors and body-parser errors are mapped to
 * `application/problem+json` (RFC 9457) with `type`, `title`, `status`, `detail` and, where fields are at fault,
 * `errors: [{path, message}]` (plus `rule` for 422).
 */
import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { problemSchema } from '../schemas/http.js';
import { CardUnreachableError } from '../../activities/agent-card/errors.js';
import {
  ConflictError,
  DomainError,
  ExpectationEndedError,
  ForbiddenError,
  MalformedBodyError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  RuleViolationError,
  SchemaError,
  TemporalBusyError,
  BridgeBusyError,
  FactNotStoredError,
  TemporalUnavailableError,
  TooManyItemsError,
  UnauthenticatedError,
  UndecryptablePayloadError,
  UnsupportedMediaTypeError,
  WorkerUnavailableError,
} from '../service/errors.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const TYPE_BASE = 'urn:expectations-watcher:problem:';

export type Problem = z.infer<typeof problemSchema>;

/** One kind of problem: its type slug (after `urn:expectations-watcher:problem:`), status and title. */
export interface ProblemKind {
  slug: string;
  status: number;
  title: string;
}

/** The errors that have a problem of their own: the domain's, and an agent card that cannot be read (activities/agent-card/). */
type KnownError = DomainError | CardUnreachableError;

/** Every problem the bridge answers, by error class. */
const kinds = new Map<abstract new (...args: never[]) => KnownError, ProblemKind>([
  [SchemaError, { slug: 'invalid-request', status: 400, title: 'The request does not match the schema' }],
  [MalformedBodyError, { slug: 'malformed-body', status: 400, title: 'The body is not valid JSON' }],
  [UnauthenticatedError, { slug: 'unauthenticated', status: 401, title: 'No valid bearer token' }],
  [ForbiddenError, { slug: 'forbidden', status: 403, title: 'Not allowed for this principal' }],
  [NotFoundError, { slug: 'not-found', status: 404, title: 'Not found' }],
  [ConflictError, { slug: 'conflict', status: 409, title: 'Expectation id reused with other content' }],
  [ExpectationEndedError, { slug: 'expectation-ended', status: 409, title: 'The expectation has ended' }],
  [PayloadTooLargeError, { slug: 'payload-too-large', status: 413, title: 'The body is over 1 MiB' }],
  [
    TooManyItemsError,
    { slug: 'too-many-items', status: 413, title: 'The request carries more items than one request may' },
  ],
  [UnsupportedMediaTypeError, { slug: 'unsupported-media-type', status: 415, title: 'The body must be JSON' }],
  [RuleViolationError, { slug: 'rule-violation', status: 422, title: 'A rule of the extension is broken' }],
  [QuotaExceededError, { slug: 'quota-exceeded', status: 429, title: "A quota of the principal's is used up" }],
  [
    CardUnreachableError,
    { slug: 'agent-card-unreachable', status: 502, title: "The agent's card could not be fetched" },
  ],
  [TemporalUnavailableError, { slug: 'temporal-unavailable', status: 503, title: 'Temporal is unreachable' }],
  // After its parent class: the last class an error is an instance of gives its kind.
  [TemporalBusyError, { slug: 'temporal-busy', status: 503, title: 'Temporal is overloaded' }],
  [BridgeBusyError, { slug: 'bridge-busy', status: 503, title: 'The bridge is at its bound of requests in flight' }],
  [FactNotStoredError, { slug: 'fact-not-stored', status: 503, title: 'Temporal did not store the facts in time' }],
  [WorkerUnavailableError, { slug: 'worker-unavailable', status: 503, title: 'No worker polls the task queue' }],
]);
const internal: ProblemKind = { slug: 'internal', status: 500, title: 'Internal error' };

/** Every problem a request can be answered with, but the internal 500 (the OpenAPI document lists them by status). */
export const problemKinds: readonly ProblemKind[] = [...kinds.values()];

// The codec endpoint's own (Temporal's codec server protocol, src/http/codec-routes.ts): not in the OpenAPI document,
// so not in problemKinds, whose 422 would otherwise claim that a raise can answer it.
kinds.set(UndecryptablePayloadError, {
  slug: 'undecryptable-payload',
  status: 422,
  title: 'A payload cannot be decrypted',
});

/** The problem type URI of a slug, e.g. `urn:expectations-watcher:problem:conflict`. */
export const problemType = (slug: string): string => `${TYPE_BASE}${slug}`;

/** Turns errors express's body parser throws into domain errors. */
function fromBodyParser(error: unknown): DomainError | undefined {
  const e = error as { type?: unknown; status?: unknown; message?: string };
  switch (e.type) {
    case 'entity.too.large':
      return new PayloadTooLargeError('the body is over the limit of 1 MiB');
    case 'entity.parse.failed':
      return new MalformedBodyError(`the body is not valid JSON: ${e.message ?? ''}`.trim());
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new UnsupportedMediaTypeError(e.message ?? 'unsupported encoding');
    default:
      return fromClientStatus(error);
  }
}

/**
 * Other errors Express raises for a bad request carry their 4xx status (http-errors): a path parameter that is not
 * valid percent-encoding (URIError, 400), a body that cannot be inflated (400). They are the client's fault, not a 500.
 */
function fromClientStatus(error: unknown): DomainError | undefined {
  const e = error as { status?: unknown; statusCode?: unknown; message?: string };
  const status = typeof e.status === 'number' ? e.status : e.statusCode;
  const detail = e.message || 'the request could not be read';
  if (status === 400) return error instanceof URIError ? new SchemaError(detail) : new MalformedBodyError(detail);
  if (status === 413) return new PayloadTooLargeError(detail);
  if (status === 415) return new UnsupportedMediaTypeError(detail);
  return undefined;
}

/** The problem for an error; unknown errors are a 500 without internals. */
export function toProblem(error: unknown): Problem {
  const domain: KnownError | undefined =
    error instanceof DomainError || error instanceof CardUnreachableError ? error : fromBodyParser(error);
  if (!domain) {
    return {
      type: problemType(internal.slug),
      title: internal.title,
      status: 500,
      detail: 'an unexpected error occurred',
    };
  }
  let kind: ProblemKind | undefined;
  for (const [cls, k] of kinds) if (domain instanceof cls) kind = k;
  kind ??= internal;
  return {
    type: problemType(kind.slug),
    title: kind.title,
    status: kind.status,
    detail: domain.message,
    ...(domain instanceof DomainError && domain.errors.length > 0 ? { errors: domain.errors } : {}),
    ...(domain instanceof QuotaExceededError
      ? { quota: { name: domain.quota, limit: domain.limit, retryAfterSeconds: domain.retryAfterSeconds } }
      : {}),
  };
}

/** When the same request may be sent again (the `Retry-After` of a 429 or 503), in seconds; undefined otherwise. */
export function retryAfterOf(error: unknown): number | undefined {
  const retries = error instanceof QuotaExceededError || error instanceof TemporalUnavailableError;
  return retries ? error.retryAfterSeconds : undefined;
}

/** Writes a problem response; `retryAfterSeconds` (see retryAfterOf) becomes its `Retry-After` (a 503's: 5). */
export function sendProblem(res: Response, problem: Problem, retryAfterSeconds?: number): void {
  if (problem.status === 401) res.set('WWW-Authenticate', 'Bearer');
  const retryAfter = retryAfterSeconds ?? (problem.status === 503 ? 5 : undefined);
  if (retryAfter !== undefined) res.set('Retry-After', String(retryAfter));
  res.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}

/** The error middleware: the last `app.use` of the app. */
export function problemMiddleware(logger?: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const problem = toProblem(error);
    if (problem.status >= 500) {
      logger?.[problem.status === 500 ? 'error' : 'warn'](
        { err: error, method: req.method, path: req.path },
        problem.detail,
      );
    }
    sendProblem(res, problem, retryAfterOf(error));
  };
}
