/**
 * Typed domain errors. The service throws these; the one error middleware (src/web/problem.ts) maps each to
 * its HTTP status and problem+json body. Nothing below the HTTP layer knows a status code. (An agent card that
 * cannot be read is the card reader's own error: activities/agent-card/errors.ts.)
 */
import type { z } from 'zod';
import type { fieldErrorSchema } from '../schemas/http.js';

/** One bad field: a slash-separated path into the request body (RFC 6901 escaping, no leading slash). */
export type FieldError = z.infer<typeof fieldErrorSchema>;

export abstract class DomainError extends Error {
  constructor(
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The request does not match the schema (400). */
export class SchemaError extends DomainError {}

/** The body is not valid JSON (400). */
export class MalformedBodyError extends DomainError {}

/** No bearer token, or one that names no principal (401). */
export class UnauthenticatedError extends DomainError {}

/** The principal lacks the role, or does not own the expectation (403). */
export class ForbiddenError extends DomainError {}

/** Unknown expectation or route (404). */
export class NotFoundError extends DomainError {}

/** An expectation id reused with other content, or by another agent (409). */
export class ConflictError extends DomainError {}

/** The expectation has ended (satisfied, withdrawn or closed): nothing more is delivered for it (409). */
export class ExpectationEndedError extends DomainError {}

/** Body over the limit (413). */
export class PayloadTooLargeError extends DomainError {}

/** A request with more items than the bridge takes in one (413): each field error names the list and its `limit`. */
export class TooManyItemsError extends DomainError {}

/** Not JSON (415). */
export class UnsupportedMediaTypeError extends DomainError {}

/** A rule of DESIGN 3.1 broken (422). Each field error names its rule. */
export class RuleViolationError extends DomainError {}

/** Which per-principal quota a request would exceed (src/service/quotas.ts, src/service/statistics-cache.ts). */
export type QuotaName = 'open-expectations' | 'raises-per-minute' | 'facts-per-minute' | 'statistics-per-minute';

/** A per-principal quota would be exceeded (429, with `Retry-After`). Nothing of the request was applied. */
export class QuotaExceededError extends DomainError {
  constructor(
    message: string,
    readonly quota: QuotaName,
    readonly limit: number,
    /** When the same request may pass, in whole seconds (at least 1). */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** A payload sent to the codec endpoint cannot be decrypted: unknown key id, altered or truncated (422). */
export class UndecryptablePayloadError extends DomainError {}

/** Temporal did not answer in time (503). Safe to retry: raises are idempotent by id, facts dedupe. */
export class TemporalUnavailableError extends DomainError {
  /** What the answer's `Retry-After` says, in seconds. */
  readonly retryAfterSeconds: number = 5;
}

/**
 * Temporal answered RESOURCE_EXHAUSTED (gRPC status 8): a rate limit of the namespace or frontend, or a workflow with
 * too many pending updates or signals (503, with a shorter `Retry-After`). Safe to retry, as for any 503.
 */
export class TemporalBusyError extends TemporalUnavailableError {
  override readonly retryAfterSeconds: number = 2;
}

/**
 * Temporal did not store a request's facts within the fact wait (WATCHER_FACT_WAIT): they may count only from the
 * retry that succeeds (DESIGN 3.2), so the answer is 503 with a short `Retry-After`.
 */
export class FactNotStoredError extends TemporalUnavailableError {
  override readonly retryAfterSeconds: number = 1;
}

/** The bridge is at its bound of requests in flight (WATCHER_MAX_REQUESTS_IN_FLIGHT): refused before any work. */
export class BridgeBusyError extends TemporalUnavailableError {
  override readonly retryAfterSeconds: number = 1;
}

/** No worker polls the task queue (503 from `/readyz`): what is raised now would wait for one. */
export class WorkerUnavailableError extends DomainError {}

/** Joins path segments as `expectations/0/dueAt`, escaping `~` and `/` inside a segment as RFC 6901 does. */
export function joinPath(segments: readonly PropertyKey[]): string {
  return segments.map((segment) => String(segment).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
}

/** A one-line `detail` for a list of field errors: the error itself when alone, a count otherwise. */
export function summarise(errors: readonly FieldError[], noun: 'fields are invalid' | 'rules are broken'): string {
  if (errors.length === 1) {
    const only = errors[0]!;
    return noun === 'fields are invalid' ? `${only.path || '(body)'}: ${only.message}` : only.message;
  }
  return `${errors.length} ${noun}; see errors`;
}
