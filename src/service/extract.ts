/**
 * Finds the extension's payloads in one A2A object (DESIGN 3.1, 3.2, 3.6): expectations in artifacts and in the
 * status message of an input-required task or status update; facts in artifacts, messages, status messages and
 * task history; withdraw lists in artifacts. Every item keeps the path where it was found, so that an error can
 * name the exact field of the request body. Also whether an artifact or message of the object lists the extension
 * in its `extensions`: activation where no header can carry it (a push notification).
 */
import type { A2AEvent } from '../schemas/a2a.js';
import { EXTENSION_MEMBERS, EXTENSION_URI, extensionMetadataSchema } from '../../core/schemas/extension.js';
import type { Origin } from '../../core/schemas/record.js';
import { joinPath, type FieldError } from './errors.js';

/** Where the origin's ids are in the request body, so that an over-long one is named by its path. */
export interface OriginPaths {
  taskId?: PropertyKey[];
  contextId?: PropertyKey[];
}

/** An item of the request with its path in the body. */
export interface Located<T = unknown> {
  path: PropertyKey[];
  value: T;
}

export interface ExtractedEvent {
  origin: Origin;
  /** Where the origin's task id and context id are in the body. */
  originPaths: OriginPaths;
  expectations: Located[];
  facts: Located[];
  withdraw: Located<string>[];
  /** metadata[URI] present but not of the extension's shape (400). */
  schemaErrors: FieldError[];
  /** Expectations or withdraw lists where the extension does not allow them (422). */
  placementErrors: FieldError[];
  /** What the object carries that is read but not applied, each with its reason: answered as warnings, never dropped. */
  notApplied: FieldError[];
  /** An artifact or message of the object lists EXTENSION_URI in its `extensions` (A2A v1.0 and v0.3 alike). */
  activated: boolean;
}

type Place = 'artifact' | 'input-required-status' | 'status' | 'message' | 'history';

interface Container {
  path: PropertyKey[];
  metadata: Record<string, unknown> | undefined;
  extensions?: string[];
  place: Place;
}

/** What a container is read for: an artifact or a message. */
interface Contents {
  metadata?: Record<string, unknown>;
  extensions?: string[];
}

const INPUT_REQUIRED = new Set(['TASK_STATE_INPUT_REQUIRED', 'input-required']);

/** Extracts expectations, facts and withdraw lists from a parsed A2A object. */
export function extractEvent({ version, event }: A2AEvent): ExtractedEvent {
  const containers: Container[] = [];
  let origin: Origin;
  let originPaths: OriginPaths;
  const at = (prefix: PropertyKey[], taskId: string): OriginPaths => ({
    taskId: [...prefix, taskId],
    contextId: [...prefix, 'contextId'],
  });

  const add = (path: PropertyKey[], { metadata, extensions }: Contents, place: Place) =>
    containers.push({ path, metadata, extensions, place });
  const addTask = (
    prefix: PropertyKey[],
    task: { status?: { state: string; message?: Contents }; artifacts?: Contents[]; history?: Contents[] },
  ) => {
    task.artifacts?.forEach((artifact, i) => add([...prefix, 'artifacts', i], artifact, 'artifact'));
    addStatus(prefix, task.status);
    task.history?.forEach((message, i) => add([...prefix, 'history', i], message, 'history'));
  };
  const addStatus = (prefix: PropertyKey[], status: { state: string; message?: Contents } | undefined) => {
    if (!status?.message) return;
    const place = INPUT_REQUIRED.has(status.state) ? 'input-required-status' : 'status';
    add([...prefix, 'status', 'message'], status.message, place);
  };

  if (version === '0.3') {
    switch (event.kind) {
      case 'task':
        origin = { taskId: event.id, contextId: event.contextId };
        originPaths = at([], 'id');
        addTask([], event);
        break;
      case 'message':
        origin = { taskId: event.taskId, contextId: event.contextId };
        originPaths = at([], 'taskId');
        add([], event, 'message');
        break;
      case 'status-update':
        origin = { taskId: event.taskId, contextId: event.contextId };
        originPaths = at([], 'taskId');
        addStatus([], event.status);
        break;
      case 'artifact-update':
        origin = { taskId: event.taskId, contextId: event.contextId };
        originPaths = at([], 'taskId');
        add(['artifact'], event.artifact, 'artifact');
        break;
    }
  } else if ('task' in event) {
    origin = { taskId: event.task.id, contextId: event.task.contextId };
    originPaths = at(['task'], 'id');
    addTask(['task'], event.task);
  } else if ('message' in event) {
    origin = { taskId: event.message.taskId || undefined, contextId: event.message.contextId || undefined };
    originPaths = at(['message'], 'taskId');
    add(['message'], event.message, 'message');
  } else if ('statusUpdate' in event) {
    origin = { taskId: event.statusUpdate.taskId, contextId: event.statusUpdate.contextId };
    originPaths = at(['statusUpdate'], 'taskId');
    addStatus(['statusUpdate'], event.statusUpdate.status);
  } else {
    origin = { taskId: event.artifactUpdate.taskId, contextId: event.artifactUpdate.contextId };
    originPaths = at(['artifactUpdate'], 'taskId');
    add(['artifactUpdate', 'artifact'], event.artifactUpdate.artifact, 'artifact');
  }

  const extracted: ExtractedEvent = {
    origin: withoutUndefined(origin),
    originPaths,
    expectations: [],
    facts: [],
    withdraw: [],
    schemaErrors: [],
    placementErrors: [],
    notApplied: [],
    activated: containers.some((container) => container.extensions?.includes(EXTENSION_URI) ?? false),
  };
  for (const container of containers) collect(container, extracted);
  return extracted;
}

function collect(container: Container, out: ExtractedEvent): void {
  const payload = container.metadata?.[EXTENSION_URI];
  if (payload === undefined) return;
  const base = [...container.path, 'metadata', EXTENSION_URI];
  const parsed = extensionMetadataSchema.safeParse(payload);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      out.schemaErrors.push({ path: joinPath([...base, ...issue.path]), message: issue.message });
    }
    return;
  }
  out.notApplied.push(...unknownMembers(payload, base));
  const { expectations, facts, withdraw } = parsed.data;
  facts?.forEach((value, i) => out.facts.push({ path: [...base, 'facts', i], value }));

  // History holds earlier messages: expectations there were raised (or refused) when they were current.
  if (container.place === 'history') {
    if (expectations?.length)
      out.notApplied.push({
        path: joinPath([...base, 'expectations']),
        rule: 'history-not-raised',
        message: HISTORY_NOT_RAISED,
      });
    if (withdraw?.length)
      out.notApplied.push({
        path: joinPath([...base, 'withdraw']),
        rule: 'history-not-withdrawn',
        message: HISTORY_NOT_WITHDRAWN,
      });
    return;
  }

  if (expectations?.length) {
    if (container.place === 'artifact' || container.place === 'input-required-status') {
      expectations.forEach((value, i) => out.expectations.push({ path: [...base, 'expectations', i], value }));
    } else {
      out.placementErrors.push({
        path: joinPath([...base, 'expectations']),
        rule: 'expectations-placement',
        message:
          container.place === 'message'
            ? 'expectations are raised only in artifacts or in the status message of an input-required task; a plain message may carry facts only'
            : 'expectations in a status message are raised only when the task state is input-required',
      });
    }
  }
  if (withdraw?.length) {
    if (container.place === 'artifact') {
      withdraw.forEach((value, i) => out.withdraw.push({ path: [...base, 'withdraw', i], value }));
    } else {
      out.placementErrors.push({
        path: joinPath([...base, 'withdraw']),
        rule: 'withdraw-placement',
        message: 'withdraw lists are carried only in artifacts',
      });
    }
  }
}

const HISTORY_NOT_RAISED =
  "not raised: a task's history holds its earlier messages, whose expectations were raised (or refused) when they " +
  'were current; raise an expectation in an artifact or in the status message of an input-required task';
const HISTORY_NOT_WITHDRAWN =
  "not withdrawn: a task's history holds its earlier messages; withdraw lists are carried only in artifacts";

/** The members of metadata[URI] that `read` (the extension's, by default) does not hold: ignored, and said so. */
export function unknownMembers(
  payload: unknown,
  base: PropertyKey[],
  read: ReadonlySet<string> = EXTENSION_MEMBERS,
): FieldError[] {
  if (typeof payload !== 'object' || payload === null) return [];
  return Object.keys(payload)
    .filter((key) => !read.has(key))
    .map((key) => ({
      path: joinPath([...base, key]),
      rule: 'unknown-member',
      message: `ignored: not a member of the extension's metadata (${[...read].join(', ')})`,
    }));
}

function withoutUndefined(origin: Origin): Origin {
  return Object.fromEntries(Object.entries(origin).filter(([, v]) => v !== undefined && v !== '')) as Origin;
}
