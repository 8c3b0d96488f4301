/**
 * Ingress (DESIGN 3.1, 3.2, 3.6, 4): expectations, facts and withdraw lists from one request. Every item is
 * validated (schema, role, ownership, conflicts, the card's rules) before any is applied; applying is idempotent,
 * so a request retried after a 503 completes with nothing doubled.
 */
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import type { CardResolver } from '../a2a/card.js';
import { hasRole, type Principal } from '../auth/principals.js';
import type { WatcherMetrics } from '../metrics.js';
import { expectationSchema, reportedFactSchema, type Expectation, type Fact } from '../schemas/extension.js';
import type { ExpectationRecord, Origin } from '../schemas/record.js';
import {
  getExpectationRecord,
  recordFact,
  startExpectation,
  withdrawExpectation,
} from '../temporal/expectations.js';
import { expectationLinks } from '../temporal/ids.js';
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
import type { Located } from './extract.js';
import type { TemporalCall } from './temporal-call.js';

export interface IngestSettings {
  factRetention: string;
  lateWindow: string;
  maxLineage: number;
}

export interface IngestDeps {
  client: Client;
  taskQueue: string;
  settings: IngestSettings;
  cards: CardResolver;
  call: TemporalCall;
  metrics?: WatcherMetrics;
}

export interface IngestRequest {
  /** The A2A task the items came from (absent for `POST /v1/facts`). */
  origin: Origin;
  expectations: Located[];
  facts: Located[];
  withdraw: Located<string>[];
  /** Schema errors found while locating the items (metadata[URI] of the wrong shape): reported with the items'. */
  schemaErrors?: FieldError[];
  /** Expectations or withdraw lists in a place the extension does not allow them (422). */
  placementErrors?: FieldError[];
}

export interface IngestResult {
  expectations: { expectationId: string; result: 'raised' | 'unchanged' }[];
  facts: { factKey: string; result: 'recorded' | 'duplicate' }[];
  withdrawn: { expectationId: string; result: 'withdrawn' | 'not-open' }[];
  /** Accepted, but worth a look (e.g. subject.type differs from the kind's subjectType). Absent when none. */
  warnings?: FieldError[];
}

/** How one expectation of the request will be applied. */
type Plan =
  | { action: 'unchanged'; expectation: Expectation }
  | { action: 'raise'; expectation: Expectation; path: PropertyKey[]; lineage: number };

const LOOKUP_CONCURRENCY = 16;
const isOpen = (record: ExpectationRecord) => record.state !== 'satisfied' && record.state !== 'withdrawn';

export function createIngestService(deps: IngestDeps) {
  const lookup = (id: string) => deps.call(() => getExpectationRecord(deps.client, id));

  async function lookupAll(ids: Iterable<string>): Promise<Map<string, ExpectationRecord | undefined>> {
    const pending = [...new Set(ids)];
    const found = new Map<string, ExpectationRecord | undefined>();
    for (let i = 0; i < pending.length; i += LOOKUP_CONCURRENCY) {
      const batch = pending.slice(i, i + LOOKUP_CONCURRENCY);
      const records = await Promise.all(batch.map(lookup));
      batch.forEach((id, j) => found.set(id, records[j]));
    }
    return found;
  }

  /**
   * Another request raised the same id between our check and our start (concurrent re-delivery): it is a no-op
   * when it carried the same content from the same agent, and a conflict otherwise.
   */
  async function confirmSame(principal: Principal, expectation: Expectation, path: PropertyKey[]): Promise<void> {
    const existing = await lookup(expectation.expectationId);
    if (
      existing &&
      existing.agent.id === principal.id &&
      canonicalJson(normalise(existing.expectation)) === canonicalJson(expectation)
    ) {
      return;
    }
    const message = `expectation '${expectation.expectationId}' was raised concurrently with other content; it is immutable and its id is never reused`;
    throw new ConflictError(message, [conflictAt(path, message)]);
  }

  return {
    /** Validates every item, then raises, records and withdraws them in that order. */
    async ingest(principal: Principal, request: IngestRequest): Promise<IngestResult> {
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

      // 1. Schema of every item.
      const schemaErrors: FieldError[] = [...(request.schemaErrors ?? [])];
      const expectations = parseAll(request.expectations, expectationSchema, schemaErrors);
      const facts = parseAll(request.facts, reportedFactSchema, schemaErrors);
      const withdraw = parseAll(request.withdraw, z.string().min(1, { message: 'must not be empty' }), schemaErrors);
      if (schemaErrors.length > 0) throw new SchemaError(summarise(schemaErrors, 'fields are invalid'), schemaErrors);
      if (placementErrors.length > 0) {
        throw new RuleViolationError(summarise(placementErrors, 'rules are broken'), placementErrors);
      }

      // 2. What already exists: the incoming ids and everything they point at.
      const referenced = expectations.flatMap(({ value: e }) => [
        e.expectationId,
        ...(e.after ?? []),
        ...(e.anchor ? [e.anchor.expectationId] : []),
        ...(e.supersedes ? [e.supersedes] : []),
      ]);
      const records = await lookupAll([...referenced, ...withdraw.map((w) => w.value)]);

      // 3. Same id: identical content from the same agent is a no-op; anything else is a conflict.
      const conflicts: FieldError[] = [];
      const plans: Plan[] = [];
      const inRequest = new Map<string, { canonical: string; expectation: Expectation; lineage: number }>();
      for (const { path, value: expectation } of expectations) {
        const id = expectation.expectationId;
        const canonical = canonicalJson(expectation);
        const earlier = inRequest.get(id);
        const existing = records.get(id);
        if (earlier) {
          if (earlier.canonical === canonical) plans.push({ action: 'unchanged', expectation });
          else conflicts.push(conflictAt(path, `expectation '${id}' appears twice in this request with different content`));
          continue;
        }
        if (existing) {
          if (existing.agent.id !== principal.id) {
            conflicts.push(conflictAt(path, `expectation id '${id}' was raised by another agent; ids are never reused`));
          } else if (canonicalJson(normalise(existing.expectation)) !== canonical) {
            conflicts.push(
              conflictAt(path, `expectation '${id}' was raised before with other content; it is immutable and its id is never reused`),
            );
          } else {
            plans.push({ action: 'unchanged', expectation });
            inRequest.set(id, { canonical, expectation, lineage: existing.lineage });
          }
          continue;
        }
        plans.push({ action: 'raise', expectation, path, lineage: 0 });
        inRequest.set(id, { canonical, expectation, lineage: 0 });
      }
      if (conflicts.length > 0) throw new ConflictError(conflicts[0]!.message, conflicts);

      // 4. Rules of DESIGN 3.1 for the new ones (the card is fetched only when something is new).
      const forbidden: FieldError[] = [];
      const ruleErrors: FieldError[] = [];
      const warnings: FieldError[] = [];
      const raises = plans.filter((p): p is Extract<Plan, { action: 'raise' }> => p.action === 'raise');
      if (raises.length > 0) {
        const card = await deps.cards.resolve(principal.agent!);
        const declaration = checkDeclaration(card);
        if (!declaration.ok) throw new RuleViolationError(summarise(declaration.errors, 'rules are broken'), declaration.errors);
        const known = new Map<string, Expectation>();
        for (const [id, record] of records) if (record) known.set(id, record.expectation);
        for (const plan of plans) {
          const { expectation } = plan;
          if (plan.action === 'raise') {
            const kindCheck = checkKind(declaration, expectation, plan.path);
            ruleErrors.push(...kindCheck.errors);
            warnings.push(...kindCheck.warnings);
            ruleErrors.push(...referenceErrors(expectation, plan.path, known));
            const superseded = expectation.supersedes;
            if (superseded !== undefined) {
              const at = joinPath([...plan.path, 'supersedes']);
              const record = records.get(superseded);
              const earlier = inRequest.get(superseded);
              if (record && record.agent.id !== principal.id) {
                forbidden.push({ path: at, message: `expectation '${superseded}' was raised by another agent` });
              } else if (record && !isOpen(record)) {
                ruleErrors.push({
                  path: at,
                  rule: 'supersedes-open',
                  message: `supersedes '${superseded}', which is ${record.state}; only an open (or lapsed) expectation can be superseded`,
                });
              } else if (!record && !(earlier && known.has(superseded))) {
                ruleErrors.push({
                  path: at,
                  rule: 'supersedes-open',
                  message: `supersedes '${superseded}', which was never raised`,
                });
              } else {
                plan.lineage = (record?.lineage ?? earlier?.lineage ?? 0) + 1;
                if (plan.lineage > deps.settings.maxLineage) {
                  ruleErrors.push({
                    path: at,
                    rule: 'lineage',
                    message: `lineage would be ${plan.lineage}, above the bound of ${deps.settings.maxLineage} superseded ancestors`,
                  });
                }
                inRequest.get(expectation.expectationId)!.lineage = plan.lineage;
              }
            }
          }
          known.set(expectation.expectationId, expectation);
        }
      }

      // 5. Withdraw: only the raising agent may withdraw, and only what exists.
      for (const { path, value: id } of withdraw) {
        const record = records.get(id);
        const raisedHere = inRequest.get(id);
        if (record) {
          if (record.agent.id !== principal.id) {
            forbidden.push({ path: joinPath(path), message: `expectation '${id}' was raised by another agent` });
          }
        } else if (!raisedHere) {
          ruleErrors.push({ path: joinPath(path), rule: 'withdraw-exists', message: `expectation '${id}' was never raised` });
        }
      }
      if (forbidden.length > 0) throw new ForbiddenError(forbidden[0]!.message, forbidden);
      if (ruleErrors.length > 0) throw new RuleViolationError(summarise(ruleErrors, 'rules are broken'), ruleErrors);

      // 6. Apply: raise first, so that a fact in the same request finds the expectation that waits on it.
      const result: IngestResult = { expectations: [], facts: [], withdrawn: [] };
      for (const plan of plans) {
        const { expectation } = plan;
        if (plan.action === 'unchanged') {
          result.expectations.push({ expectationId: expectation.expectationId, result: 'unchanged' });
          continue;
        }
        const outcome = await deps.call(() =>
          startExpectation(deps.client, deps.taskQueue, {
            expectation,
            agent: { id: principal.id, cardUrl: principal.agent?.cardUrl, authorization: principal.agent?.authorization },
            origin: request.origin,
            lineage: plan.lineage,
            links: expectationLinks(expectation),
            settings: { lateWindow: deps.settings.lateWindow, factRetention: deps.settings.factRetention },
          }),
        );
        if (outcome === 'raised') deps.metrics?.expectationsRaised.inc({ kind: expectation.kind });
        else await confirmSame(principal, expectation, plan.path);
        result.expectations.push({
          expectationId: expectation.expectationId,
          result: outcome === 'raised' ? 'raised' : 'unchanged',
        });
      }
      for (const { value: reported } of facts) {
        const fact: Fact = {
          factKey: reported.factKey,
          observedAt: reported.observedAt,
          source: principal.id,
          ...(reported.source !== undefined && reported.source !== principal.id ? { claimedSource: reported.source } : {}),
          ...(reported.subject ? { subject: reported.subject } : {}),
        };
        const outcome = await deps.call(() =>
          recordFact(deps.client, deps.taskQueue, fact, { factRetention: deps.settings.factRetention }),
        );
        if (outcome === 'recorded') deps.metrics?.factsRecorded.inc();
        result.facts.push({ factKey: fact.factKey, result: outcome });
      }
      for (const { value: id } of withdraw) {
        const reason = request.origin.taskId
          ? `withdrawn by ${principal.id} in task ${request.origin.taskId}`
          : `withdrawn by ${principal.id}`;
        const outcome = await deps.call(() => withdrawExpectation(deps.client, id, { reason }));
        if (outcome === 'withdrawn') deps.metrics?.withdrawals.inc();
        result.withdrawn.push({ expectationId: id, result: outcome === 'withdrawn' ? 'withdrawn' : 'not-open' });
      }
      if (warnings.length > 0) result.warnings = warnings;
      return result;
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;

/** `after` ids exist and are on the same subject; `anchor` exists. */
function referenceErrors(expectation: Expectation, path: PropertyKey[], known: Map<string, Expectation>): FieldError[] {
  const errors: FieldError[] = [];
  expectation.after?.forEach((id, i) => {
    const at = joinPath([...path, 'after', i]);
    const before = known.get(id);
    if (!before) {
      errors.push({ path: at, rule: 'after-exists', message: `after names '${id}', which was not raised before` });
    } else if (before.subject.type !== expectation.subject.type || before.subject.id !== expectation.subject.id) {
      errors.push({
        path: at,
        rule: 'after-subject',
        message: `after names '${id}', which is on subject ${before.subject.type}/${before.subject.id}, not ${expectation.subject.type}/${expectation.subject.id}`,
      });
    }
  });
  if (expectation.anchor && !known.has(expectation.anchor.expectationId)) {
    errors.push({
      path: joinPath([...path, 'anchor', 'expectationId']),
      rule: 'anchor-exists',
      message: `anchor names '${expectation.anchor.expectationId}', which was not raised before`,
    });
  }
  return errors;
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

/** A stored expectation as the schema would parse it, so that fields the schema drops do not count as content. */
function normalise(expectation: Expectation): Expectation {
  const parsed = expectationSchema.safeParse(expectation);
  return parsed.success ? parsed.data : expectation;
}

const conflictAt = (path: PropertyKey[], message: string): FieldError => ({
  path: joinPath([...path, 'expectationId']),
  message,
});
