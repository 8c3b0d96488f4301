/**
 * What the client sends and what the bridge answers (DESIGN 4, docs/api.md). The extension's objects and the
 * record are the zod schemas' own types (z.input for what an author writes, z.infer for what comes back); the
 * answers the bridge builds without a schema are spelled here, and test/unit/client-requests.test.ts has tsc check
 * that they equal the bridge's own types. Types only: nothing here is loaded at run time.
 */
import type { z } from 'zod';
import type { eventV03Schema, streamResponseV1Schema, taskArtifactUpdateEventV1Schema } from '../schemas/a2a.js';
import type { expectationSchema, reportedFactSchema } from '../schemas/extension.js';
import type { listQuerySchema } from '../schemas/http.js';

export type {
  DeclarationParams,
  Expectation,
  ExpectationKind,
  ExpectationState,
  Lapse,
  LapseKind,
  ReportedFact,
  Subject,
} from '../schemas/extension.js';
export type { ExpectationRecord, LapseEntry, Origin } from '../schemas/record.js';

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

/** A field the bridge (or a builder) found at fault: a slash-separated JSON Pointer-style path into the body. */
export interface FieldError {
  path: string;
  message: string;
  /** For broken rules (422): the rule's name, e.g. `kind-declared`. */
  rule?: string;
}

export interface RaiseResult {
  expectationId: string;
  /** `unchanged`: the same id with the same content was raised before (push delivery is at-least-once). */
  result: 'raised' | 'unchanged';
}

export interface FactResult {
  factKey: string;
  /** `duplicate`: the same key, observedAt and source were recorded before. */
  result: 'recorded' | 'duplicate';
}

export interface WithdrawResult {
  expectationId: string;
  /** `not-open`: already satisfied, withdrawn, or closed after its late window (a no-op). */
  result: 'withdrawn' | 'not-open';
}

/** The answer to `POST /a2a/events`: one result per item, in the order found. */
export interface EventResult {
  expectations: RaiseResult[];
  facts: FactResult[];
  withdrawn: WithdrawResult[];
  /** Accepted, but worth a look (e.g. subject.type differs from the kind's subjectType). Absent when none. */
  warnings?: FieldError[];
}

/** The answer to `POST /v1/facts`. */
export interface FactsResult {
  facts: FactResult[];
}

/** One expectation as the visibility store knows it (eventually consistent; the record is the truth). */
export interface ExpectationSummary {
  expectationId: string;
  workflowId: string;
  kind?: string;
  subject?: { type: string; id: string };
  state?: string;
  agent?: string;
  factKey?: string;
  dueAt?: string;
  raisedAt?: string;
  closedAt?: string;
  links: { self: string; temporalUi?: string };
}

/** One page of `GET /v1/expectations`; `nextPageToken` is absent on the last page. */
export interface ExpectationPage {
  items: ExpectationSummary[];
  nextPageToken?: string;
}

/** `GET /healthz`. */
export interface Health {
  status: 'ok';
}

/** `GET /readyz` while Temporal answers (otherwise a 503 problem). */
export interface Readiness {
  status: 'ready';
  temporal: 'reachable';
}
