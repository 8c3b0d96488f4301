/**
 * Zod schemas mirroring `spec/expectations-v1.json` field by field. Every type of the extension comes from here.
 */
import { z } from 'zod';
import { addDurationParts, DURATION_PATTERN, LATEST_INSTANT_MS, matchDuration } from '../duration-math.js';
import { MAX_ITEMS } from '../limits.js';

/** The extension URI: the key of `metadata`, the value of the `A2A-Extensions` header. */
export const EXTENSION_URI = 'https://rsaxb.com/a2a/expectations/v1';

/** RFC 3339 instant in UTC (`Z`), as the seed's `date-time` fields require. */
export const utcDateTime = z.iso.datetime({
  message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z',
});

/**
 * ISO 8601 duration such as `PT6H` or `P30D`: the JSON Schema `duration` format (RFC 3339 Appendix A: weeks stand
 * alone), in the form the workflows compute with (core/duration-math.ts). One message for either failure.
 */
const rfc3339Duration = z.iso.duration();
export const isoDuration = z
  .string()
  .refine((value) => rfc3339Duration.safeParse(value).success && DURATION_PATTERN.test(value), {
    message: 'must be an ISO 8601 duration, e.g. PT6H or P7D',
  });

export { LATEST_INSTANT_MS };

/**
 * False only when both are well-formed and `instant` plus `duration` lies beyond LATEST_INSTANT_MS (or no instant at
 * all); malformed values have issues of their own.
 */
export function reachable(instant: string, duration: string): boolean {
  const start = Date.parse(instant);
  const parts = matchDuration(duration);
  if (Number.isNaN(start) || !parts) return true;
  const ms = addDurationParts(start, parts);
  return Number.isFinite(ms) && ms <= LATEST_INSTANT_MS;
}

const nonEmpty = (what: string) => z.string().min(1, { message: `${what} must not be empty` });

/** C0 controls and DEL: no Temporal workflow id, search attribute value or log line should carry them. */
// eslint-disable-next-line no-control-regex -- the control characters are what it looks for
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** A whole string free of CONTROL_CHARACTER: a pattern, so that the OpenAPI document states the rule too. */
// eslint-disable-next-line no-control-regex -- the control characters are what it excludes
export const NO_CONTROL_CHARACTER = /^[^\u0000-\u001f\u007f]*$/;

/** A non-empty identifier (an id, a key, a subject's type or id) without control characters. */
const identifier = (what: string) =>
  nonEmpty(what).regex(NO_CONTROL_CHARACTER, {
    message: `${what} must not contain control characters (U+0000 to U+001F, U+007F)`,
  });

/** `.` and `..`: as a URL path segment (the page's, a record's `links.self`) they name the folder or its parent. */
const DOT_SEGMENT = /^\.\.?$/;

/** NO_CONTROL_CHARACTER and no DOT_SEGMENT, as one pattern: what the OpenAPI document states of such an identifier. */
// eslint-disable-next-line no-control-regex -- the control characters are what it excludes
const SEGMENT_IDENTIFIER = /^(?!\.\.?$)[^\u0000-\u001f\u007f]*$/;

/**
 * An identifier that ends up in a URL path (expectation ids, fact keys, subject ids): as `identifier`, and not `.` or
 * `..`, which `new URL()` would resolve away, so that a link to it lands on another resource.
 */
const segmentIdentifier = (what: string) =>
  nonEmpty(what)
    .refine((value) => !DOT_SEGMENT.test(value), {
      message: `${what} must not be '.' or '..', which a URL path reads as the folder or its parent`,
      abort: true,
    })
    .regex(SEGMENT_IDENTIFIER, {
      message: `${what} must not contain control characters (U+0000 to U+001F, U+007F)`,
    });

export const subjectSchema = z.object({
  type: identifier('subject.type'),
  id: segmentIdentifier('subject.id'),
});
export type Subject = z.infer<typeof subjectSchema>;

export const expectationKindSchema = z.object({
  kind: identifier('kind'),
  subjectType: z.string(),
  // The seed's `minLength: 1` and its "MUST NOT be a placeholder" are one rule, checked for every kind alike with the
  // declaration's other rules (src/service/card-rules.ts: `describes-placeholder`).
  describes: z.string(),
  basis: z.string(),
  /** Skill ids whose tasks may raise this kind; absent means any. Each names a skill on the card (card-rules.ts). */
  skills: z.array(z.string()).optional(),
});
export type ExpectationKind = z.infer<typeof expectationKindSchema>;

/** `capabilities.extensions[].params` of an agent card that declares this extension. */
export const declarationParamsSchema = z.object({
  keepsTime: z.boolean(),
  lapseSkill: nonEmpty('lapseSkill'),
  // Read on every raise, and quoted in the answer when a kind is not among them: bounded (core/limits.ts).
  kinds: z
    .array(expectationKindSchema)
    .max(MAX_ITEMS.kinds, { message: `kinds must declare at most ${MAX_ITEMS.kinds} kinds (the watcher's bound)` }),
});
export type DeclarationParams = z.infer<typeof declarationParamsSchema>;

export const expectationSchema = z
  .object({
    expectationId: segmentIdentifier('expectationId'),
    kind: identifier('kind'),
    subject: subjectSchema,
    expects: nonEmpty('expects'),
    satisfiedBy: z.object({ factKey: segmentIdentifier('satisfiedBy.factKey') }),
    dueAt: utcDateTime,
    grace: isoDuration.optional(),
    anchor: z.object({ expectationId: segmentIdentifier('anchor.expectationId'), offset: isoDuration }).optional(),
    after: z.array(segmentIdentifier('after[]')).optional(),
    horizon: utcDateTime.optional(),
    basis: z.string(),
    supersedes: segmentIdentifier('supersedes').optional(),
  })
  .superRefine((e, ctx) => {
    // A deadline no clock can reach would lapse at once or never; refuse it here rather than start such a workflow.
    const beyond = 'dueAt plus this duration must fall no later than 9999-12-31T23:59:59.999Z';
    if (e.grace !== undefined && !reachable(e.dueAt, e.grace))
      ctx.addIssue({ code: 'custom', path: ['grace'], message: beyond });
    if (e.anchor && !reachable(e.dueAt, e.anchor.offset)) {
      ctx.addIssue({ code: 'custom', path: ['anchor', 'offset'], message: beyond });
    }
  });
export type Expectation = z.infer<typeof expectationSchema>;

/**
 * A fact as reported. `source` is required by the seed but attributed by the watcher, so a payload may omit it;
 * whatever it says is kept as `claimedSource`.
 */
export const reportedFactSchema = z.object({
  factKey: segmentIdentifier('factKey'),
  observedAt: utcDateTime,
  source: z.string().optional(),
  subject: subjectSchema.optional(),
});
export type ReportedFact = z.infer<typeof reportedFactSchema>;

/** A fact as the watcher records it: `source` is the authenticated principal. */
export const factSchema = z.object({
  factKey: z.string(),
  observedAt: utcDateTime,
  source: z.string(),
  claimedSource: z.string().optional(),
  subject: subjectSchema.optional(),
  /**
   * When a bridge accepted the request that carried it (DESIGN 3.2): this, not when a workflow sees the fact, decides
   * which deadlines it came before.
   */
  receivedAt: utcDateTime.optional(),
});
export type Fact = z.infer<typeof factSchema>;

/** The lapses this watcher raises (DESIGN 3.3); the only values it writes. */
export const lapseKinds = ['overdue', 'skipped', 'stalled'] as const;
export type LapseKind = (typeof lapseKinds)[number];

/**
 * A lapse value as a reader takes it: the seed's `lapse` is an open set (an agent receiving one it does not know
 * treats it as `overdue`), so a later watcher may send one this one never raises. `(string & {})` keeps the known
 * three for completion without closing the set.
 */
export type OpenLapseKind = LapseKind | (string & {});

/** OpenLapseKind as a schema: the clients' reading of `lapse`, and the OpenAPI document's (`anyOf` the known or any string). */
export const openLapseKindSchema: z.ZodType<OpenLapseKind> = z
  .union([z.enum(lapseKinds), z.string()])
  .describe(
    `One of ${lapseKinds.join(', ')} (this watcher raises no other), or a value a later watcher adds: an open set, ` +
      'so a client must take any string, and an agent treats one it does not know as overdue',
  );

export const lapseSchema = z.object({
  expectationId: z.string(),
  kind: z.string(),
  subject: subjectSchema,
  expects: z.string(),
  lapse: z.enum(lapseKinds),
  projectedDueAt: utcDateTime,
  dueAt: utcDateTime,
  lapsedAt: utcDateTime,
  lastFactAt: utcDateTime.optional(),
  satisfiedAfter: z.array(z.string()).optional(),
  lineage: z.number().int().min(0),
});
export type Lapse = z.infer<typeof lapseSchema>;

/** A lapse as a client reads it (a lapse task's metadata, a record): `lapse` an OpenLapseKind, the rest as lapseSchema. */
export const openLapseSchema = lapseSchema.extend({ lapse: openLapseKindSchema });
export type OpenLapse = z.infer<typeof openLapseSchema>;

export const expectationStates = ['open', 'satisfied', 'lapsed', 'withdrawn'] as const;
export type ExpectationState = (typeof expectationStates)[number];

/** The extension payload found under `metadata[EXTENSION_URI]` of an A2A object. */
export const extensionMetadataSchema = z.object({
  expectations: z.array(z.unknown()).optional(),
  facts: z.array(z.unknown()).optional(),
  withdraw: z.array(segmentIdentifier('withdraw[]')).optional(),
  lapse: z.unknown().optional(),
});

/** The members of metadata[URI] the watcher reads; any other is answered as ignored. */
export const EXTENSION_MEMBERS: ReadonlySet<string> = new Set(Object.keys(extensionMetadataSchema.shape));
