/**
 * What the client sends and what the bridge answers (DESIGN 4, docs/api.md), as the zod schemas' own types: z.input
 * for what an author writes, z.infer for what comes back (the schemas the bridge parses with and answers in, which
 * /openapi.json is generated from). Types only: nothing here loads at run time.
 */
import type { z } from 'zod';
import type { eventV03Schema, streamResponseV1Schema, taskArtifactUpdateEventV1Schema } from '../schemas/a2a.js';
import type { expectationSchema, reportedFactSchema } from '../../core/schemas/extension.js';
import type {
  expectationPageSchema,
  expectationResultSchema,
  expectationSummarySchema,
  factResultSchema,
  factsResultSchema,
  fieldErrorSchema,
  healthSchema,
  ingestResultSchema,
  listQuerySchema,
  readinessSchema,
  resendResultSchema,
  statisticsSchema,
  withdrawResultSchema,
} from '../schemas/http.js';

export type {
  DeclarationParams,
  Expectation,
  ExpectationKind,
  ExpectationState,
  ReportedFact,
  Subject,
} from '../../core/schemas/extension.js';

/**
 * A lapse value: `'overdue' | 'skipped' | 'stalled' | (string & {})`. An open set (the seed's rule): a later watcher
 * may send one this client does not know, which an agent treats as `overdue` (`knownLapseKind`).
 */
export type { OpenLapseKind as LapseKind } from '../../core/schemas/extension.js';

/** The lapses this watcher raises today: `overdue`, `skipped`, `stalled`. */
export type { LapseKind as KnownLapseKind } from '../../core/schemas/extension.js';

/** A lapse as a lapse task carries it and a record lists it; `lapse` is a LapseKind (an open set). */
export type { OpenLapse as Lapse } from '../../core/schemas/extension.js';

/** The record of `GET /v1/expectations/{id}`, and one of its `lapses`; every `lapse` a LapseKind (an open set). */
export type {
  OpenExpectationRecord as ExpectationRecord,
  OpenLapseEntry as LapseEntry,
  Origin,
} from '../../core/schemas/record.js';

/** An expectation as an author writes it (`expectation({...})` checks it). */
export type ExpectationInput = z.input<typeof expectationSchema>;

/** A fact as a reporter writes it; `source` may be left out, the watcher sets it to the reporting principal. */
export type FactInput = z.input<typeof reportedFactSchema>;

/** One body of `POST /a2a/events`: a v1.0 ProtoJSON StreamResponse (`{task}`, `{artifactUpdate}`, ...) or a v0.3 object with `kind`. */
export type A2AEventBody = z.input<typeof streamResponseV1Schema> | z.input<typeof eventV03Schema>;

/** The v1.0 artifact-update event (`artifactUpdateEvent` wraps it as `{artifactUpdate}`). */
export type ArtifactUpdateInput = z.input<typeof taskArtifactUpdateEventV1Schema>;

/** The filters of `GET /v1/expectations`, each optional; `pageSize` 1 to 1000 (the bridge's default is 100). */
export type ListFilter = Partial<z.infer<typeof listQuerySchema>>;

/** A field the bridge (or a builder) found at fault: a slash-separated JSON Pointer-style path, `rule` for a 422. */
export type FieldError = z.infer<typeof fieldErrorSchema>;

/** One raised expectation; `unchanged`: the same id with the same content was raised before (at-least-once push). */
export type RaiseResult = z.infer<typeof expectationResultSchema>;

/** One reported fact; `accepted`: stored by Temporal (no worker); with `wait`, `recorded` or `duplicate` (seen before). */
export type FactResult = z.infer<typeof factResultSchema>;

/** One withdrawal; `not-open`: already satisfied, withdrawn, or closed after its late window (a no-op). */
export type WithdrawResult = z.infer<typeof withdrawResultSchema>;

/** The answer to `POST /a2a/events`: one result per item, in the order found; `warnings` only when there is one. */
export type EventResult = z.infer<typeof ingestResultSchema>;

/** The answer to `POST /v1/facts`. */
export type FactsResult = z.infer<typeof factsResultSchema>;

/** One expectation as the visibility store knows it (eventually consistent; the record is the truth). */
export type ExpectationSummary = z.infer<typeof expectationSummarySchema>;

/** One page of `GET /v1/expectations`; `nextPageToken` is absent on the last page. */
export type ExpectationPage = z.infer<typeof expectationPageSchema>;

/** `GET /v1/statistics`: per kind and agent, how the expectations raised in the window stand and how long they took. */
export type Statistics = z.infer<typeof statisticsSchema>;

/** The filters of `GET /v1/statistics`: `window` an ISO 8601 duration (default P7D). */
export interface StatisticsFilter {
  kind?: string;
  agent?: string;
  window?: string;
}

/** `GET /healthz`. */
export type Health = z.infer<typeof healthSchema>;

/** `GET /readyz` while Temporal answers (otherwise a 503 problem). */
export type Readiness = z.infer<typeof readinessSchema>;

/**
 * The answer to `POST /v1/expectations/{id}/lapses/{messageId}/resend`: `resent` (202) when a new delivery started,
 * `pending` or `delivered` (200) when none was needed because one is on its way or the agent has the task.
 */
export type ResendResult = z.infer<typeof resendResultSchema>;
