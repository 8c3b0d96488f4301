/**
 * The per-request bounds of core/limits.ts on the pure planner (no server): every bound is met exactly and passes,
 * and exceeded by one and refused with the right error class (413 TooManyItemsError, 422 RuleViolationError), the
 * path of the field and the `limit`. The capacity rules (routers, anchors) read what ingest.ts looked up.
 */
import { describe, expect, it } from 'vitest';
import { MAX_AGENT_SHARE, MAX_ITEMS, MAX_LENGTH, RACE_ROOM } from '../../../core/limits.js';
import type { AgentCardInfo } from '../../../activities/agent-card/card.js';
import type { Principal } from '../../../src/auth/principals.js';
import type { DeclarationParams, Expectation } from '../../../core/schemas/extension.js';
import { checkDeclaration } from '../../../src/service/card-rules.js';
import { RuleViolationError, TooManyItemsError, type FieldError } from '../../../src/service/errors.js';
import { parseIngest, planIngest, type IngestRequest, type Occupancy } from '../../../src/service/ingest-plan.js';
import { cardInfo, declaration, plannedExpectation as expectation } from '../../support/fixtures.js';

const agent: Principal = { id: 'agent-a', roles: ['agent'], agent: { cardUrl: 'http://127.0.0.1:1/card.json' } };

const fact = (i = 0, overrides: object = {}) => ({
  factKey: `k-${i}`,
  observedAt: '2026-01-01T00:00:00Z',
  ...overrides,
});

function request(
  items: { expectations?: unknown[]; facts?: unknown[]; withdraw?: string[] },
  rest: Partial<IngestRequest> = {},
): IngestRequest {
  const at = (name: string) => (value: unknown, i: number) => ({ path: [name, i], value });
  return {
    origin: { taskId: 't-1', contextId: 'c-1' },
    expectations: (items.expectations ?? []).map(at('expectations')),
    facts: (items.facts ?? []).map(at('facts')),
    withdraw: (items.withdraw ?? []).map(at('withdraw')) as IngestRequest['withdraw'],
    ...rest,
  };
}

/** The error parseIngest throws for the request, or undefined when it passes. */
function refusal(req: IngestRequest): unknown {
  try {
    parseIngest(agent, req);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** An agent's card that declares the extension with `kinds`, its lapseSkill handle-lapse. */
const cardDeclaring = (kinds: DeclarationParams['kinds']): AgentCardInfo => cardInfo(declaration(kinds));

const text = (n: number, unit = 'x') => unit.repeat(n);
/** An instant of exactly `n` characters: digits of a fraction of a second. */
const instant = (n: number) => `2026-12-01T00:00:00.${'1'.repeat(n - 21)}Z`;
/** A duration of exactly `n` characters, one second long (leading zeros). */
const duration = (n: number) => `PT${'0'.repeat(n - 4)}1S`;

type Case = [field: string, bound: number, make: (n: number) => Items];
interface Items {
  expectations?: unknown[];
  facts?: unknown[];
  withdraw?: string[];
}

/** The case of the field at `path` in the one expectation, `field(n)` setting it `n` characters long. */
const inExpectation = (path: string, bound: number, field: (n: number) => Partial<Expectation>): Case => [
  `expectations/0/${path}`,
  bound,
  (n) => ({ expectations: [expectation('e1', field(n))] }),
];

/** The case of the field at `path` in the one fact, `field(n)` setting it `n` characters long. */
const inFact = (path: string, bound: number, field: (n: number) => object): Case => [
  `facts/0/${path}`,
  bound,
  (n) => ({ facts: [fact(0, field(n))] }),
];

const fieldCases: Case[] = [
  inExpectation('expectationId', MAX_LENGTH.id, (n) => ({ expectationId: text(n) })),
  inExpectation('kind', MAX_LENGTH.kind, (n) => ({ kind: text(n) })),
  inExpectation('subject/type', MAX_LENGTH.subjectType, (n) => ({ subject: { type: text(n), id: 'S-1' } })),
  inExpectation('subject/id', MAX_LENGTH.subjectId, (n) => ({ subject: { type: 'shipment', id: text(n) } })),
  inExpectation('expects', MAX_LENGTH.expects, (n) => ({ expects: text(n) })),
  inExpectation('satisfiedBy/factKey', MAX_LENGTH.factKey, (n) => ({ satisfiedBy: { factKey: text(n) } })),
  inExpectation('dueAt', MAX_LENGTH.instant, (n) => ({ dueAt: instant(n) })),
  inExpectation('horizon', MAX_LENGTH.instant, (n) => ({ horizon: instant(n) })),
  inExpectation('grace', MAX_LENGTH.duration, (n) => ({ grace: duration(n) })),
  inExpectation('anchor/expectationId', MAX_LENGTH.id, (n) => ({ anchor: { expectationId: text(n), offset: 'PT1H' } })),
  inExpectation('anchor/offset', MAX_LENGTH.duration, (n) => ({ anchor: { expectationId: 'a', offset: duration(n) } })),
  inExpectation('after/0', MAX_LENGTH.id, (n) => ({ after: [text(n)] })),
  inExpectation('basis', MAX_LENGTH.basis, (n) => ({ basis: text(n) })),
  inExpectation('supersedes', MAX_LENGTH.id, (n) => ({ supersedes: text(n) })),
  inFact('factKey', MAX_LENGTH.factKey, (n) => ({ factKey: text(n) })),
  inFact('observedAt', MAX_LENGTH.instant, (n) => ({ observedAt: instant(n) })),
  inFact('source', MAX_LENGTH.source, (n) => ({ source: text(n) })),
  inFact('subject/type', MAX_LENGTH.subjectType, (n) => ({ subject: { type: text(n), id: 'S' } })),
  inFact('subject/id', MAX_LENGTH.subjectId, (n) => ({ subject: { type: 'T', id: text(n) } })),
  ['withdraw/0', MAX_LENGTH.id, (n) => ({ withdraw: [text(n)] })],
];

describe('a text field', () => {
  it.each(fieldCases)('%s passes at %i characters', (_path, bound, make) => {
    expect(refusal(request(make(bound)))).toBeUndefined();
  });

  it.each(fieldCases)('%s is refused (422) at one more than %i, with its path and limit', (path, bound, make) => {
    const error = refusal(request(make(bound + 1)));

    expect(error).toBeInstanceOf(RuleViolationError);
    expect((error as RuleViolationError).errors).toEqual([
      {
        path,
        rule: 'max-length',
        limit: bound,
        message: `must be at most ${bound} characters (this one has ${bound + 1})`,
      },
    ]);
  });

  it('counts UTF-16 code units, so that a character outside the BMP counts twice', () => {
    const astral = '😀'.repeat(MAX_LENGTH.id / 2);

    expect(refusal(request({ withdraw: [astral] }))).toBeUndefined();
    expect(refusal(request({ withdraw: [`${astral}x`] }))).toBeInstanceOf(RuleViolationError);
  });
});

describe("the origin's ids", () => {
  const originPaths = { taskId: ['artifactUpdate', 'taskId'], contextId: ['artifactUpdate', 'contextId'] };

  it.each(['taskId', 'contextId'] as const)(
    '%s passes at its bound and is refused one past it, named by its path in the body',
    (field) => {
      const at = (n: number) => request({ facts: [fact()] }, { origin: { [field]: text(n) }, originPaths });

      const error = refusal(at(MAX_LENGTH.originId + 1));

      expect(refusal(at(MAX_LENGTH.originId))).toBeUndefined();
      expect((error as RuleViolationError).errors).toEqual([
        expect.objectContaining({ path: `artifactUpdate/${field}`, rule: 'max-length', limit: MAX_LENGTH.originId }),
      ]);
    },
  );
});

describe('a list', () => {
  const after = (n: number) => Array.from({ length: n }, (_, i) => `before-${i}`);

  it(`after passes with ${MAX_ITEMS.after} ids and is refused (422) with one more, at the list`, () => {
    const error = refusal(request({ expectations: [expectation('e1', { after: after(MAX_ITEMS.after + 1) })] }));

    expect(refusal(request({ expectations: [expectation('e1', { after: after(MAX_ITEMS.after) })] }))).toBeUndefined();
    expect((error as RuleViolationError).errors).toEqual([
      {
        path: 'expectations/0/after',
        rule: 'max-items',
        limit: MAX_ITEMS.after,
        message: `after names at most ${MAX_ITEMS.after} expectations (this one names ${MAX_ITEMS.after + 1})`,
      },
    ]);
  });

  const counts: Array<[keyof Items & keyof typeof MAX_ITEMS, (n: number) => Items, string]> = [
    [
      'expectations',
      (n) => ({ expectations: Array.from({ length: n }, (_, i) => expectation(`e${i}`)) }),
      'expectations',
    ],
    ['facts', (n) => ({ facts: Array.from({ length: n }, (_, i) => fact(i)) }), 'facts'],
    ['withdraw', (n) => ({ withdraw: Array.from({ length: n }, (_, i) => `w${i}`) }), 'withdraw ids'],
  ];

  it.each(counts)(
    'of %s passes at its bound and is refused (413) with one more, at the first item past it',
    (list, make, noun) => {
      const limit = MAX_ITEMS[list];

      const error = refusal(request(make(limit + 1)));

      expect(refusal(request(make(limit)))).toBeUndefined();
      expect(error).toBeInstanceOf(TooManyItemsError);
      expect((error as TooManyItemsError).errors).toEqual([
        {
          path: `${list}/${limit}`,
          rule: 'max-items',
          limit,
          message: `one request carries at most ${limit} ${noun}; this one carries ${limit + 1}: send the rest in another`,
        },
      ]);
    },
  );

  it('is counted before any item is parsed: a broken item past the bound does not turn the 413 into a 400', () => {
    const error = refusal(
      request({ facts: [...Array.from({ length: MAX_ITEMS.facts }, (_, i) => fact(i)), { factKey: '' }] }),
    );

    expect(error).toBeInstanceOf(TooManyItemsError);
  });

  it(`of distinct expectation ids referred to passes at ${MAX_ITEMS.references} and is refused (413) at one more`, () => {
    // 15 expectations with 32 `after` ids each refer to 15 × 33 = 495 ids; the withdraw ids make up the rest.
    const expectations = Array.from({ length: 15 }, (_, i) =>
      expectation(`e${i}`, { after: Array.from({ length: MAX_ITEMS.after }, (_, j) => `before-${i}-${j}`) }),
    );
    const withdraw = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`);

    const error = refusal(request({ expectations, withdraw: withdraw(6) }));

    expect(refusal(request({ expectations, withdraw: withdraw(5) }))).toBeUndefined();
    expect(error).toBeInstanceOf(TooManyItemsError);
    expect((error as TooManyItemsError).errors).toEqual([
      expect.objectContaining({ path: 'withdraw/5', rule: 'max-items', limit: MAX_ITEMS.references }),
    ]);
  });

  it('of distinct ids counts an id referred to twice once', () => {
    const expectations = Array.from({ length: MAX_ITEMS.expectations }, (_, i) =>
      expectation(`e${i}`, { after: Array.from({ length: MAX_ITEMS.after }, (_, j) => `before-${j}`) }),
    );

    expect(refusal(request({ expectations }))).toBeUndefined();
  });
});

describe("a card's kinds", () => {
  const cardWith = (n: number) =>
    cardDeclaring(
      Array.from({ length: n }, (_, i) => ({
        kind: `k${i}`,
        subjectType: 's',
        basis: 'contract',
        describes: 'the step is done',
      })),
    );

  it(`are read up to ${MAX_ITEMS.kinds}, and a card declaring one more is refused (422) at the list`, () => {
    const refused = checkDeclaration(cardWith(MAX_ITEMS.kinds + 1));

    expect(checkDeclaration(cardWith(MAX_ITEMS.kinds)).ok).toBe(true);
    expect(refused.ok ? [] : refused.errors).toEqual([
      {
        path: 'card/capabilities/extensions/0/params/kinds',
        rule: 'declaration-params',
        message: `the card's declaration of the extension is invalid: kinds must declare at most ${MAX_ITEMS.kinds} kinds (the watcher's bound)`,
      },
    ]);
  });
});

describe('the places left in routers and anchors', () => {
  const card = cardDeclaring([
    { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'the step is done' },
  ]);
  const occupancy = (counts: Partial<Record<keyof Occupancy, number>>): Occupancy => ({
    factKey: () => counts.factKey ?? 0,
    anchor: () => counts.anchor ?? 0,
    ownFactKey: () => counts.ownFactKey ?? 0,
  });
  const anchorRecord = {
    expectation: expectation('anchor'),
    projectedDueAt: '2026-12-01T00:00:00.000Z',
    dueAt: '2026-12-01T00:00:00.000Z',
    state: 'open' as const,
    raisedAt: '2026-11-01T00:00:00.000Z',
    lapses: [],
    lineage: 0,
    agent: { id: 'agent-a' },
    origin: {},
  };

  /** The errors planning `expectations` gives with `present` subscribers or dependents there already. */
  function plan(expectations: Expectation[], present: Partial<Record<keyof Occupancy, number>>): FieldError[] {
    const parsed = parseIngest(agent, request({ expectations }));
    const records = new Map([['anchor', anchorRecord]]);
    try {
      planIngest({
        parsed,
        principal: agent,
        records,
        card,
        occupancy: occupancy(present),
        settings: { maxLineage: 10, maxClockSkew: 'PT5M' },
        now: Date.parse('2026-06-01T00:00:00Z'),
      });
      return [];
    } catch (error) {
      if (!(error instanceof RuleViolationError)) throw error;
      return error.errors;
    }
  }

  const cases: Array<[keyof Occupancy, string, string, Partial<Expectation>]> = [
    ['factKey', 'fact-key-subscribers', 'expectations/0/satisfiedBy/factKey', {}],
    [
      'anchor',
      'anchor-dependents',
      'expectations/0/anchor/expectationId',
      { anchor: { expectationId: 'anchor', offset: 'PT1H' } },
    ],
  ];

  it.each(cases)(
    'a raise takes the last place the bridge gives of a %s (%s), and is refused (422) once it is taken',
    (what, rule, path, extra) => {
      const limit = 100 - RACE_ROOM;

      expect(plan([expectation('e1', extra)], { [what]: limit - 1 })).toEqual([]);
      expect(plan([expectation('e1', extra)], { [what]: limit })).toEqual([
        expect.objectContaining({ path, rule, limit }),
      ]);
    },
  );

  it.each([['ownFactKey', 'fact-key-share', 'expectations/0/satisfiedBy/factKey']] as const)(
    'an agent takes its last share of a key (%s), and is refused (422 %s) past it, whatever is free',
    (what, rule, path) => {
      expect(
        plan([expectation('e1')], {
          [what]: MAX_AGENT_SHARE - 1,
          factKey: MAX_AGENT_SHARE - 1,
        }),
      ).toEqual([]);
      expect(plan([expectation('e1')], { [what]: MAX_AGENT_SHARE, factKey: MAX_AGENT_SHARE })).toEqual([
        expect.objectContaining({ path, rule, limit: MAX_AGENT_SHARE }),
      ]);
    },
  );

  it("counts an agent's raises of the same request against its share", () => {
    const key = { satisfiedBy: { factKey: 'shared' } };

    const errors = plan([expectation('e1', key), expectation('e2', key)], {
      ownFactKey: MAX_AGENT_SHARE - 1,
      factKey: MAX_AGENT_SHARE - 1,
    });

    expect(errors).toEqual([
      expect.objectContaining({ path: 'expectations/1/satisfiedBy/factKey', rule: 'fact-key-share' }),
    ]);
  });

  it('counts the raises of the same request on the same fact key', () => {
    const key = { satisfiedBy: { factKey: 'shared' } };
    const limit = 100 - RACE_ROOM;

    const errors = plan([expectation('e1', key), expectation('e2', key)], { factKey: limit - 1 });

    expect(errors).toEqual([
      expect.objectContaining({ path: 'expectations/1/satisfiedBy/factKey', rule: 'fact-key-subscribers' }),
    ]);
  });

  it('lets a supersede on the same key and subject through at the bound: its predecessor leaves them', () => {
    const full = { factKey: 100 - RACE_ROOM, subject: 100 - RACE_ROOM };
    const successor = expectation('e2', { supersedes: 'anchor', satisfiedBy: anchorRecord.expectation.satisfiedBy });

    expect(plan([successor], full)).toEqual([]);
  });
});
