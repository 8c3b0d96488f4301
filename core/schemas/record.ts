/**
 * The watcher's record of one expectation: the seed's ExpectationRecord plus what DESIGN section 4 adds.
 */
import { z } from 'zod';
import {
  expectationSchema,
  expectationStates,
  factSchema,
  lapseSchema,
  openLapseSchema,
  utcDateTime,
} from './extension.js';

/** How the delivery of one lapse task went. */
export const lapseDeliverySchema = z.object({
  status: z.enum(['pending', 'delivered', 'failed', 'abandoned']),
  messageId: z.string(),
  attempts: z.number().int().optional(),
  deliveredAt: utcDateTime.optional(),
  error: z.string().optional(),
  warnings: z.array(z.string()).optional(),
  /** How many times an admin re-sent the lapse (docs/api.md); absent until the first resend. */
  resends: z.number().int().min(1).optional(),
  /** When the latest resend was asked for: that delivery's budget runs from here, not from the lapse. */
  resentAt: utcDateTime.optional(),
  /** The admin principal that asked for the latest resend. */
  resentBy: z.string().optional(),
});

export const lapseEntrySchema = z.object({
  lapse: lapseSchema,
  delivery: lapseDeliverySchema,
  lapseTaskId: z.string().optional(),
});
export type LapseEntry = z.infer<typeof lapseEntrySchema>;

export const principalRefSchema = z.object({ id: z.string() });

export const originSchema = z.object({
  taskId: z.string().optional(),
  contextId: z.string().optional(),
});
export type Origin = z.infer<typeof originSchema>;

export const expectationRecordSchema = z.object({
  expectation: expectationSchema,
  projectedDueAt: utcDateTime,
  dueAt: utcDateTime,
  state: z.enum(expectationStates),
  raisedAt: utcDateTime,
  closedAt: utcDateTime.optional(),
  satisfiedAt: utcDateTime.optional(),
  observedAt: utcDateTime.optional(),
  late: z.boolean().optional(),
  satisfiedBy: factSchema.optional(),
  /** The latest lapse, as the seed names it. */
  lapse: lapseSchema.optional(),
  lapseTaskId: z.string().optional(),
  withdrawnReason: z.string().optional(),
  /** When withdrawn because superseded: the expectationId that superseded it (its dependents follow that one). */
  supersededBy: z.string().optional(),
  lapses: z.array(lapseEntrySchema),
  lineage: z.number().int().min(0),
  agent: principalRefSchema,
  origin: originSchema,
  lastFactAt: utcDateTime.optional(),
  links: z.object({ temporalUi: z.string() }).optional(),
});
export type ExpectationRecord = z.infer<typeof expectationRecordSchema>;

/**
 * The record as a client reads it, and as the OpenAPI document describes the answer: every `lapse` an open set
 * (openLapseSchema), since a later watcher may raise a lapse this one does not know. The watcher writes
 * expectationRecordSchema's known values only.
 */
export const openLapseEntrySchema = lapseEntrySchema.extend({ lapse: openLapseSchema });
export type OpenLapseEntry = z.infer<typeof openLapseEntrySchema>;

export const openExpectationRecordSchema = expectationRecordSchema.extend({
  lapse: openLapseSchema.optional(),
  lapses: z.array(openLapseEntrySchema),
});
export type OpenExpectationRecord = z.infer<typeof openExpectationRecordSchema>;
