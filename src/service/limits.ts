/**
 * The bounds of core/limits.ts applied to one request, as pure functions: nothing here calls Temporal, so a request
 * over a bound is refused before any look-up or start. Counts of a whole request are a 413 (`too-many-items`: split
 * it); a field over its bound is a 422 (rule `max-length` or `max-items`: no split helps). Each field error names the
 * path and carries the `limit`.
 */
import { MAX_ITEMS, MAX_LENGTH } from '../../core/limits.js';
import type { Expectation, ReportedFact } from '../../core/schemas/extension.js';
import type { Origin } from '../../core/schemas/record.js';
import { joinPath, TooManyItemsError, type FieldError } from './errors.js';
import type { Located, OriginPaths } from './extract.js';

/** What a request carries, before its items are parsed: only their number and places are read. */
export interface Counted {
  expectations: readonly Located[];
  facts: readonly Located[];
  withdraw: readonly Located[];
}

const plural: Record<keyof Counted, string> = {
  expectations: 'expectations',
  facts: 'facts',
  withdraw: 'withdraw ids',
};

/**
 * Throws TooManyItemsError (413) when the request carries more expectations, facts or withdraw ids than one request
 * may; each error is at the first item past the bound (the items of one request may sit in several lists).
 */
export function checkCounts(request: Counted): void {
  const errors: FieldError[] = [];
  for (const list of ['expectations', 'facts', 'withdraw'] as const) {
    const items = request[list];
    const limit = MAX_ITEMS[list];
    if (items.length <= limit) continue;
    errors.push({
      path: joinPath(items[limit]!.path),
      rule: 'max-items',
      limit,
      message: `one request carries at most ${limit} ${plural[list]}; this one carries ${items.length}: send the rest in another`,
    });
  }
  if (errors.length === 0) return;
  throw new TooManyItemsError(
    errors.length === 1 ? errors[0]!.message : `${errors.length} lists are over their bounds; see errors`,
    errors,
  );
}

/** Every expectation id the request refers to, in the order referencedIds (ingest-plan.ts) looks them up, with its path. */
function references(expectations: readonly Located<Expectation>[], withdraw: readonly Located<string>[]) {
  const found: Array<{ id: string; path: PropertyKey[] }> = [];
  for (const { path, value: e } of expectations) {
    found.push({ id: e.expectationId, path: [...path, 'expectationId'] });
    e.after?.forEach((id, j) => found.push({ id, path: [...path, 'after', j] }));
    if (e.anchor) found.push({ id: e.anchor.expectationId, path: [...path, 'anchor', 'expectationId'] });
    if (e.supersedes !== undefined) found.push({ id: e.supersedes, path: [...path, 'supersedes'] });
  }
  for (const { path, value } of withdraw) found.push({ id: value, path });
  return found;
}

/**
 * Throws TooManyItemsError (413) when the request refers to more distinct expectation ids than one request may
 * look up; the error is at the first reference past the bound.
 */
export function checkReferenceCount(
  expectations: readonly Located<Expectation>[],
  withdraw: readonly Located<string>[],
): void {
  const seen = new Set<string>();
  const limit = MAX_ITEMS.references;
  for (const { id, path } of references(expectations, withdraw)) {
    seen.add(id);
    if (seen.size <= limit) continue;
    const total = new Set(references(expectations, withdraw).map((r) => r.id)).size;
    const message = `one request refers to at most ${limit} distinct expectation ids (its own, after, anchor, supersedes, withdraw); this one refers to ${total}`;
    throw new TooManyItemsError(message, [{ path: joinPath(path), rule: 'max-items', limit, message }]);
  }
}

type Bound = keyof typeof MAX_LENGTH;

/** The field error of a text over its bound, or nothing. */
function tooLong(path: PropertyKey[], value: string | undefined, bound: Bound): FieldError[] {
  const limit = MAX_LENGTH[bound];
  if (value === undefined || value.length <= limit) return [];
  return [
    {
      path: joinPath(path),
      rule: 'max-length',
      limit,
      message: `must be at most ${limit} characters (this one has ${value.length})`,
    },
  ];
}

/** The bounded text fields of an expectation, each with its path suffix and bound. */
function expectationFields(e: Expectation): Array<[PropertyKey[], string | undefined, Bound]> {
  return [
    [['expectationId'], e.expectationId, 'id'],
    [['kind'], e.kind, 'kind'],
    [['subject', 'type'], e.subject.type, 'subjectType'],
    [['subject', 'id'], e.subject.id, 'subjectId'],
    [['expects'], e.expects, 'expects'],
    [['satisfiedBy', 'factKey'], e.satisfiedBy.factKey, 'factKey'],
    [['dueAt'], e.dueAt, 'instant'],
    [['grace'], e.grace, 'duration'],
    [['anchor', 'expectationId'], e.anchor?.expectationId, 'id'],
    [['anchor', 'offset'], e.anchor?.offset, 'duration'],
    ...(e.after ?? []).map((id, j): [PropertyKey[], string, Bound] => [['after', j], id, 'id']),
    [['horizon'], e.horizon, 'instant'],
    [['basis'], e.basis, 'basis'],
    [['supersedes'], e.supersedes, 'id'],
  ];
}

function factFields(f: ReportedFact): Array<[PropertyKey[], string | undefined, Bound]> {
  return [
    [['factKey'], f.factKey, 'factKey'],
    [['observedAt'], f.observedAt, 'instant'],
    [['source'], f.source, 'source'],
    [['subject', 'type'], f.subject?.type, 'subjectType'],
    [['subject', 'id'], f.subject?.id, 'subjectId'],
  ];
}

/** What the field checks read: the parsed items and the origin with where it came from. */
export interface Bounded {
  origin: Origin;
  originPaths?: OriginPaths;
  expectations: readonly Located<Expectation>[];
  facts: readonly Located<ReportedFact>[];
  withdraw: readonly Located<string>[];
}

/**
 * The fields over their bounds (422): every text field of every item and the origin's ids (`max-length`), and an
 * `after` list longer than MAX_ITEMS.after (`max-items`, at the list). Empty when all fit.
 */
export function fieldLimitErrors(request: Bounded): FieldError[] {
  const errors: FieldError[] = [];
  for (const { path, value } of request.expectations) {
    for (const [suffix, text, bound] of expectationFields(value))
      errors.push(...tooLong([...path, ...suffix], text, bound));
    const after = value.after?.length ?? 0;
    if (after > MAX_ITEMS.after) {
      errors.push({
        path: joinPath([...path, 'after']),
        rule: 'max-items',
        limit: MAX_ITEMS.after,
        message: `after names at most ${MAX_ITEMS.after} expectations (this one names ${after})`,
      });
    }
  }
  for (const { path, value } of request.facts) {
    for (const [suffix, text, bound] of factFields(value)) errors.push(...tooLong([...path, ...suffix], text, bound));
  }
  for (const { path, value } of request.withdraw) errors.push(...tooLong(path, value, 'id'));
  const paths = request.originPaths ?? {};
  for (const field of ['taskId', 'contextId'] as const) {
    errors.push(...tooLong(paths[field] ?? ['(origin)', field], request.origin[field], 'originId'));
  }
  return errors;
}
