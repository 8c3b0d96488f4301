/**
 * Re-sending a lapse task (docs/api.md, `POST /v1/expectations/{id}/lapses/{messageId}/resend`): an admin's remedy
 * for a delivery that failed for good, once the agent is reachable again. The lapse goes out under its original
 * messageId, so an agent that did get it after all can drop the copy; one delivered or on its way is not sent again.
 */
import type { Client } from '@temporalio/client';
import type { z } from 'zod';
import { hasRole, type Principal } from '../auth/principals.js';
import type { resendResultSchema } from '../schemas/http.js';
import { resendLapse } from '../temporal/resend-lapse.js';
import { ExpectationEndedError, ForbiddenError, NotFoundError } from './errors.js';
import type { TemporalCall } from './temporal-call.js';

export interface LapseResendDeps {
  client: Client;
  call: TemporalCall;
}

/** The answer (src/schemas/http.ts): `resent` (a new delivery started), or `pending`/`delivered` (nothing sent). */
export type ResendAnswer = z.infer<typeof resendResultSchema>;

export function createLapseResendService(deps: LapseResendDeps) {
  return {
    /** Re-sends the lapse of `expectationId` whose delivery has `messageId`; admins only. */
    async resend(principal: Principal, expectationId: string, messageId: string): Promise<ResendAnswer> {
      if (!hasRole(principal, 'admin')) {
        throw new ForbiddenError(`principal '${principal.id}' may not re-send lapse tasks (needs admin)`);
      }
      const request = { messageId, requestedBy: principal.id };
      const outcome = await deps.call(() => resendLapse(deps.client, expectationId, request));
      switch (outcome.result) {
        case 'unknown-expectation':
          throw new NotFoundError(`no expectation '${expectationId}'`);
        case 'unknown-lapse':
          throw new NotFoundError(outcome.reason);
        case 'ended':
          throw new ExpectationEndedError(outcome.reason);
        default: {
          const { delivery, lapseTaskId } = outcome.entry;
          return { expectationId, result: outcome.result, delivery, ...(lapseTaskId ? { lapseTaskId } : {}) };
        }
      }
    },
  };
}

export type LapseResendService = ReturnType<typeof createLapseResendService>;
