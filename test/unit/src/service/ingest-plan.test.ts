/**
 * The raise rules of DESIGN 3.1 (and 3.2's attribution, 3.6's withdraw rules) on the pure planner, no server:
 * each refusal is checked to its error class, detail, and every field error (path, rule, message).
 */
import { describe, expect, it } from 'vitest';
import type { AgentCardInfo } from '../../../../activities/agent-card/card.js';
import type { Principal } from '../../../../src/auth/principals.js';
import type { Expectation } from '../../../../core/schemas/extension.js';
import type { ExpectationRecord } from '../../../../core/schemas/record.js';
import {
  needsCard,
  parseIngest,
  planIngest,
  referencedIds,
  type IngestPlan,
  type IngestRequest,
  type PlanSettings,
} from '../../../../src/service/ingest-plan.js';
import {
  cardInfo,
  cardKinds as kinds,
  declaration,
  plannedExpectation as expectation,
} from '../../../support/fixtures.js';

const agentA: Principal = { id: 'agent-a', roles: ['agent'], agent: { cardUrl: 'http://127.0.0.1:1/card.json' } };
const agentB: Principal = { id: 'agent-b', roles: ['agent'], agent: { cardUrl: 'http://127.0.0.1:1/card.json' } };
const feed: Principal = { id: 'feed', roles: ['reporter'] };

const card: AgentCardInfo = cardInfo();
const settings: PlanSettings = { maxLineage: 2, maxClockSkew: 'PT5M' };
/** The watcher's clock in these tests. */
const now = Date.parse('2026-06-01T12:00:00Z');

function record(e: Expectation, overrides: Partial<ExpectationRecord> = {}): ExpectationRecord {
  return {
    expectation: e,
    projectedDueAt: '2026-12-01T00:00:00.000Z',
    dueAt: '2026-12-01T00:00:00.000Z',
    state: 'open',
    raisedAt: '2026-11-01T00:00:00.000Z',
    lapses: [],
    lineage: 0,
    agent: { id: 'agent-a' },
    origin: { taskId: 't-0' },
    ...overrides,
  };
}

interface Items {
  expectations?: unknown[];
  facts?: unknown[];
  withdraw?: string[];
}

/** A request carrying these items at `expectations/<i>`, `facts/<i>`, `withdraw/<i>`. */
function request(items: Items, rest: Partial<IngestRequest> = {}): IngestRequest {
  const at =
    (name: string) =>
    <T>(value: T, i: number) => ({ path: [name, i], value });
  return {
    origin: { taskId: 't-1', contextId: 'c-1' },
    expectations: (items.expectations ?? []).map(at('expectations')),
    facts: (items.facts ?? []).map(at('facts')),
    withdraw: (items.withdraw ?? []).map(at('withdraw')),
    ...rest,
  };
}

interface Known {
  principal?: Principal;
  records?: ExpectationRecord[];
  card?: AgentCardInfo;
  settings?: PlanSettings;
}

/** What the applier does, without Temporal: parse, look up (in `records`), resolve the card when needed, plan. */
function plan(req: IngestRequest, known: Known = {}): IngestPlan {
  const principal = known.principal ?? agentA;
  const parsed = parseIngest(principal, req);
  const stored = new Map((known.records ?? []).map((r) => [r.expectation.expectationId, r]));
  const records = new Map(referencedIds(parsed).map((id) => [id, stored.get(id)]));
  const input = { parsed, principal, records };
  const cardIfNeeded = needsCard(input) ? (known.card ?? card) : undefined;
  return planIngest({ ...input, card: cardIfNeeded, settings: known.settings ?? settings, now });
}

/** The refusal `plan` throws, as the problem mapper reads it. */
function refusal(req: IngestRequest, known: Known = {}) {
  try {
    plan(req, known);
  } catch (error) {
    const { name, message, errors } = error as Error & { errors: unknown[] };
    return { name, message, errors };
  }
  throw new Error('expected a refusal, got a plan');
}

const rule = (path: string, ruleName: string, message: string) => ({
  name: 'RuleViolationError',
  message,
  errors: [{ path, rule: ruleName, message }],
});
const forbidden = (path: string, message: string) => ({ name: 'ForbiddenError', message, errors: [{ path, message }] });
const conflict = (path: string, message: string) => ({ name: 'ConflictError', message, errors: [{ path, message }] });

describe('roles', () => {
  it('refuses a principal that is neither agent nor reporter, naming no field', () => {
    const reader: Principal = { id: 'ops', roles: ['reader', 'admin'] };

    expect(refusal(request({ facts: [] }), { principal: reader })).toEqual({
      name: 'ForbiddenError',
      message: "principal 'ops' has neither the agent nor the reporter role",
      errors: [],
    });
  });

  it('refuses a reporter that carries expectations, withdraw lists or misplaced items, naming each', () => {
    const req = request(
      { expectations: [expectation('e1')], withdraw: ['e0'] },
      { placementErrors: [{ path: 'message/x/expectations', rule: 'expectations-placement', message: 'm' }] },
    );

    const message = 'a reporter may carry facts only';
    expect(refusal(req, { principal: feed })).toEqual({
      name: 'ForbiddenError',
      message: "principal 'feed' is a reporter: it may report facts, not raise or withdraw expectations",
      errors: [
        { path: 'expectations/0', message },
        { path: 'withdraw/0', message },
        { path: 'message/x/expectations', message },
      ],
    });
  });

  it('lets a reporter report facts, attributed to it with the claimed source kept apart', () => {
    const observedAt = '2026-01-01T00:00:00Z';
    const subject = { type: 'shipment', id: 'S-1' };
    const facts = [
      { factKey: 'k1', observedAt, source: 'agent-a', subject },
      { factKey: 'k2', observedAt, source: 'feed' },
    ];

    expect(plan(request({ facts }), { principal: feed }).facts).toEqual([
      { factKey: 'k1', observedAt, source: 'feed', claimedSource: 'agent-a', subject },
      { factKey: 'k2', observedAt, source: 'feed' },
    ]);
  });
});

describe('schema and placement', () => {
  it('names every bad field of every item, with the errors found while locating them first', () => {
    const req = request(
      {
        expectations: [{ ...expectation('e1'), dueAt: 'tomorrow' }],
        facts: [{ factKey: '', observedAt: '2026-01-01T00:00:00Z' }],
        withdraw: [''],
      },
      { schemaErrors: [{ path: 'artifact/metadata', message: 'must be an object' }] },
    );

    expect(refusal(req)).toEqual({
      name: 'SchemaError',
      message: '4 fields are invalid; see errors',
      errors: [
        { path: 'artifact/metadata', message: 'must be an object' },
        { path: 'expectations/0/dueAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' },
        { path: 'facts/0/factKey', message: 'factKey must not be empty' },
        { path: 'withdraw/0', message: 'must not be empty' },
      ],
    });
  });

  it('refuses misplaced items (422) once the schema holds', () => {
    const message = 'a withdraw list only in an artifact';
    const placement = { path: 'message/x/withdraw', rule: 'withdraw-placement', message };

    expect(refusal(request({}, { placementErrors: [placement] }))).toEqual({
      name: 'RuleViolationError',
      message: 'a withdraw list only in an artifact',
      errors: [placement],
    });
  });
});

describe('raise, unchanged and conflicts (same id)', () => {
  it('raises a new expectation with lineage 0 and needs the card for it', () => {
    const e = expectation('e1');
    const parsed = parseIngest(agentA, request({ expectations: [e] }));

    expect(needsCard({ parsed, principal: agentA, records: new Map([['e1', undefined]]) })).toBe(true);
    expect(plan(request({ expectations: [e] })).expectations).toEqual([
      { action: 'raise', expectation: e, path: ['expectations', 0], lineage: 0 },
    ]);
  });

  it('answers unchanged for the same id with the same content from the same agent, without the card', () => {
    const e = expectation('e1');
    const reordered = Object.fromEntries(Object.entries(e).reverse());
    const parsed = parseIngest(agentA, request({ expectations: [reordered] }));
    const records = new Map([['e1', record(e)]]);

    expect(needsCard({ parsed, principal: agentA, records })).toBe(false);
    expect(planIngest({ parsed, principal: agentA, records, settings, now }).expectations).toEqual([
      { action: 'unchanged', expectation: e, path: ['expectations', 0] },
    ]);
  });

  it('answers unchanged for the same item twice in one request', () => {
    const e = expectation('e1');

    expect(plan(request({ expectations: [e, e] })).expectations.map((p) => p.action)).toEqual(['raise', 'unchanged']);
  });

  it('refuses the same id with other content (409) before the card is needed', () => {
    const e = expectation('e1');
    const parsed = parseIngest(agentA, request({ expectations: [{ ...e, expects: 'other' }] }));
    const records = new Map([['e1', record(e)]]);

    const message = "expectation 'e1' was raised before with other content; it is immutable and its id is never reused";
    expect(() => needsCard({ parsed, principal: agentA, records })).toThrow(message);
    expect(refusal(request({ expectations: [{ ...e, expects: 'other' }] }), { records: [record(e)] })).toEqual(
      conflict('expectations/0/expectationId', message),
    );
  });

  it('refuses an id another agent raised (409), even with identical content', () => {
    const e = expectation('e1');

    expect(refusal(request({ expectations: [e] }), { principal: agentB, records: [record(e)] })).toEqual(
      conflict('expectations/0/expectationId', "expectation id 'e1' was raised by another agent; ids are never reused"),
    );
  });

  it('refuses the same id twice in one request with different content (409)', () => {
    const e = expectation('e1');

    expect(refusal(request({ expectations: [e, { ...e, expects: 'other' }] }))).toEqual(
      conflict('expectations/1/expectationId', "expectation 'e1' appears twice in this request with different content"),
    );
  });
});

describe('rules against the card (422)', () => {
  /** The test card, declaring these kinds instead (and having these skills, when given). */
  const declaring = (declared: object[], skillIds = card.skillIds): AgentCardInfo =>
    cardInfo(declaration(declared), skillIds);
  /** Why raising `e` is refused against this card (the test card unless given). */
  const raiseRefusal = (e: Expectation, against?: AgentCardInfo) =>
    refusal(request({ expectations: [e] }), { card: against });

  it('refuses when the card does not declare the extension', () => {
    const message =
      "the agent's card does not declare the extension https://rsaxb.com/a2a/expectations/v1 in capabilities.extensions";

    expect(raiseRefusal(expectation('e1'), { ...card, skillIds: [], declaration: undefined })).toEqual(
      rule('card/capabilities/extensions', 'extension-declared', message),
    );
  });

  it('refuses when lapseSkill names no skill on the card', () => {
    const badSkill = { ...card, skillIds: ['something-else'] };

    expect(raiseRefusal(expectation('e1'), badSkill)).toEqual(
      rule(
        'card/capabilities/extensions/0/params/lapseSkill',
        'lapse-skill',
        "lapseSkill 'handle-lapse' names no skill on the card (skills: something-else)",
      ),
    );
  });

  it.each([
    [
      'a kind the card does not declare',
      { kind: 'teleport' },
      rule(
        'expectations/0/kind',
        'kind-declared',
        "kind 'teleport' is not declared on the agent's card (declared: delivery, pickup)",
      ),
    ],
    [
      'a basis other than the declared one',
      { basis: 'observed' },
      rule(
        'expectations/0/basis',
        'basis',
        "basis 'observed' differs from the basis 'contract' declared for kind 'delivery'",
      ),
    ],
  ])('refuses %s', (_what, overrides: Partial<Expectation>, refused) => {
    expect(raiseRefusal(expectation('e1', overrides))).toEqual(refused);
  });

  it.each([
    [
      'refuses a kind whose describes is a placeholder',
      [{ ...kinds[0]!, describes: 'TBD' }],
      rule(
        'card/capabilities/extensions/0/params/kinds/0/describes',
        'describes-placeholder',
        "the card's kind 'delivery' has a placeholder describes ('TBD'); say what is expected",
      ),
    ],
    [
      "refuses every raise while a kind's skills name a skill the card does not have",
      [kinds[0]!, { ...kinds[1]!, skills: ['book-pickup'] }],
      rule(
        'card/capabilities/extensions/0/params/kinds/1/skills/0',
        'kind-skills',
        "the card's kind 'pickup' names skill 'book-pickup', which is not a skill on the card (skills: handle-lapse)",
      ),
    ],
  ])('%s', (_title, declared, refused) => {
    expect(raiseRefusal(expectation('e1'), declaring(declared))).toEqual(refused);
  });

  it('refuses every raise while the card declares a kind twice, naming the second', () => {
    const twice = declaring([...kinds, { ...kinds[0]!, basis: 'observed' }]);

    expect(raiseRefusal(expectation('e1', { kind: 'pickup', basis: 'observed' }), twice)).toEqual(
      rule(
        'card/capabilities/extensions/0/params/kinds/2/kind',
        'kind-unique',
        "kind 'delivery' is declared twice (kinds/0 and kinds/2); a kind is unique within one declaration",
      ),
    );
  });

  it.each([
    ['a placeholder', 'TODO', "the card's kind 'pickup' has a placeholder describes ('TODO'); say what is expected"],
    ['an empty', '', "the card's kind 'pickup' has an empty describes; say what is expected"],
  ])('refuses a raise of one kind while another kind has %s describes, as for its own', (_what, describes, message) => {
    const unrelated = declaring([kinds[0]!, { ...kinds[1]!, describes }]);

    expect(raiseRefusal(expectation('e1'), unrelated)).toEqual(
      rule('card/capabilities/extensions/0/params/kinds/1/describes', 'describes-placeholder', message),
    );
  });

  it('raises a kind whose skills are on the card (which skill the origin task ran is not known, so not checked)', () => {
    const named = declaring([{ ...kinds[0]!, skills: ['book-delivery'] }], ['handle-lapse', 'book-delivery']);

    expect(
      plan(request({ expectations: [expectation('e1')] }), { card: named }).expectations.map((p) => p.action),
    ).toEqual(['raise']);
  });
  it('raises, with a warning, a subject type other than the kind subjectType', () => {
    const result = plan(request({ expectations: [expectation('e1', { subject: { type: 'parcel', id: 'P-1' } })] }));

    expect(result.warnings).toEqual([
      {
        path: 'expectations/0/subject/type',
        message: "subject.type 'parcel' differs from the subjectType 'shipment' declared for kind 'delivery'",
      },
    ]);
    expect(result.expectations[0]!.action).toBe('raise');
  });
});

describe('after and anchor', () => {
  it('accepts after naming an expectation raised before, or earlier in the same request, on the same subject', () => {
    const before = expectation('e0');
    const first = expectation('e1', { kind: 'pickup', basis: 'observed' });
    const second = expectation('e2', { after: ['e0', 'e1'] });

    const result = plan(request({ expectations: [first, second] }), { records: [record(before)] });

    expect(result.expectations.map((p) => p.action)).toEqual(['raise', 'raise']);
  });

  it('refuses after naming an expectation never raised, or raised later in the same request', () => {
    const later = expectation('e2');

    expect(refusal(request({ expectations: [expectation('e1', { after: ['e2'] }), later] }))).toEqual(
      rule('expectations/0/after/0', 'after-exists', "after names 'e2', which was not raised before"),
    );
  });

  it('refuses after naming an expectation on another subject', () => {
    const other = expectation('e0', { subject: { type: 'shipment', id: 'S-2' } });

    expect(
      refusal(request({ expectations: [expectation('e1', { after: ['e0'] })] }), { records: [record(other)] }),
    ).toEqual(
      rule(
        'expectations/0/after/0',
        'after-subject',
        "after names 'e0', which is on subject shipment/S-2, not shipment/S-1",
      ),
    );
  });

  it('refuses an anchor never raised, and accepts one earlier in the same request', () => {
    const anchored = (id: string, on: string) => expectation(id, { anchor: { expectationId: on, offset: 'P1D' } });

    expect(refusal(request({ expectations: [anchored('e1', 'ghost')] }))).toEqual(
      rule('expectations/0/anchor/expectationId', 'anchor-exists', "anchor names 'ghost', which was not raised before"),
    );
    expect(plan(request({ expectations: [expectation('e0'), anchored('e1', 'e0')] })).expectations).toHaveLength(2);
  });

  it('refuses an anchor offset that takes an anchor observed now past the year 9999, though dueAt plus it is reachable', () => {
    // dueAt in 2020 plus P7979Y is the end of 9999; an anchor observed now (2026) plus it is the year 10005.
    const anchored = (offset: string) =>
      expectation('e1', { dueAt: '2020-12-31T00:00:00Z', anchor: { expectationId: 'e0', offset } });
    const message =
      'an anchor observed now (or up to PT5M ahead) plus this offset must fall no later than 9999-12-31T23:59:59.999Z';

    expect(refusal(request({ expectations: [expectation('e0'), anchored('P7979Y')] }))).toEqual(
      rule('expectations/1/anchor/offset', 'anchor-offset-reachable', message),
    );
    // The last year an anchor observed 5 minutes from now can reach.
    expect(plan(request({ expectations: [expectation('e0'), anchored('P7973Y')] })).expectations).toHaveLength(2);
  });

  it("refuses (403) after naming another agent's expectation, telling nothing of its subject", () => {
    const theirs = record(expectation('e0', { subject: { type: 'shipment', id: 'S-2' } }), {
      agent: { id: 'agent-b' },
    });

    expect(refusal(request({ expectations: [expectation('e1', { after: ['e0'] })] }), { records: [theirs] })).toEqual(
      forbidden('expectations/0/after/0', "expectation 'e0' was raised by another agent"),
    );
  });

  it("refuses (403) an anchor on another agent's expectation", () => {
    const theirs = record(expectation('e0'), { agent: { id: 'agent-b' } });
    const e = expectation('e1', { anchor: { expectationId: 'e0', offset: 'P1D' } });

    expect(refusal(request({ expectations: [e] }), { records: [theirs] })).toEqual(
      forbidden('expectations/0/anchor/expectationId', "expectation 'e0' was raised by another agent"),
    );
  });

  it("names each after item and the anchor that is another agent's, and counts its own as its own", () => {
    const theirs = record(expectation('e0'), { agent: { id: 'agent-b' } });
    const mine = record(expectation('m0'));
    const e = expectation('e2', { after: ['m0', 'e0', 'e1'], anchor: { expectationId: 'e0', offset: 'P1D' } });

    const refused = refusal(request({ expectations: [expectation('e1'), e] }), { records: [theirs, mine] });

    const message = "expectation 'e0' was raised by another agent";
    expect(refused).toEqual({
      name: 'ForbiddenError',
      message,
      errors: [
        { path: 'expectations/1/after/1', message },
        { path: 'expectations/1/anchor/expectationId', message },
      ],
    });
  });
});

describe('supersedes and lineage', () => {
  const superseding = (id: string, old: string) => expectation(id, { supersedes: old });

  it('supersedes an open expectation with its lineage + 1', () => {
    const open = record(expectation('e1'), { lineage: 1 });

    const result = plan(request({ expectations: [superseding('e2', 'e1')] }), { records: [open] });

    expect(result.expectations[0]).toMatchObject({ action: 'raise', lineage: 2 });
  });

  it('supersedes a lapsed expectation: lapsed is still open', () => {
    const lapsed = record(expectation('e1'), { state: 'lapsed' });

    const result = plan(request({ expectations: [superseding('e2', 'e1')] }), { records: [lapsed] });

    expect(result.expectations[0]).toMatchObject({ action: 'raise', lineage: 1 });
  });

  it('counts lineage along a chain raised in the same request', () => {
    const result = plan(
      request({ expectations: [expectation('e1'), superseding('e2', 'e1'), superseding('e3', 'e2')] }),
    );

    expect(result.expectations.map((p) => (p.action === 'raise' ? p.lineage : undefined))).toEqual([0, 1, 2]);
  });

  it.each(['satisfied', 'withdrawn'] as const)('refuses to supersede a %s expectation', (state) => {
    const closed = record(expectation('e1'), { state });

    expect(refusal(request({ expectations: [superseding('e2', 'e1')] }), { records: [closed] })).toEqual(
      rule(
        'expectations/0/supersedes',
        'supersedes-open',
        `supersedes 'e1', which is ${state}; only an open (or lapsed) expectation can be superseded`,
      ),
    );
  });

  it('refuses to supersede a lapsed expectation whose late window has passed: its workflow has closed', () => {
    const closed = record(expectation('e1'), { state: 'lapsed', closedAt: '2027-01-01T00:00:00.000Z' });

    expect(refusal(request({ expectations: [superseding('e2', 'e1')] }), { records: [closed] })).toEqual(
      rule(
        'expectations/0/supersedes',
        'supersedes-open',
        "supersedes 'e1', which lapsed and closed after its late window; a closed expectation can no longer be withdrawn",
      ),
    );
  });

  it('still plans the withdrawal of a closed lapsed expectation: the applier reports it not-open (DESIGN 3.6)', () => {
    const closed = record(expectation('e1'), { state: 'lapsed', closedAt: '2027-01-01T00:00:00.000Z' });

    expect(plan(request({ withdraw: ['e1'] }), { records: [closed] }).withdraw).toEqual([
      { expectationId: 'e1', reason: 'withdrawn by agent-a in task t-1' },
    ]);
  });

  it('refuses to supersede an expectation never raised, or raised later in the same request', () => {
    expect(refusal(request({ expectations: [superseding('e2', 'e1'), expectation('e1')] }))).toEqual(
      rule('expectations/0/supersedes', 'supersedes-open', "supersedes 'e1', which was never raised"),
    );
  });

  it('refuses a lineage over the bound', () => {
    const deep = record(expectation('e1'), { lineage: 2 });

    expect(refusal(request({ expectations: [superseding('e2', 'e1')] }), { records: [deep] })).toEqual(
      rule('expectations/0/supersedes', 'lineage', 'lineage would be 3, above the bound of 2 superseded ancestors'),
    );
  });

  it("refuses (403) to supersede another agent's expectation", () => {
    const theirs = record(expectation('e1'), { agent: { id: 'agent-b' } });

    expect(refusal(request({ expectations: [superseding('e2', 'e1')] }), { records: [theirs] })).toEqual(
      forbidden('expectations/0/supersedes', "expectation 'e1' was raised by another agent"),
    );
  });

  it('answers ownership (403) before the other rules (422)', () => {
    const theirs = record(expectation('e1'), { agent: { id: 'agent-b' } });
    const req = request({ expectations: [superseding('e2', 'e1'), expectation('e3', { kind: 'teleport' })] });

    expect(refusal(req, { records: [theirs] }).name).toBe('ForbiddenError');
  });
});

describe('withdraw', () => {
  it('withdraws its own expectation, giving the task as the reason', () => {
    const result = plan(request({ withdraw: ['e1'] }), { records: [record(expectation('e1'))] });

    expect(result.withdraw).toEqual([{ expectationId: 'e1', reason: 'withdrawn by agent-a in task t-1' }]);
  });

  it('withdraws one raised earlier in the same request; without a task the reason names the principal only', () => {
    const result = plan(request({ expectations: [expectation('e1')], withdraw: ['e1'] }, { origin: {} }));

    expect(result.withdraw).toEqual([{ expectationId: 'e1', reason: 'withdrawn by agent-a' }]);
  });

  it('plans the withdrawal of a closed one: the applier reports it not-open (DESIGN 3.6)', () => {
    const closed = record(expectation('e1'), { state: 'satisfied', closedAt: '2026-12-01T00:00:00.000Z' });

    expect(plan(request({ withdraw: ['e1'] }), { records: [closed] }).withdraw).toHaveLength(1);
  });

  it('refuses to withdraw an expectation never raised', () => {
    expect(refusal(request({ withdraw: ['ghost'] }))).toEqual(
      rule('withdraw/0', 'withdraw-exists', "expectation 'ghost' was never raised"),
    );
  });

  it("refuses (403) to withdraw another agent's expectation", () => {
    expect(refusal(request({ withdraw: ['e1'] }), { principal: agentB, records: [record(expectation('e1'))] })).toEqual(
      forbidden('withdraw/0', "expectation 'e1' was raised by another agent"),
    );
  });
});

describe('observedAt bound', () => {
  const fact = (observedAt: string) => ({ factKey: 'k', observedAt });
  const isoAfter = (ms: number) => new Date(now + ms).toISOString();

  it('accepts a fact observed in the past, or up to maxClockSkew ahead of the watcher clock', () => {
    const facts = [fact('2020-01-01T00:00:00Z'), fact(isoAfter(5 * 60_000))];

    expect(plan(request({ facts }), { principal: feed }).facts.map((f) => f.observedAt)).toEqual([
      '2020-01-01T00:00:00Z',
      '2026-06-01T12:05:00.000Z',
    ]);
  });

  it('refuses (422) a fact observed more than maxClockSkew ahead, naming its observedAt', () => {
    const message =
      "observedAt 2026-06-01T12:05:00.001Z is more than PT5M ahead of the watcher's clock; a fact is reported once observed";

    expect(
      refusal(request({ facts: [fact('2026-01-01T00:00:00Z'), fact(isoAfter(5 * 60_000 + 1))] }), { principal: feed }),
    ).toEqual(rule('facts/1/observedAt', 'observed-at-future', message));
  });

  it('reads the bound from the settings, and names every fact beyond it', () => {
    const tight = { ...settings, maxClockSkew: 'PT0S' };
    const message = (at: string) =>
      `observedAt ${at} is more than PT0S ahead of the watcher's clock; a fact is reported once observed`;

    const refused = refusal(request({ facts: [fact(isoAfter(1)), fact('9999-12-31T23:59:59Z')] }), { settings: tight });

    expect(refused).toEqual({
      name: 'RuleViolationError',
      message: '2 rules are broken; see errors',
      errors: [
        { path: 'facts/0/observedAt', rule: 'observed-at-future', message: message('2026-06-01T12:00:00.001Z') },
        { path: 'facts/1/observedAt', rule: 'observed-at-future', message: message('9999-12-31T23:59:59Z') },
      ],
    });
  });
});

describe('planner contract', () => {
  it('refuses to plan something new without the card', () => {
    const parsed = parseIngest(agentA, request({ expectations: [expectation('e1')] }));

    expect(() =>
      planIngest({ parsed, principal: agentA, records: new Map([['e1', undefined]]), settings, now }),
    ).toThrow('planIngest: something new is raised, so the card is needed (see needsCard)');
  });

  it('lists each referenced id once: incoming ids, after, anchor, supersedes, withdraw', () => {
    const e = expectation('e3', {
      after: ['e1', 'e2'],
      anchor: { expectationId: 'e1', offset: 'P1D' },
      supersedes: 'e0',
    });
    const parsed = parseIngest(agentA, request({ expectations: [e], withdraw: ['e4', 'e3'] }));

    expect(referencedIds(parsed)).toEqual(['e3', 'e1', 'e2', 'e0', 'e4']);
  });
});
