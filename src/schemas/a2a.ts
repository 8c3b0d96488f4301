/**
 * Zod schemas of the A2A objects the bridge reads: v1.0 ProtoJSON (the StreamResponse-like wrapper
 * `{task}|{message}|{statusUpdate}|{artifactUpdate}`, enum names such as `TASK_STATE_INPUT_REQUIRED`) and the
 * v0.3 forms discriminated by `kind`. Strict about the fields the bridge reads (ids, status state, metadata),
 * lenient (loose objects) about everything else, so that parts and future fields pass through untouched.
 * Agent cards are read by activities/agent-card/ (its schema.ts).
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
