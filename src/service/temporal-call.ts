/**
 * Every Temporal call of the bridge goes through here: it waits for a slow Temporal up to the request's deadline and
 * fails fast when nothing answers, as a 503 TemporalUnavailableError or TemporalBusyError, never a 500 (DESIGN 4).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Client } from '@temporalio/client';
import { NamespaceNotFoundError } from '@temporalio/common';
import type { TemporalCall } from '../temporal/call.js';
import { TemporalBusyError, TemporalUnavailableError } from './errors.js';

export type { TemporalCall };

// gRPC status codes that mean "the server did not answer", not "the server said no".
const UNAVAILABLE_CODES = new Set([1 /* CANCELLED */, 4 /* DEADLINE_EXCEEDED */, 14 /* UNAVAILABLE */]);

const RESOURCE_EXHAUSTED = 8;

/** Temporal's reason when the error (or one of its causes) is RESOURCE_EXHAUSTED; undefined otherwise. */
export function temporalBusyReason(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const { code, details } = e as { code?: unknown; details?: unknown };
    if (code === RESOURCE_EXHAUSTED) return typeof details === 'string' && details !== '' ? details : e.message;
  }
  return undefined;
}

/** True when the error (or one of its causes) says Temporal could not be reached in time. */
export function isTemporalUnreachable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number' && UNAVAILABLE_CODES.has(code)) return true;
    if (e.name === 'WorkflowUpdateRPCTimeoutOrCancelledError') return true;
    if (/Failed to connect before the deadline|No connection established|connect ECONNREFUSED/i.test(e.message)) {
      return true;
    }
  }
  return false;
}

/** Why a call is given up before its deadline: Temporal does not answer at all, or no worker would serve it. */
export type TemporalProbe = () => Promise<Error | undefined>;

export interface TemporalCallOptions {
  /**
   * Asked once a call has waited `probeAfterMs` without an answer: an error when waiting longer is pointless (Temporal
   * does not answer at all, or no worker polls the task queue), which the call then throws at once. Absent, a call
   * waits out its deadline.
   */
  probe?: TemporalProbe;
  probeAfterMs?: number;
}

/** The deadline of the request being served and its whole wait, set by the bridge's middleware (`withRequestDeadline`). */
const requestDeadline = new AsyncLocalStorage<{ deadlineMs: number; waitMs: number }>();

/** Runs `fn` (the handling of one request) under a deadline that every Temporal call made for it shares (DESIGN 4). */
export function withRequestDeadline<T>(waitMs: number, fn: () => T): T {
  return requestDeadline.run({ deadlineMs: Date.now() + waitMs, waitMs }, fn);
}

/**
 * A TemporalCall bound to a client: a call waits until `defaultTimeoutMs` (or the request's deadline, if sooner) for
 * a slow Temporal, and fails fast, through the probe, when Temporal is down or no worker would serve it.
 */
export function createTemporalCall(
  client: Client,
  defaultTimeoutMs: number,
  options: TemporalCallOptions = {},
): TemporalCall {
  const probeAfterMs = options.probeAfterMs ?? 2_000;
  return async (fn, timeoutMs = defaultTimeoutMs) => {
    const request = requestDeadline.getStore();
    const ownDeadline = Date.now() + timeoutMs;
    const deadline = Math.min(ownDeadline, request?.deadlineMs ?? Number.POSITIVE_INFINITY);
    // What the answer names: the request's whole wait when that is what ran out, the call's own otherwise.
    const waited = request && request.deadlineMs < ownDeadline ? request.waitMs : timeoutMs;
    const aborted = new AbortController();
    let given: Error | undefined;
    const probe = options.probe;
    const timer =
      probe && deadline - Date.now() > probeAfterMs
        ? setTimeout(() => {
            void probe().then(
              (why) => {
                if (!why) return;
                given = why;
                aborted.abort(why);
              },
              () => undefined,
            );
          }, probeAfterMs)
        : undefined;
    try {
      return await client.withDeadline(deadline, () => client.withAbortSignal(aborted.signal, fn));
    } catch (error) {
      if (given) throw given;
      const busy = temporalBusyReason(error);
      if (busy !== undefined) {
        throw new TemporalBusyError(
          `Temporal is overloaded (RESOURCE_EXHAUSTED: ${busy}); nothing was half-applied that the same request sent again after Retry-After would not complete`,
        );
      }
      if (isTemporalUnreachable(error)) {
        throw new TemporalUnavailableError(
          `Temporal did not answer within ${waited} ms; nothing was half-applied that a retry of the same request would not complete`,
        );
      }
      // A frontend that cannot read its own database in time answers this for a while (12-07: a dev server on a
      // 2.5 GiB SQLite file under load), so it is retried; a namespace that is really missing fails /readyz as well
      // (its DescribeTaskQueue names the namespace).
      if (error instanceof NamespaceNotFoundError) {
        throw new TemporalUnavailableError(
          `Temporal answered that namespace ${JSON.stringify(error.namespace)} does not exist; a server short of its database says so for a while, and /readyz says whether it lasts; nothing was half-applied that a retry of the same request would not complete`,
        );
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}
