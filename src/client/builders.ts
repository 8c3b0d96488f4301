/**
 * Builders of the extension's metadata, checked here with the bridge's own zod schemas so that an author gets the
 * field error before any request: `expectation`, `fact`, `withdrawList`, the whole payload (`extensionPayload`),
 * `withExtension` to put it under `metadata[EXTENSION_URI]` of an A2A message or artifact, and
 * `artifactUpdateEvent` for the push body `POST /a2a/events` takes.
 */
import type { z } from 'zod';
import {
  EXTENSION_URI,
  expectationSchema,
  extensionMetadataSchema,
  reportedFactSchema,
} from '../../core/schemas/extension.js';
import { WatcherValidationError } from './errors.js';
import type {
  ArtifactUpdateInput,
  Expectation,
  ExpectationInput,
  FactInput,
  FieldError,
  ReportedFact,
} from './types.js';

/** The extension payload found under `metadata[EXTENSION_URI]`, each list checked. */
export interface ExtensionPayload {
  expectations?: Expectation[];
  facts?: ReportedFact[];
  withdraw?: string[];
}

/** What `extensionPayload` and `withExtension` take: the lists as an author writes them. */
export interface ExtensionPayloadInput {
  expectations?: readonly ExpectationInput[];
  facts?: readonly FactInput[];
  withdraw?: readonly string[];
}

/** Path segments joined as the bridge joins them (`expectations/0/dueAt`, `~` and `/` escaped as in RFC 6901). */
const joinPath = (segments: readonly PropertyKey[]): string =>
  segments.map((segment) => String(segment).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

const withdrawIdsSchema = extensionMetadataSchema.shape.withdraw.unwrap();

/** Parses `value`, or adds its issues (under `prefix`) to `errors` and answers undefined. */
function collect<S extends z.ZodType>(
  schema: S,
  value: unknown,
  prefix: readonly PropertyKey[],
  errors: FieldError[],
): z.infer<S> | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    errors.push({ path: joinPath([...prefix, ...issue.path]), message: issue.message });
  return undefined;
}

/** `value` parsed by `schema`, or a WatcherValidationError naming each bad field under `prefix` (lapse-task.ts too). */
export function check<S extends z.ZodType>(
  what: string,
  schema: S,
  value: unknown,
  prefix: readonly PropertyKey[] = [],
): z.infer<S> {
  const errors: FieldError[] = [];
  const parsed = collect(schema, value, prefix, errors);
  if (errors.length > 0) throw new WatcherValidationError(what, errors);
  return parsed as z.infer<S>;
}

/** An expectation, checked against the extension's schema; throws WatcherValidationError naming each bad field. */
export function expectation(input: ExpectationInput): Expectation {
  return check('expectation', expectationSchema, input);
}

/** A fact to report, checked; `source` may be left out (the watcher sets it to the reporting principal). */
export function fact(input: FactInput): ReportedFact {
  return check('fact', reportedFactSchema, input);
}

/** A withdraw list (expectation ids, none empty), checked; paths read `withdraw/<i>`. */
export function withdrawList(ids: readonly string[]): string[] {
  return check('withdraw list', withdrawIdsSchema, ids, ['withdraw']);
}

/**
 * The payload for `metadata[EXTENSION_URI]`, every item checked at once: one WatcherValidationError names each bad
 * field by its path in the payload (`expectations/1/dueAt`, `facts/0/observedAt`, `withdraw/2`).
 */
export function extensionPayload(input: ExtensionPayloadInput): ExtensionPayload {
  const errors: FieldError[] = [];
  const payload: ExtensionPayload = {};
  if (input.expectations !== undefined) {
    payload.expectations = input.expectations.map((e, i) =>
      collect(expectationSchema, e, ['expectations', i], errors)!,
    );
  }
  if (input.facts !== undefined) {
    payload.facts = input.facts.map((f, i) => collect(reportedFactSchema, f, ['facts', i], errors)!);
  }
  if (input.withdraw !== undefined) payload.withdraw = collect(withdrawIdsSchema, input.withdraw, ['withdraw'], errors);
  if (errors.length > 0) throw new WatcherValidationError('extension payload', errors);
  return payload;
}

/**
 * A copy of an A2A message or artifact (ProtoJSON, v0.3 or an @a2a-js/sdk object) carrying the checked payload under
 * `metadata[EXTENSION_URI]` (replacing any there), its other metadata kept, and the URI listed in `extensions`.
 */
export function withExtension<T extends object>(
  target: T & { metadata?: Record<string, unknown> | undefined; extensions?: string[] | undefined },
  payload: ExtensionPayloadInput,
): T & { metadata: Record<string, unknown>; extensions: string[] } {
  const extensions = target.extensions ?? [];
  return {
    ...target,
    metadata: { ...target.metadata, [EXTENSION_URI]: extensionPayload(payload) },
    extensions: extensions.includes(EXTENSION_URI) ? extensions : [...extensions, EXTENSION_URI],
  };
}

/** The v1.0 push body of an artifact update, `{artifactUpdate: {taskId, contextId, artifact}}`, for `sendEvent`. */
export function artifactUpdateEvent(event: ArtifactUpdateInput): { artifactUpdate: ArtifactUpdateInput } {
  return { artifactUpdate: event };
}
