/**
 * When WatcherClient sends a request again, and after how long: the bridge's 503 and 429 say "nothing half-applied
 * that a retry of the same request would not complete" (DESIGN 4) and name the wait in Retry-After, and a dropped
 * connection leaves no more (docs/api.md, Retries and idempotency). Pure decisions, plus the default sleep.
 */

/** How long the client keeps sending a request again after a 503, a 429 or a dropped connection. */
export interface RetryOptions {
  /**
   * The time, from the first attempt, within which the client sends again (default 60 000 ms): a wait that would end
   * past it is not slept through, and the last error is thrown instead.
   */
  totalWaitMs?: number;
  /**
   * The longest wait the client picks itself, when a 503 or 429 names no Retry-After or a connection dropped:
   * 1 s, doubling, up to this (default 8 000 ms). A Retry-After is the bridge's word and is waited as given.
   */
  maxBackoffMs?: number;
}

/** RetryOptions with every default filled in. */
export interface RetryPolicy {
  totalWaitMs: number;
  maxBackoffMs: number;
}

const DEFAULT_RETRY: Readonly<RetryPolicy> = { totalWaitMs: 60_000, maxBackoffMs: 8_000 };

const FIRST_BACKOFF_MS = 1_000;

/** The statuses whose request the bridge promises may be sent again as it was: Temporal or the bridge busy, a quota. */
export const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * Connections refused or dropped (the bridge restarting, a proxy cutting it): sent again. A name that does not
 * resolve, a TLS failure or a timeout is not: those do not heal within a minute, or the caller chose the deadline.
 */
const DROPPED_CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
]);

/**
 * The policy of one call: the call's `retry` field by field over the client's, over the defaults; none when the call
 * says `false`, or says nothing and the client says `false` or the call is one not retried by default (the probes).
 */
export function retryPolicy(
  client: RetryOptions | false | undefined,
  call: RetryOptions | false | undefined,
  byDefault = true,
): RetryPolicy | undefined {
  if (call === false || (call === undefined && (!byDefault || client === false))) return undefined;
  const base = client || {};
  return checkedPolicy({
    totalWaitMs: call?.totalWaitMs ?? base.totalWaitMs ?? DEFAULT_RETRY.totalWaitMs,
    maxBackoffMs: call?.maxBackoffMs ?? base.maxBackoffMs ?? DEFAULT_RETRY.maxBackoffMs,
  });
}

/** Refuses a wait that is no number of milliseconds (`Infinity` is one: retry until the signal aborts). */
function checkedPolicy(policy: RetryPolicy): RetryPolicy {
  for (const [name, value] of Object.entries(policy)) {
    if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
      throw new TypeError(`retry.${name} must be a number of milliseconds, 0 or more, not ${String(value)}`);
    }
  }
  return policy;
}

/**
 * The wait in ms before sending again after the `attempt`-th attempt failed in a way that may be retried, or
 * `undefined` when that wait would end past the total wait (`elapsedMs` counted from the first attempt). A Retry-After
 * of 0 (or a date already past) waits the backoff, so that no answer can make the client send without pause.
 */
export function nextWait(
  policy: RetryPolicy,
  attempt: number,
  retryAfterSeconds: number | undefined,
  elapsedMs: number,
): number | undefined {
  const backoff = Math.min(policy.maxBackoffMs, FIRST_BACKOFF_MS * 2 ** (attempt - 1));
  const wait = retryAfterSeconds ? retryAfterSeconds * 1000 : backoff;
  return elapsedMs + wait <= policy.totalWaitMs ? wait : undefined;
}

/**
 * Whether `error`, thrown by fetch, is a refused or dropped connection: Node's fetch puts the code on `cause` (an
 * AggregateError's `errors` when every address of a name refused), another fetch may put it on the error itself.
 */
export function isDroppedConnection(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | null)?.cause;
  const errors = (cause as { errors?: unknown } | null)?.errors;
  const candidates: unknown[] = [error, cause, ...(Array.isArray(errors) ? errors : [])];
  return candidates.some((e) => {
    const code = (e as { code?: unknown } | null)?.code;
    return typeof code === 'string' && DROPPED_CONNECTION_CODES.has(code);
  });
}

/** The longest delay setTimeout keeps (about 24.8 days); a longer one would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Resolves after `ms`; rejects with the signal's reason as soon as it aborts (as fetch does). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
