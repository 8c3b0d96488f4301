/**
 * The raise rules of DESIGN 3.1 (with 3.2's attribution of facts and 3.6's withdraw rules) as pure functions: what
 * one request would do, decided from the request, the principal, the records it refers to and the raising agent's
 * card. Nothing here calls Temporal or the network; broken rules are thrown as the typed errors of errors.ts, and
 * everything else comes back as a plan that ingest.ts applies.
 */
import { z } from 'zod';
import { addDuration, LATEST_INSTANT_MS } from '../../core/duration.js';
import { MAX_AGENT_SHARE, MAX_DEPENDENTS, MAX_KEY_SUBSCRIBERS, RACE_ROOM } from '../../core/limits.js';
import type { AgentCardInfo } from '../../activities/agent-card/card.js';
import { hasRole, type Principal } from '../auth/principals.js';
import {
  expectationSchema,
  reportedFactSchema,
  type Expectation,
  type Fact,
  type ReportedFact,
} from '../../core/schemas/extension.js';
import type { ExpectationRecord, Origin } from '../../core/schemas/record.js';
import { checkDeclaration, checkKind } from './card-rules.js';
import { canonicalJson } from './canonical.js';
import {
  ConflictError,
  ForbiddenError,
  joinPath,
  RuleViolationError,
  SchemaError,
  summarise,
  type FieldError,
} from './errors.js';
import type { Located, OriginPaths } from './extract.js';
import { checkCounts, checkReferenceCount, fieldLimitErrors } from './limits.js';

export interface IngestRequest {
  /** The A2A task the items came from (absent for `POST /v1/facts`). */
  origin: Origin;
  /** Where the origin's ids are in the body, to name an over-long one. */
  originPaths?: OriginPaths;
  expectations: Located[];
  facts: Located[];
  withdraw: Located<string>[];
  /** Schema errors found while locating the items (metadata[URI] of the wrong shape): reported with the items'. */
  schemaErrors?: FieldError[];
  /** Expectations or withdraw lists in a place the extension does not allow them (422). */
  placementErrors?: FieldError[];
  /** What the request carries that is read but not applied, with its reason: answered among the warnings. */
  notApplied?: FieldError[];
  /** `POST /v1/facts?wait=true`: answer once the expectations waiting on each fact have taken it. */
  waitForFacts?: boolean;
}

/** A request whose principal may carry what it carries, and whose every item matches its schema. */
export interface ParsedIngest {
  origin: Origin;
  originPaths?: OriginPaths;
  expectations: Located<Expectation>[];
  facts: Located<ReportedFact>[];
  withdraw: Located<string>[];
  notApplied?: FieldError[];
}

/** What the planner reads besides the request. */
export interface PlanSettings {
  maxLineage: number;
  /** How far in the future (ISO 8601 duration) a fact's `observedAt` may lie: clocks drift, facts are not foretold. */
  maxClockSkew: string;
}

/**
 * How many expectations the routers and anchors of the new raises serve now (ingest.ts asks them; 0 for one that does
 * not run). Absent: nobody asked (nothing is raised), and nothing is refused for it.
 */
export interface Occupancy {
  factKey(factKey: string): number;
  anchor(expectationId: string): number;
  /** The raising agent's own among `factKey`'s (0 when they could not exceed MAX_AGENT_SHARE). */
  ownFactKey(factKey: string): number;
}

export interface PlanInput {
  parsed: ParsedIngest;
  principal: Principal;
  /** Every id of `referencedIds(parsed)`: its record, or undefined when it was never raised. */
  records: ReadonlyMap<string, ExpectationRecord | undefined>;
  /** The raising agent's card; needed only when `needsCard` says so. */
  card?: AgentCardInfo;
  /** The routers' and anchors' subscribers and dependents, for the expectations `raisesOf` names. */
  occupancy?: Occupancy;
  settings: PlanSettings;
  /** The watcher's clock (epoch ms), which `observedAt` is checked against. */
  now: number;
}

/** What the same-id check reads: the request, who sends it, and the records it refers to. */
export type References = Pick<PlanInput, 'parsed' | 'principal' | 'records'>;

/** How one expectation of the request will be applied. */
export type PlannedExpectation =
  | { action: 'unchanged'; expectation: Expectation; path: PropertyKey[] }
  | { action: 'raise'; expectation: Expectation; path: PropertyKey[]; lineage: number };

/** Everything one request does, in the order it is applied: expectations, facts, withdrawals. */
export interface IngestPlan {
  expectations: PlannedExpectation[];
  /** Attributed to the principal (DESIGN 3.2). */
  facts: Fact[];
  withdraw: { expectationId: string; reason: string }[];
  /** Accepted, but worth a look (a subject type other than the kind's). */
  warnings: FieldError[];
}

/**
 * Checks the principal's role, how many items the request carries, every item's schema, how many expectations it
 * refers to, and each field's bound and placement, in that order (403, 413, 400, 413, 422): a reporter may carry
 * facts only. Nothing here calls Temporal, so a request over a bound is refused before any look-up.
 */
export function parseIngest(principal: Principal, request: IngestRequest): ParsedIngest {
  const isAgent = hasRole(principal, 'agent');
  if (!isAgent && !hasRole(principal, 'reporter')) {
    throw new ForbiddenError(`principal '${principal.id}' has neither the agent nor the reporter role`);
  }
  const placementErrors = request.placementErrors ?? [];
  if (!isAgent && (request.expectations.length > 0 || request.withdraw.length > 0 || placementErrors.length > 0)) {
    const paths = [
      ...[...request.expectations, ...request.withdraw].map((item) => joinPath(item.path)),
      ...placementErrors.map((error) => error.path),
    ].map((path) => ({ path, message: 'a reporter may carry facts only' }));
    throw new ForbiddenError(
      `principal '${principal.id}' is a reporter: it may report facts, not raise or withdraw expectations`,
      paths,
    );
  }
  checkCounts(request);
  const schemaErrors: FieldError[] = [...(request.schemaErrors ?? [])];
  const expectations = parseAll(request.expectations, expectationSchema, schemaErrors);
  const facts = parseAll(request.facts, reportedFactSchema, schemaErrors);
  const withdraw = parseAll(request.withdraw, z.string().min(1, { message: 'must not be empty' }), schemaErrors);
  if (schemaErrors.length > 0) throw new SchemaError(summarise(schemaErrors, 'fields are invalid'), schemaErrors);
  checkReferenceCount(expectations, withdraw);
  const parsed: ParsedIngest = {
    origin: request.origin,
    originPaths: request.originPaths,
    expectations,
    facts,
    withdraw,
    notApplied: request.notApplied,
  };
  const ruleErrors = [...placementErrors, ...fieldLimitErrors(parsed)];
  if (ruleErrors.length > 0) throw ruleViolation(ruleErrors);
  return parsed;
}

/** The ids whose records the planner reads: the incoming ids, everything they point at, and the withdraw list. */
export function referencedIds(parsed: ParsedIngest): string[] {
  const ids = parsed.expectations.flatMap(({ value: e }) => [
    e.expectationId,
    ...(e.after ?? []),
    ...(e.anchor ? [e.anchor.expectationId] : []),
    ...(e.supersedes ? [e.supersedes] : []),
  ]);
  return [...new Set([...ids, ...parsed.withdraw.map((w) => w.value)])];
}

/**
 * True when the request raises something new, so the card must be resolved before `planIngest`. Throws the
 * ConflictError of a reused id first: a conflict is answered without fetching the card.
 */
export function needsCard(input: References): boolean {
  return raisesOf(input).length > 0;
}

/** The expectations the request raises anew (re-deliveries aside); throws the ConflictError of a reused id first. */
export function raisesOf(input: References): Expectation[] {
  return classify(input)
    .items.filter((item) => item.action === 'raise')
    .map((item) => item.expectation);
}

/** Decides the whole request, or throws the first kind of broken rule: 409, then 422 (card), 403, 422. */
export function planIngest(input: PlanInput): IngestPlan {
  const { parsed, principal } = input;
  const { items, lineages } = classify(input);
  const problems: Problems = { forbidden: [], rules: [], warnings: [] };
  const raises = items.filter((p): p is Extract<PlannedExpectation, { action: 'raise' }> => p.action === 'raise');
  if (raises.length > 0) {
    if (!input.card) throw new Error('planIngest: something new is raised, so the card is needed (see needsCard)');
    const declaration = checkDeclaration(input.card);
    if (!declaration.ok) throw ruleViolation(declaration.errors);
    const known = new Map<string, Expectation>();
    for (const [id, record] of input.records) if (record) known.set(id, record.expectation);
    const joining: Joining = {
      factKeys: new Map(),
      anchors: new Map(),
      ownFactKeys: new Map(),
    };
    for (const item of items) {
      if (item.action === 'raise') {
        const kindCheck = checkKind(declaration, item.expectation, item.path);
        problems.rules.push(...kindCheck.errors);
        problems.warnings.push(...kindCheck.warnings);
        checkReferences(item, { ...input, known }, problems);
        checkAnchorOffset(item, input, problems);
        checkSupersedes(item, { ...input, lineages, known }, problems);
        checkOccupancy(item, { ...input, known }, joining, problems);
      }
      known.set(item.expectation.expectationId, item.expectation);
    }
  }
  checkWithdraw(input, lineages, problems);
  checkObservedAt(input, problems);
  if (problems.forbidden.length > 0) throw new ForbiddenError(problems.forbidden[0]!.message, problems.forbidden);
  if (problems.rules.length > 0) throw ruleViolation(problems.rules);
  const reason = parsed.origin.taskId
    ? `withdrawn by ${principal.id} in task ${parsed.origin.taskId}`
    : `withdrawn by ${principal.id}`;
  return {
    expectations: items,
    facts: parsed.facts.map(({ value }) => attribute(value, principal)),
    withdraw: parsed.withdraw.map(({ value: expectationId }) => ({ expectationId, reason })),
    warnings: [...(parsed.notApplied ?? []), ...problems.warnings],
  };
}

/** True when a stored expectation was raised by this principal with this content (fields the schema drops aside). */
export function sameContent(record: ExpectationRecord, principal: Principal, expectation: Expectation): boolean {
  const stored = canonicalJson(normalise(record.expectation));
  return record.agent.id === principal.id && stored === canonicalJson(expectation);
}

interface Problems {
  forbidden: FieldError[];
  rules: FieldError[];
  warnings: FieldError[];
}

/** Lineage of each id of the request (new or unchanged), as far as it is known yet. */
type Lineages = Map<string, { canonical: string; lineage: number }>;

/**
 * Same id: identical content from the same agent is a no-op; anything else is a conflict (409), whether the other
 * content came before or earlier in this request.
 */
function classify({ parsed, principal, records }: References): {
  items: PlannedExpectation[];
  lineages: Lineages;
} {
  const conflicts: FieldError[] = [];
  const items: PlannedExpectation[] = [];
  const lineages: Lineages = new Map();
  for (const { path, value: expectation } of parsed.expectations) {
    const id = expectation.expectationId;
    const canonical = canonicalJson(expectation);
    const earlier = lineages.get(id);
    const existing = records.get(id);
    if (earlier) {
      if (earlier.canonical === canonical) items.push({ action: 'unchanged', expectation, path });
      else conflicts.push(conflictAt(path, `expectation '${id}' appears twice in this request with different content`));
    } else if (!existing) {
      items.push({ action: 'raise', expectation, path, lineage: 0 });
      lineages.set(id, { canonical, lineage: 0 });
    } else if (existing.agent.id !== principal.id) {
      conflicts.push(conflictAt(path, `expectation id '${id}' was raised by another agent; ids are never reused`));
    } else if (!sameContent(existing, principal, expectation)) {
      conflicts.push(
        conflictAt(
          path,
          `expectation '${id}' was raised before with other content; it is immutable and its id is never reused`,
        ),
      );
    } else {
      items.push({ action: 'unchanged', expectation, path });
      lineages.set(id, { canonical, lineage: existing.lineage });
    }
  }
  if (conflicts.length > 0) throw new ConflictError(conflicts[0]!.message, conflicts);
  return { items, lineages };
}

/**
 * `supersedes` names an open expectation of the same agent whose workflow still runs (a lapsed one closes
 * `lateWindow` after its last lapse), and the new lineage is within the bound.
 */
function checkSupersedes(
  item: Extract<PlannedExpectation, { action: 'raise' }>,
  context: PlanInput & { lineages: Lineages; known: Map<string, Expectation> },
  problems: Problems,
): void {
  const superseded = item.expectation.supersedes;
  if (superseded === undefined) return;
  const at = joinPath([...item.path, 'supersedes']);
  const record = context.records.get(superseded);
  const earlier = context.lineages.get(superseded);
  if (raisedByAnother(context, superseded, at, problems)) return;
  if (record && !isOpen(record)) {
    problems.rules.push({
      path: at,
      rule: 'supersedes-open',
      message: `supersedes '${superseded}', which is ${record.state}; only an open (or lapsed) expectation can be superseded`,
    });
  } else if (record?.closedAt !== undefined) {
    // Its workflow has ended: nothing is left to withdraw, so accepting would leave it looking superseded but not.
    problems.rules.push({
      path: at,
      rule: 'supersedes-open',
      message: `supersedes '${superseded}', which lapsed and closed after its late window; a closed expectation can no longer be withdrawn`,
    });
  } else if (!record && !(earlier && context.known.has(superseded))) {
    const message = `supersedes '${superseded}', which was never raised`;
    problems.rules.push({ path: at, rule: 'supersedes-open', message });
  } else {
    item.lineage = (record?.lineage ?? earlier?.lineage ?? 0) + 1;
    const { maxLineage } = context.settings;
    if (item.lineage > maxLineage) {
      problems.rules.push({
        path: at,
        rule: 'lineage',
        message: `lineage would be ${item.lineage}, above the bound of ${maxLineage} superseded ancestors`,
      });
    }
    context.lineages.get(item.expectation.expectationId)!.lineage = item.lineage;
  }
}

/** How many of this request's raises join each router and anchor so far. */
interface Joining {
  factKeys: Map<string, number>;
  anchors: Map<string, number>;
  /** The raising agent's own, for MAX_AGENT_SHARE. */
  ownFactKeys: Map<string, number>;
}

/** A place a raise would take past its bound: the bound and how many hold it now. */
interface Place {
  limit: number;
  present: number;
}

/** How a refusal names the place: `own` and `all` follow "N (of your) open expectations". */
interface Where {
  noun: string;
  own: string;
  all: string;
}

/** Refuses (422) a raise that would take one of the last RACE_ROOM places of its fact key's or anchor's bound. */
// A supersede on the same key takes no place (its predecessor leaves it); a subject has no bound (DESIGN 3.2).
function checkOccupancy(
  item: Extract<PlannedExpectation, { action: 'raise' }>,
  context: PlanInput & { known: Map<string, Expectation> },
  joining: Joining,
  problems: Problems,
): void {
  const { occupancy } = context;
  if (!occupancy) return;
  const e = item.expectation;
  const replaced = e.supersedes === undefined ? undefined : context.known.get(e.supersedes);
  const join = (counts: Map<string, number>, key: string, present: number, bound: number) => {
    const limit = bound - RACE_ROOM;
    const total = present + (counts.get(key) ?? 0) + 1;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return total > limit ? { limit, present: total - 1 } : undefined;
  };
  // An agent's own share of a key is checked before the bound of all: past its share, the answer is
  // about what it holds, whoever else waits there.
  const share = (counts: Map<string, number>, key: string, present: number) => {
    const total = present + (counts.get(key) ?? 0) + 1;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return total > MAX_AGENT_SHARE ? { limit: MAX_AGENT_SHARE, present: total - 1 } : undefined;
  };
  /** The first refusal of a place: the agent's own share, else the bound of all; `where` says which place. */
  const refuse = (path: string, own: Place | undefined, full: Place | undefined, rule: string, where: Where) => {
    if (own) {
      problems.rules.push({
        path,
        rule: `${rule}-share`,
        limit: own.limit,
        message: `${own.present} of your open expectations ${where.own}, as many as one agent may keep on one ${where.noun}; raise this one once some have closed`,
      });
    } else if (full) {
      problems.rules.push({
        path,
        rule: `${rule}-subscribers`,
        limit: full.limit,
        message: `${full.present} open expectations ${where.all}; raise this one once some have closed`,
      });
    }
  };
  if (replaced?.satisfiedBy.factKey !== e.satisfiedBy.factKey) {
    const key = e.satisfiedBy.factKey;
    const waiting = `already wait on fact key '${key}'`;
    refuse(
      joinPath([...item.path, 'satisfiedBy', 'factKey']),
      share(joining.ownFactKeys, key, occupancy.ownFactKey(key)),
      join(joining.factKeys, key, occupancy.factKey(key), MAX_KEY_SUBSCRIBERS),
      'fact-key',
      { noun: 'key', own: waiting, all: `${waiting}, as many as the watcher lets wait on one key` },
    );
  }
  const anchor = e.anchor?.expectationId;
  if (anchor !== undefined) {
    const full = join(joining.anchors, anchor, occupancy.anchor(anchor), MAX_DEPENDENTS);
    if (full) {
      problems.rules.push({
        path: joinPath([...item.path, 'anchor', 'expectationId']),
        rule: 'anchor-dependents',
        limit: full.limit,
        message: `${full.present} expectations are already anchored on '${anchor}', as many as one anchor takes`,
      });
    }
  }
}

/** Withdraw: only the raising agent may withdraw, and only what exists (or is raised in this request). */
function checkWithdraw(input: PlanInput, lineages: Lineages, problems: Problems): void {
  for (const { path, value: id } of input.parsed.withdraw) {
    if (input.records.get(id)) {
      raisedByAnother(input, id, joinPath(path), problems);
    } else if (!lineages.has(id)) {
      const message = `expectation '${id}' was never raised`;
      problems.rules.push({ path: joinPath(path), rule: 'withdraw-exists', message });
    }
  }
}

/**
 * An anchored due time is the anchor's observation plus the offset, and an observation reported now may be up to
 * `maxClockSkew` ahead: an offset that takes that one past the end of year 9999 is refused (the workflow bounds what an
 * anchor observed later computes).
 */
function checkAnchorOffset(
  { expectation, path }: PlannedExpectation,
  { settings, now }: PlanInput,
  problems: Problems,
): void {
  const offset = expectation.anchor?.offset;
  if (offset === undefined) return;
  const due = addDuration(addDuration(now, settings.maxClockSkew), offset);
  if (Number.isFinite(due) && due <= LATEST_INSTANT_MS) return;
  problems.rules.push({
    path: joinPath([...path, 'anchor', 'offset']),
    rule: 'anchor-offset-reachable',
    message: `an anchor observed now (or up to ${settings.maxClockSkew} ahead) plus this offset must fall no later than 9999-12-31T23:59:59.999Z`,
  });
}

/**
 * `observedAt` decides lateness, so one far in the future would make any fact on time (DESIGN 3.2): more than
 * `maxClockSkew` ahead of the watcher's clock is refused.
 */
function checkObservedAt({ parsed, settings, now }: PlanInput, problems: Problems): void {
  const latest = addDuration(now, settings.maxClockSkew);
  for (const { path, value } of parsed.facts) {
    if (Date.parse(value.observedAt) <= latest) continue;
    problems.rules.push({
      path: joinPath([...path, 'observedAt']),
      rule: 'observed-at-future',
      message: `observedAt ${value.observedAt} is more than ${settings.maxClockSkew} ahead of the watcher's clock; a fact is reported once observed`,
    });
  }
}

/**
 * `after` ids and the anchor name the raiser's own expectations (403, before anything about them is told), raised
 * before or earlier in this request; `after` ids are on the same subject.
 */
function checkReferences(
  { expectation, path }: PlannedExpectation,
  context: PlanInput & { known: Map<string, Expectation> },
  problems: Problems,
): void {
  const othersAt = (id: string, at: string) => raisedByAnother(context, id, at, problems);
  expectation.after?.forEach((id, i) => {
    const at = joinPath([...path, 'after', i]);
    const before = context.known.get(id);
    if (othersAt(id, at)) return;
    if (!before) {
      problems.rules.push({
        path: at,
        rule: 'after-exists',
        message: `after names '${id}', which was not raised before`,
      });
    } else if (before.subject.type !== expectation.subject.type || before.subject.id !== expectation.subject.id) {
      problems.rules.push({
        path: at,
        rule: 'after-subject',
        message: `after names '${id}', which is on subject ${before.subject.type}/${before.subject.id}, not ${expectation.subject.type}/${expectation.subject.id}`,
      });
    }
  });
  const anchor = expectation.anchor?.expectationId;
  if (anchor === undefined) return;
  const at = joinPath([...path, 'anchor', 'expectationId']);
  if (!othersAt(anchor, at) && !context.known.has(anchor)) {
    problems.rules.push({
      path: at,
      rule: 'anchor-exists',
      message: `anchor names '${anchor}', which was not raised before`,
    });
  }
}

/** Ownership (403): true, with the field error at `at`, when `id` names an expectation another agent raised. */
function raisedByAnother(input: PlanInput, id: string, at: string, problems: Problems): boolean {
  const record = input.records.get(id);
  if (!record || record.agent.id === input.principal.id) return false;
  problems.forbidden.push({ path: at, message: `expectation '${id}' was raised by another agent` });
  return true;
}

/** The fact as recorded: `source` is the principal, a different reported source is kept as `claimedSource`. */
function attribute(reported: ReportedFact, principal: Principal): Fact {
  return {
    factKey: reported.factKey,
    observedAt: reported.observedAt,
    source: principal.id,
    ...(reported.source !== undefined && reported.source !== principal.id ? { claimedSource: reported.source } : {}),
    ...(reported.subject ? { subject: reported.subject } : {}),
  };
}

function parseAll<T>(items: Located[], schema: z.ZodType<T>, errors: FieldError[]): Located<T>[] {
  const parsed: Located<T>[] = [];
  for (const item of items) {
    const result = schema.safeParse(item.value);
    if (result.success) parsed.push({ path: item.path, value: result.data });
    else {
      for (const issue of result.error.issues) {
        errors.push({ path: joinPath([...item.path, ...issue.path]), message: issue.message });
      }
    }
  }
  return parsed;
}

/** "Open" as supersedes reads it (DESIGN 3.7): not satisfied and not withdrawn; a lapsed one is still open. */
const isOpen = (record: ExpectationRecord) => record.state !== 'satisfied' && record.state !== 'withdrawn';

/** A stored expectation as the schema would parse it, so that fields the schema drops do not count as content. */
function normalise(expectation: Expectation): Expectation {
  const parsed = expectationSchema.safeParse(expectation);
  return parsed.success ? parsed.data : expectation;
}

const ruleViolation = (errors: FieldError[]) => new RuleViolationError(summarise(errors, 'rules are broken'), errors);

const conflictAt = (path: PropertyKey[], message: string): FieldError => ({
  path: joinPath([...path, 'expectationId']),
  message,
});
