/**
 * Every Temporal call of the bridge goes through here: a short deadline, and gRPC UNAVAILABLE / DEADLINE_EXCEEDED
 * (or a connection that never came up) turned into TemporalUnavailableError (503) so that a request fails fast
 * instead of hanging while Temporal is down; RESOURCE_EXHAUSTED (Temporal's rate limits, a workflow with too many
 * pending updates) into TemporalBusyError (503 with a shorter Retry-After), not a 500.
 */
import type { Client } from '@temporalio/client';
import { TemporalBusyError, TemporalUnavailableError } from './errors.js';

/** Runs `fn` (which makes Temporal calls through `client`) under a deadline. */
export type TemporalCall = <T>(fn: () => Promise<T>, timeoutMs?: number) => Promise<T>;

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

/** A TemporalCall bound to a client with a default deadline. */
export function createTemporalCall(client: Client, defaultTimeoutMs: number): TemporalCall {
  return async (fn, timeoutMs = defaultTimeoutMs) => {
    try {
      return await client.withDeadline(Date.now() + timeoutMs, fn);
    } catch (error) {
      const busy = temporalBusyReason(error);
      if (busy !== undefined) {
        throw new TemporalBusyError(
          `Temporal is overloaded (RESOURCE_EXHAUSTED: ${busy}); nothing was half-applied that the same request sent again after Retry-After would not complete`,
        );
      }
      if (isTemporalUnreachable(error)) {
        throw new TemporalUnavailableError(
          `Temporal did not answer within ${timeoutMs} ms; nothing was half-applied that a retry of the same request would not complete`,
        );
      }
      throw error;
    }
  };
}
