/**
 * Zod schemas of the A2A objects the bridge reads: v1.0 ProtoJSON (the StreamResponse-like wrapper
 * `{task}|{message}|{statusUpdate}|{artifactUpdate}`, enum names such as `TASK_STATE_INPUT_REQUIRED`) and the
 * v0.3 forms discriminated by `kind`. Strict about the fields the bridge reads (ids, status state, metadata),
 * lenient (loose objects) about everything else, so that parts and future fields pass through untouched.
 */
import { z } from 'zod';

const metadata = z.record(z.string(), z.unknown()).optional();
/**
 * `Message.extensions` and `Artifact.extensions` (v1.0 and v0.3 alike): the URIs of the extensions the object carries
 * data of, which activate ours where no header can (a push notification). Read only for that, so a malformed list
 * reads as absent rather than refusing the object.
 */
const extensions = z.array(z.string()).optional().catch(undefined);
const id = (what: string) => z.string().min(1, { message: `${what} must not be empty` });

// Fields both versions share, spread in place so that every object keeps its field order.
const taskIds = { id: id('id'), contextId: id('contextId') };
const eventTaskIds = { taskId: id('taskId'), contextId: id('contextId') };
const artifactNames = { artifactId: z.string().optional(), name: z.string().optional() };
const chunking = { append: z.boolean().optional(), lastChunk: z.boolean().optional() };

// ── v1.0 (ProtoJSON) ───────────────────────────────────────────────────────────────────────────────────────

/** Enum names of `lf.a2a.v1.TaskState`; ProtoJSON parsers also accept the numbers. */
export const taskStatesV1 = [
  'TASK_STATE_UNSPECIFIED',
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;

const taskStateV1 = z.union([
  z.enum(taskStatesV1),
  z
    .number()
    .int()
    .min(0)
    .max(taskStatesV1.length - 1)
    .transform((n) => taskStatesV1[n]!),
]);

export const partV1Schema = z.looseObject({ metadata });

export const messageV1Schema = z.looseObject({
  messageId: z.string().optional(),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  role: z.union([z.string(), z.number()]).optional(),
  parts: z.array(partV1Schema).optional(),
  metadata,
  extensions,
});
export type MessageV1 = z.infer<typeof messageV1Schema>;

export const taskStatusV1Schema = z.looseObject({
  // ProtoJSON omits the default (UNSPECIFIED) value.
  state: taskStateV1.default('TASK_STATE_UNSPECIFIED'),
  message: messageV1Schema.optional(),
  timestamp: z.string().optional(),
});

export const artifactV1Schema = z.looseObject({
  ...artifactNames,
  parts: z.array(partV1Schema).optional(),
  metadata,
  extensions,
});
export type ArtifactV1 = z.infer<typeof artifactV1Schema>;

export const taskV1Schema = z.looseObject({
  ...taskIds,
  status: taskStatusV1Schema.optional(),
  artifacts: z.array(artifactV1Schema).optional(),
  history: z.array(messageV1Schema).optional(),
  metadata,
});
export type TaskV1 = z.infer<typeof taskV1Schema>;

export const taskStatusUpdateEventV1Schema = z.looseObject({
  ...eventTaskIds,
  status: taskStatusV1Schema.optional(),
  metadata,
});

export const taskArtifactUpdateEventV1Schema = z.looseObject({
  ...eventTaskIds,
  artifact: artifactV1Schema,
  ...chunking,
  metadata,
});

/** The v1.0 push-notification body: a StreamResponse with exactly one payload field. */
export const streamResponseV1Schema = z.union([
  z.object({ task: taskV1Schema }),
  z.object({ message: messageV1Schema }),
  z.object({ statusUpdate: taskStatusUpdateEventV1Schema }),
  z.object({ artifactUpdate: taskArtifactUpdateEventV1Schema }),
]);
export type StreamResponseV1 = z.infer<typeof streamResponseV1Schema>;

// ── v0.3 (`kind`) ──────────────────────────────────────────────────────────────────────────────────────────

export const taskStatesV03 = [
  'submitted',
  'working',
  'input-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
  'auth-required',
  'unknown',
] as const;

export const messageV03Schema = z.looseObject({
  kind: z.literal('message'),
  messageId: z.string().optional(),
  role: z.string().optional(),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  parts: z.array(z.looseObject({})).optional(),
  metadata,
  extensions,
});

const taskStatusV03Schema = z.looseObject({
  state: z.enum(taskStatesV03),
  message: messageV03Schema.optional(),
  timestamp: z.string().optional(),
});

export const artifactV03Schema = z.looseObject({
  ...artifactNames,
  parts: z.array(z.looseObject({})).optional(),
  metadata,
  extensions,
});

export const taskV03Schema = z.looseObject({
  kind: z.literal('task'),
  ...taskIds,
  status: taskStatusV03Schema,
  artifacts: z.array(artifactV03Schema).optional(),
  history: z.array(messageV03Schema).optional(),
  metadata,
});

export const taskStatusUpdateEventV03Schema = z.looseObject({
  kind: z.literal('status-update'),
  ...eventTaskIds,
  status: taskStatusV03Schema,
  final: z.boolean().optional(),
  metadata,
});

export const taskArtifactUpdateEventV03Schema = z.looseObject({
  kind: z.literal('artifact-update'),
  ...eventTaskIds,
  artifact: artifactV03Schema,
  ...chunking,
  metadata,
});

export const eventV03Schema = z.discriminatedUnion('kind', [
  taskV03Schema,
  messageV03Schema,
  taskStatusUpdateEventV03Schema,
  taskArtifactUpdateEventV03Schema,
]);
export type EventV03 = z.infer<typeof eventV03Schema>;

// ── either ─────────────────────────────────────────────────────────────────────────────────────────────────

export const streamResponseFields = ['task', 'message', 'statusUpdate', 'artifactUpdate'] as const;
const payloadSchemaV1 = {
  task: taskV1Schema,
  message: messageV1Schema,
  statusUpdate: taskStatusUpdateEventV1Schema,
  artifactUpdate: taskArtifactUpdateEventV1Schema,
} as const;

export type A2AEvent = { version: '0.3'; event: EventV03 } | { version: '1.0'; event: StreamResponseV1 };

/**
 * Parses the body of `POST /a2a/events`: an object with `kind` is v0.3; any other object must carry exactly one
 * of the v1.0 StreamResponse fields. Dispatches by hand (not a zod union) so that issue paths stay exact.
 */
export function parseA2AEvent(
  body: unknown,
): { success: true; data: A2AEvent } | { success: false; issues: z.core.$ZodIssue[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { success: false, issues: [customIssue([], 'must be a JSON object')] };
  }
  if ('kind' in body) {
    const parsed = eventV03Schema.safeParse(body);
    return parsed.success
      ? { success: true, data: { version: '0.3', event: parsed.data } }
      : { success: false, issues: parsed.error.issues };
  }
  const present = streamResponseFields.filter((field) => field in body);
  if (present.length !== 1) {
    const message =
      present.length === 0
        ? 'must be a v1.0 StreamResponse ({task}, {message}, {statusUpdate} or {artifactUpdate}) or a v0.3 object with kind'
        : `must carry exactly one of task, message, statusUpdate, artifactUpdate (found ${present.join(', ')})`;
    return { success: false, issues: [customIssue([], message)] };
  }
  const field = present[0]!;
  const parsed = payloadSchemaV1[field].safeParse((body as Record<string, unknown>)[field]);
  if (!parsed.success) {
    return { success: false, issues: parsed.error.issues.map((issue) => ({ ...issue, path: [field, ...issue.path] })) };
  }
  return { success: true, data: { version: '1.0', event: { [field]: parsed.data } as StreamResponseV1 } };
}

function customIssue(path: PropertyKey[], message: string): z.core.$ZodIssue {
  return { code: 'custom', path, message, input: undefined };
}

// ── agent cards ────────────────────────────────────────────────────────────────────────────────────────────

/** ProtoJSON omits an empty string; the SDK's in-memory objects keep it. Both read as absent. */
const text = z
  .string()
  .optional()
  .transform((value) => value || undefined);

/** The fields of each kind of security scheme, by its v0.3 `type` (the OpenAPI name); other fields are dropped. */
const securitySchemeFields = {
  apiKey: z.object({ description: text, location: z.string(), name: z.string() }),
  http: z.object({ description: text, scheme: z.string(), bearerFormat: text }),
  oauth2: z.object({ description: text, oauth2MetadataUrl: text }),
  openIdConnect: z.object({ description: text, openIdConnectUrl: z.string() }),
  mutualTLS: z.object({ description: text }),
} as const;
type SecuritySchemeType = keyof typeof securitySchemeFields;

/** A security scheme of a card, whichever way the card spelt it; `unrecognized` when it matched no form. */
export type SecuritySchemeInfo =
  | { [T in SecuritySchemeType]: { type: T } & z.infer<(typeof securitySchemeFields)[T]> }[SecuritySchemeType]
  | { type: 'unrecognized' };

/** The `oneof scheme` of A2A v1.0 `SecurityScheme`: its ProtoJSON (and proto) field names, by type. */
const securitySchemeOneof: Record<string, SecuritySchemeType> = {
  apiKeySecurityScheme: 'apiKey',
  api_key_security_scheme: 'apiKey',
  httpAuthSecurityScheme: 'http',
  http_auth_security_scheme: 'http',
  oauth2SecurityScheme: 'oauth2',
  oauth2_security_scheme: 'oauth2',
  openIdConnectSecurityScheme: 'openIdConnect',
  open_id_connect_security_scheme: 'openIdConnect',
  mtlsSecurityScheme: 'mutualTLS',
  mtls_security_scheme: 'mutualTLS',
};

const unrecognized: SecuritySchemeInfo = { type: 'unrecognized' };

function readScheme(type: SecuritySchemeType | undefined, fields: unknown): SecuritySchemeInfo {
  if (type === undefined) return unrecognized;
  const parsed = securitySchemeFields[type].safeParse(fields);
  return parsed.success ? ({ type, ...parsed.data } as SecuritySchemeInfo) : unrecognized;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * One entry of a card's `securitySchemes`, in any of the three forms cards are served in: A2A v1.0 ProtoJSON
 * (`{"httpAuthSecurityScheme": {"scheme": "Bearer"}}`), v0.3 (`{"type": "http", "scheme": "bearer"}`, with `in` for
 * an API key's location), and @a2a-js/sdk's in-memory objects as its card handler serialises them
 * (`{"scheme": {"$case": "httpAuthSecurityScheme", "value": {...}}}`). Never fails: a scheme the watcher cannot read
 * is `unrecognized` (cards are read for their declaration; a scheme nobody uses must not make a card unreadable).
 */
export const securitySchemeSchema = z.unknown().transform((entry): SecuritySchemeInfo => {
  if (!isRecord(entry)) return unrecognized;
  const oneof = Object.keys(entry).filter((key) => key in securitySchemeOneof);
  if (oneof.length === 1) return readScheme(securitySchemeOneof[oneof[0]!], entry[oneof[0]!]);
  if (oneof.length > 1) return unrecognized; // a oneof with two members set
  if (isRecord(entry.scheme) && typeof entry.scheme.$case === 'string') {
    return readScheme(securitySchemeOneof[entry.scheme.$case], entry.scheme.value);
  }
  if (typeof entry.type === 'string' && entry.type in securitySchemeFields) {
    const { type, in: location, ...fields } = entry;
    return readScheme(type as SecuritySchemeType, location === undefined ? fields : { ...fields, location });
  }
  return unrecognized;
});

/**
 * One security requirement as scheme name → scopes: v1.0 `{"schemes": {"bearer": {"list": []}}}` (ProtoJSON may
 * omit the empty list), v0.3 `{"bearer": []}`. Null when it is neither.
 */
const securityRequirementSchema = z
  .union([
    z
      .object({ schemes: z.record(z.string(), z.object({ list: z.array(z.string()).optional() })) })
      .transform(({ schemes }) =>
        Object.fromEntries(Object.entries(schemes).map(([name, scopes]) => [name, scopes.list ?? []])),
      ),
    z.record(z.string(), z.array(z.string())),
  ])
  .nullable()
  .catch(null);

/**
 * What the watcher reads of an agent card (A2A v1.0 ProtoJSON; v0.3 accepted): the interfaces or the v0.3 url, the
 * extension declarations, the skill ids and how to authenticate. Lenient about everything else; a malformed
 * security field reads as absent rather than making the card unreadable.
 */
export const agentCardSchema = z.looseObject({
  name: z.string().optional(),
  /** v1.0 */
  supportedInterfaces: z.array(z.looseObject({})).optional(),
  /** v0.3 */
  protocolVersion: z.string().optional(),
  url: z.string().optional(),
  capabilities: z
    .looseObject({
      // Entries stay unread here: only the one with our URI matters (src/a2a/card.ts), so another extension's entry
      // the watcher cannot read must not make the card unreadable. A list that is not a list holds no entry.
      extensions: z.array(z.unknown()).optional().catch(undefined),
    })
    .optional(),
  skills: z.array(z.looseObject({ id: z.string() })).optional(),
  securitySchemes: z.record(z.string(), securitySchemeSchema).optional().catch(undefined),
  /** v1.0 */
  securityRequirements: z.array(securityRequirementSchema).optional().catch(undefined),
  /** v0.3 */
  security: z.array(securityRequirementSchema).optional().catch(undefined),
});
