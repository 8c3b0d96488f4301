/**
 * The client's two errors: a problem the bridge answered (`WatcherProblemError`, RFC 9457 as docs/api.md lists
 * them) and a value a builder refused before any request (`WatcherValidationError`). Both name the fields at
 * fault as `errors: [{path, message}]`.
 */
import type { FieldError } from './types.js';

const lines = (errors: readonly FieldError[]) => errors.map((e) => `${e.path || '(body)'}: ${e.message}`).join('; ');

/** A value a builder refused: `errors` names each bad field, with the path the bridge would name it by. */
export class WatcherValidationError extends Error {
  override readonly name = 'WatcherValidationError';

  constructor(
    what: string,
    readonly errors: FieldError[],
  ) {
    super(`invalid ${what}: ${lines(errors)}`);
  }
}

/** Where the request went, for the message of a problem. */
export interface ProblemRequest {
  method: string;
  path: string;
}

/** An error answer of the bridge: its problem+json fields, the field errors, and Retry-After when it sent one. */
export class WatcherProblemError extends Error {
  override readonly name = 'WatcherProblemError';
  readonly status: number;
  /** e.g. `urn:expectations-watcher:problem:not-found`; `about:blank` when the answer was no problem+json. */
  readonly type: string;
  readonly title: string;
  readonly detail: string | undefined;
  /** Each field at fault (400, 403, 422), with `rule` for a broken rule; empty when the problem names none. */
  readonly errors: FieldError[];
  /** Seconds to wait before sending the same request again (503 and 429 answers carry it), when the answer said. */
  readonly retryAfter: number | undefined;
  /** How many times the client sent the request, this answer's included (more than 1 after 503s or 429s). */
  readonly attempts: number;
  /** The whole problem body as answered, for members beyond these. */
  readonly problem: Readonly<Record<string, unknown>>;
  readonly request: ProblemRequest;

  constructor(
    request: ProblemRequest,
    problem: { status: number; type: string; title: string; detail?: string; errors?: FieldError[] } & Record<
      string,
      unknown
    >,
    retryAfter?: number,
    attempts = 1,
  ) {
    const errors = problem.errors ?? [];
    const detail = problem.detail === undefined ? '' : `: ${problem.detail}`;
    const all = errors.length > 1 ? ` (${lines(errors)})` : '';
    const tries = attempts > 1 ? ` (after ${attempts} attempts)` : '';
    super(`${request.method} ${request.path}: ${problem.status} ${problem.title}${detail}${all}${tries}`);
    this.request = request;
    this.status = problem.status;
    this.type = problem.type;
    this.title = problem.title;
    this.detail = problem.detail;
    this.errors = errors;
    this.retryAfter = retryAfter;
    this.attempts = attempts;
    this.problem = problem;
  }

  /**
   * The error for a response that is not ok, from its body text (problem+json, or whatever a proxy answered), the
   * `attempts`-th answer to the request.
   */
  static fromResponse(
    request: ProblemRequest,
    response: Response,
    text: string,
    now = Date.now(),
    attempts = 1,
  ): WatcherProblemError {
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'), now);
    const body = parseObject(text);
    if (body && typeof body.type === 'string' && typeof body.title === 'string') {
      return new WatcherProblemError(
        request,
        {
          ...body,
          type: body.type,
          title: body.title,
          status: typeof body.status === 'number' ? body.status : response.status,
          detail: typeof body.detail === 'string' ? body.detail : undefined,
          errors: Array.isArray(body.errors) ? (body.errors as FieldError[]) : [],
        },
        retryAfter,
        attempts,
      );
    }
    // Not a problem (a proxy's HTML page, an empty 502): RFC 9457's `about:blank`, titled by the status.
    const detail = text.trim().slice(0, 500);
    return new WatcherProblemError(
      request,
      {
        type: 'about:blank',
        title: response.statusText || `HTTP ${response.status}`,
        status: response.status,
        ...(detail ? { detail } : {}),
      },
      retryAfter,
      attempts,
    );
  }
}

/** Retry-After as seconds: delta-seconds, or an HTTP date counted from `now` (never negative). */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
