/**
 * Workflow ids, built here and nowhere else (DESIGN 2). Ids are business keys an operator can type into the UI.
 * Pure (the hash is core/sha256.ts, not node:crypto), so the bridge, the activities and the workflows share them.
 */
import { shardOf, subjectShardOf, utf8Length } from './fact-shards.js';
import type { Subject } from './schemas/extension.js';
import { sha256Hex as sha256 } from './sha256.js';

/**
 * Longest id or keyword value kept as it is. As DESIGN 2 says, Temporal's SQL persistence (PostgreSQL,
 * MySQL, the compose stack) stores workflow ids and keyword search attributes in 255-character columns.
 */
export const MAX_KEY_BYTES = 255;

const fits = (text: string): boolean => utf8Length(text) <= MAX_KEY_BYTES;

/** Keeps an id within MAX_KEY_BYTES: a longer one becomes `<prefix>:sha256:<hex of the whole original>`. */
// An id that already reads `<prefix>:sha256:…` is hashed too, or it could name another's long one.
function bounded(prefix: string, id: string): string {
  const hashed = `${prefix}:sha256:`;
  return fits(id) && !id.startsWith(hashed) ? id : `${hashed}${sha256(id)}`;
}

/** A keyword search attribute value within MAX_KEY_BYTES: a longer one, or one that reads `sha256:…`, becomes `sha256:<hex>`. */
export const keywordValue = (value: string): string =>
  fits(value) && !value.startsWith(HASHED) ? value : `${HASHED}${sha256(value)}`;

const HASHED = 'sha256:';

export const expectationWorkflowId = (expectationId: string): string =>
  bounded('expectation', `expectation:${expectationId}`);

/**
 * The fact router that serves `factKey` for the workers of `taskQueue` (core/fact-shards.ts): `facts:<taskQueue>:<nnn>`,
 * three digits so that the ids sort. A router per task queue, so that two deployments in one namespace share none.
 */
export const factRouterWorkflowId = (factKey: string, taskQueue: string): string =>
  routerWorkflowId(shardOf(factKey), taskQueue);

/** The router that stores the facts on `subject` (core/fact-shards.ts): one of the same set, on the same task queue. */
export const subjectRouterWorkflowId = (subject: Subject, taskQueue: string): string =>
  routerWorkflowId(subjectShardOf(subject), taskQueue);

/**
 * The task queue the fact routers run on: their own, so that a busy feed batches facts per router task instead of
 * crowding the expectations' tasks.
 */
export const routerTaskQueue = (taskQueue: string): string => `${taskQueue}-routers`;

/** Router `shard` of `taskQueue`: `facts:<taskQueue>:<nnn>`. */
export const routerWorkflowId = (shard: number, taskQueue: string): string =>
  bounded('facts', `facts:${taskQueue}:${String(shard).padStart(3, '0')}`);

/**
 * The subject type as it stands before the first `/` of a subject key: `%` and `/` percent-encoded (`%25`, `%2F`),
 * everything else as it is. A type such as `shipment` reads the same; `org/unit` becomes `org%2Funit`.
 */
const keyType = (type: string): string => type.replace(/[%/]/g, (c) => (c === '%' ? '%25' : '%2F'));

/**
 * The value of the `ExpectationSubject` search attribute, `type/id`: the type with `%` and `/` percent-encoded, so
 * that the first `/` always ends it (the schema lets both type and id hold any character), and the id as it is. A
 * long id (or one that reads `sha256:…`, the hashed form) is hashed (`type/sha256:<hex>`) so that a filter on the type alone (`STARTS_WITH "type/"`) still finds it.
 */
export function subjectKey(subject: Subject): string {
  const type = keyType(subject.type);
  const key = `${type}/${subject.id}`;
  return fits(key) && !subject.id.startsWith(HASHED) ? key : keywordValue(`${type}/${HASHED}${sha256(subject.id)}`);
}

/** What `STARTS_WITH` matches for every subject of one type: the type as in subjectKey, and its `/`. */
export const subjectTypePrefix = (type: string): string => `${keyType(type)}/`;

/**
 * The subject a subject key names: split at the first `/`, the type decoded. A key with no `/` (the type was too
 * long to keep) names none. The id of a hashed key reads `sha256:<hex>`.
 */
export function parseSubjectKey(key: string): Subject | undefined {
  const slash = key.indexOf('/');
  if (slash <= 0) return undefined;
  const type = key.slice(0, slash).replace(/%(25|2F)/gi, (_, hex: string) => (hex === '25' ? '%' : '/'));
  return { type, id: key.slice(slash + 1) };
}

/** Workflow ids of everything the expectation talks to (its input's `links`, workflows/messages.ts). */
export interface ExpectationLinks {
  self: string;
  factRouter: string;
  /** The router that stores the facts on the expectation's subject (it may be `factRouter` itself). */
  subjectRouter: string;
  /** expectationId → workflow id, for each id of `after`. */
  after: Record<string, string>;
  anchor?: string;
  supersedes?: string;
}

/** Every workflow id an expectation talks to, on `taskQueue`. */
export function expectationLinks(
  expectation: {
    expectationId: string;
    subject: Subject;
    satisfiedBy: { factKey: string };
    after?: string[];
    anchor?: { expectationId: string };
    supersedes?: string;
  },
  taskQueue: string,
): ExpectationLinks {
  return {
    self: expectationWorkflowId(expectation.expectationId),
    factRouter: factRouterWorkflowId(expectation.satisfiedBy.factKey, taskQueue),
    subjectRouter: subjectRouterWorkflowId(expectation.subject, taskQueue),
    after: Object.fromEntries((expectation.after ?? []).map((id) => [id, expectationWorkflowId(id)])),
    anchor: expectation.anchor ? expectationWorkflowId(expectation.anchor.expectationId) : undefined,
    supersedes: expectation.supersedes ? expectationWorkflowId(expectation.supersedes) : undefined,
  };
}
