/**
 * Zod schemas of the bridge's own HTTP bodies and query strings (DESIGN 4). The A2A bodies are in a2a.ts, the
 * extension's objects in extension.ts. Items inside `facts` are checked one by one by the service, so that every
 * bad item is reported with its path; here they are only required to be an array.
 */
import { z } from 'zod';
import { expectationStates } from './extension.js';

/** `POST /v1/facts`. */
export const factsBodySchema = z.object({
  facts: z.array(z.unknown()).min(1, { message: 'must carry at least one fact' }),
});

/** `POST /v1/expectations/{id}/withdraw`. */
export const withdrawBodySchema = z.object({
  reason: z
    .string()
    .trim()
    .min(1, { message: 'reason must not be empty' })
    .max(1000, { message: 'reason must be at most 1000 characters' }),
});

const single = (name: string) =>
  z.string({ message: `${name} must be given once, as a string` }).min(1, { message: `${name} must not be empty` });

/** `GET /v1/expectations` query string. */
export const listQuerySchema = z
  .object({
    subjectType: single('subjectType').optional(),
    subjectId: single('subjectId').optional(),
    state: z.enum(expectationStates, { message: `state must be one of ${expectationStates.join(', ')}` }).optional(),
    kind: single('kind').optional(),
    pageSize: z.coerce
      .number({ message: 'pageSize must be a number' })
      .int({ message: 'pageSize must be an integer' })
      .min(1, { message: 'pageSize must be at least 1' })
      .max(1000, { message: 'pageSize must be at most 1000' })
      .default(100),
    pageToken: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, { message: 'pageToken must be a token from a previous answer (base64url)' })
      .optional(),
  })
  .refine((q) => q.subjectId === undefined || q.subjectType !== undefined, {
    message: 'subjectId needs subjectType',
    path: ['subjectId'],
  });
export type ListQueryInput = z.infer<typeof listQuerySchema>;

/** `POST /v1/expectations/{id}/lapses/{messageId}/resend`: the lapse by its delivery's messageId (a UUID). */
export const resendParamsSchema = z.object({
  messageId: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, {
      message: "messageId must be a lapse's delivery.messageId from its record (a UUID)",
    }),
});
