/**
 * Bad input, property-based with fast-check against the real `createApp` on a real Temporal client:
 * malformed and hostile payloads for `POST /a2a/events` and `POST /v1/facts` (wrong types, missing and extra
 * fields, invalid dates and durations, huge strings and arrays, deep nesting, `__proto__`/`constructor` keys, odd
 * unicode in ids, invalid JSON, wrong content types). Each must get a 4xx application/problem+json, never a 5xx,
 * and start nothing: no worker polls the bridge's task queue, so anything started would stay there to be counted.
 * Every bound of core/limits.ts is met exactly (taken) and exceeded by one (refused, naming field and limit).
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { WorkflowNotFoundError } from '@temporalio/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ITEMS, MAX_LENGTH } from '../../core/limits.js';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { joinPath } from '../../src/service/errors.js';
import { expectationWorkflowId, factRouterWorkflowId } from '../../core/ids.js';
import { startTestAgent, type TestAgent } from '../support/agent.js';
import {
  send,
  sendFollowingRetryAfter,
  startBridgeApp,
  unique,
  type Answer,
  type BridgeApp,
} from '../support/bridge.js';
import { countWorkflows, useClient, useWatcherWorker } from '../support/watcher.js';
import { deliveryExpectation } from '../support/fixtures.js';
import { onQueues } from '../support/ids.js';

const run = unique();
const taskQueue = `bad-input-${randomUUID()}`;
const client = useClient();
let agent: TestAgent;
let bridge: BridgeApp;

/** Every input sent, and the ids and fact keys they carried (checked at the end: none may have started anything). */
let tried = 0;
const idsUsed = new Set<string>();
const factKeysUsed = new Set<string>();

beforeAll(async () => {
  agent = await startTestAgent();
  bridge = await startBridgeApp(client, taskQueue, [
    { id: 'agent-a', roles: ['agent'], cardUrl: agent.cardUrl },
    { id: 'feed', roles: ['reporter'] },
  ]);
});

afterAll(async () => {
  console.log(`bad-input: ${tried} inputs tried`);
  await bridge?.close();
  await agent?.close();
});

// ── building blocks ──────────────────────────────────────────────────────────────────────────────────────

const PREFIX = `bad-${run}-`;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Strings that have broken parsers, logs, queries and terminals elsewhere. */
const oddText = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\u202e',
    '\u200b',
    'e\u0301',
    '😀',
    '\ud800',
    '\udfff',
    '\n\r\t',
    '../../etc/passwd',
    "' OR WorkflowId != '",
    '%00',
    '${jndi:ldap://127.0.0.1/x}',
    '<script>alert(1)</script>',
    '\\',
    '"',
    'ｅｘｐ',
    '\ufeff',
    '__proto__',
    'constructor',
    'x'.repeat(600),
  ),
  fc.string({ unit: 'binary', maxLength: 24 }),
);

/** An id in this run's namespace with an odd tail. */
const oddId = fc.tuple(fc.nat({ max: 1_000_000 }), oddText).map(([n, tail]) => `${PREFIX}${n}${tail}`);

/** A valid `delivery` expectation `id`, due in 2030, on a fact key of this run. */
const dueExpectationOf = (id: string) =>
  deliveryExpectation(id, '2030-01-01T00:00:00Z', { satisfiedBy: { factKey: `${PREFIX}key-${id}` } });

const validExpectation = fc
  .tuple(oddId, oddText)
  .map(([id, tail]) => ({ ...dueExpectationOf(id), expects: `The shipment is delivered${tail}` }));

const validFact = oddId.map((id) => ({ factKey: `${PREFIX}key-${id}`, observedAt: '2026-01-01T00:00:00Z' }));

/** Values of the wrong type for a string field. */
const notAString = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
);
/** Values of the wrong type (or shape) for an object field. */
const notAnObject = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.constant({}),
);

/** Date-times the seed's `date-time` (UTC) does not allow; several of them `Date.parse` would take. */
const invalidDate = fc.oneof(
  fc.constantFrom(
    '2026-01-01T00:00:00',
    '2026-01-01',
    '2026-13-01T00:00:00Z',
    '2026-01-32T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T25:00:00Z',
    '2026-01-01T00:60:00Z',
    '2026-01-01T00:00:00+02:00',
    '2026-01-01T00:00:00+00:00',
    '2026-01-01 00:00:00Z',
    '2026-01-01t00:00:00z',
    '2026-01-01T00:00Z',
    '+275760-09-13T00:00:00.000Z',
    '１０２６-01-01T00:00:00Z',
    'tomorrow',
    'NaN',
    '',
    '1767225600000',
  ),
  fc.string({ maxLength: 30 }).filter((s) => !/^\d{4}-/.test(s)),
);

/** Durations that are not ISO 8601 (or not in the form the seed allows). */
const invalidDuration = fc.oneof(
  fc.constantFrom(
    'P',
    'PT',
    '6H',
    'P1.5.5D',
    'P1,5,5D',
    '-P1D',
    'P-1D',
    'P1DT',
    'PT1H30',
    'PT-1S',
    'pt1h',
    'P1W2D',
    '',
    'forever',
    'PT1H PT1H',
  ),
  fc.string({ maxLength: 20 }).filter((s) => !s.startsWith('P')),
);

const requiredStringFields = ['expectationId', 'kind', 'expects', 'dueAt', 'basis'] as const;
const nonEmptyPaths = [
  ['expectationId'],
  ['kind'],
  ['expects'],
  ['subject', 'type'],
  ['subject', 'id'],
  ['satisfiedBy', 'factKey'],
];

type Break = { op: 'delete'; path: readonly string[] } | { op: 'set'; path: readonly string[]; value: unknown };

/** A change that deletes the field at one of `paths`. */
const deleting = (paths: fc.Arbitrary<readonly string[]>): fc.Arbitrary<Break> =>
  fc.record({ op: fc.constant('delete' as const), path: paths });
/** A change that sets the field at one of `paths` to one of `values`. */
const setting = (paths: fc.Arbitrary<readonly string[]>, values: fc.Arbitrary<unknown>): fc.Arbitrary<Break> =>
  fc.record({ op: fc.constant('set' as const), path: paths, value: values });

/** `.` and `..`: refused as ids, fact keys and subject ids. */
const dotSegment = fc.constantFrom('.', '..');

/** One change that makes an expectation invalid, described as data so that a counterexample reads plainly. */
const expectationBreak: fc.Arbitrary<Break> = fc.oneof(
  deleting(
    fc.constantFrom(
      ...requiredStringFields.map((f) => [f]),
      ['subject'],
      ['satisfiedBy'],
      ['subject', 'type'],
      ['subject', 'id'],
      ['satisfiedBy', 'factKey'],
    ),
  ),
  setting(
    fc.constantFrom(
      ...requiredStringFields.map((f) => [f]),
      ['subject', 'id'],
      ['satisfiedBy', 'factKey'],
      ['supersedes'],
      ['horizon'],
    ),
    notAString,
  ),
  setting(fc.constantFrom(['subject'], ['satisfiedBy'], ['anchor']), notAnObject),
  setting(fc.constantFrom(['dueAt'], ['horizon']), invalidDate),
  setting(fc.constant(['grace']), invalidDuration),
  setting(
    fc.constant(['anchor']),
    invalidDuration.map((offset) => ({ expectationId: `${PREFIX}anchor`, offset })),
  ),
  setting(fc.constantFrom(...nonEmptyPaths), fc.constant('')),
  setting(
    fc.constant(['after']),
    fc.oneof(fc.string(), fc.constant(null), fc.constant([1, 2]), fc.constant(['']), fc.constant({})),
  ),
  // Schema-valid, but a rule of DESIGN 3.1 is broken (422): nothing may start either.
  setting(
    fc.constant(['kind']),
    oddId.map((id) => `undeclared-${id}`),
  ),
  setting(fc.constant(['basis']), fc.constantFrom('observed', 'estimate', '')),
  setting(
    fc.constant(['after']),
    oddId.map((id) => [`never-${id}`]),
  ),
  setting(
    fc.constant(['supersedes']),
    oddId.map((id) => `never-${id}`),
  ),
  setting(
    fc.constant(['anchor']),
    oddId.map((id) => ({ expectationId: `never-${id}`, offset: 'PT1H' })),
  ),
  // A dot segment, which a URL path (the page's, `links.self`) resolves to another resource.
  setting(
    fc.constantFrom(['expectationId'], ['subject', 'id'], ['satisfiedBy', 'factKey'], ['supersedes']),
    dotSegment,
  ),
  setting(
    fc.constant(['after']),
    dotSegment.map((id) => [id]),
  ),
  setting(
    fc.constant(['anchor']),
    dotSegment.map((id) => ({ expectationId: id, offset: 'PT1H' })),
  ),
);

/** One change that makes a fact invalid. */
const factBreak: fc.Arbitrary<Break> = fc.oneof(
  deleting(fc.constantFrom(['factKey'], ['observedAt'])),
  setting(fc.constantFrom(['factKey'], ['observedAt'], ['source']), notAString),
  setting(fc.constant(['observedAt']), invalidDate),
  setting(fc.constant(['factKey']), fc.constant('')),
  setting(
    fc.constant(['subject']),
    fc.oneof(notAnObject, fc.constant({ type: '', id: 'x' }), fc.constant({ type: 'x' })),
  ),
  setting(fc.constant(['factKey']), dotSegment),
  setting(
    fc.constant(['subject']),
    dotSegment.map((id) => ({ type: 'shipment', id })),
  ),
);

/** Keys and values that are harmless alone and hostile in company: extra fields, prototype keys, deep values. */
const FIELDS = new Set([
  'expectationId',
  'kind',
  'subject',
  'expects',
  'satisfiedBy',
  'dueAt',
  'grace',
  'anchor',
  'after',
  'horizon',
  'basis',
  'supersedes',
  'factKey',
  'observedAt',
  'source',
  'facts',
  'expectations',
  'withdraw',
  EXTENSION_URI,
]);
const decoration = fc.oneof(
  fc.record({
    key: fc.string({ maxLength: 12 }).filter((key) => !FIELDS.has(key)),
    value: fc.jsonValue({ maxDepth: 3 }),
  }),
  fc.record({
    key: fc.constant('__proto__'),
    value: fc.constant({ polluted: 'yes', isAdmin: true, expectationId: 'from-proto' }),
  }),
  fc.record({ key: fc.constant('constructor'), value: fc.constant({ prototype: { polluted: 'yes' } }) }),
  fc.record({ key: fc.constant('prototype'), value: fc.constant({ polluted: 'yes' }) }),
  fc.record({ key: fc.constant('deep'), value: fc.integer({ min: 100, max: 2_000 }).map(nest) }),
);
type Decoration = { key: string; value: unknown };

/** A value nested `depth` levels deep (objects and arrays in turn). */
function nest(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { d: value };
  return value;
}

/** The JSON text of a value nested `depth` levels deep, built as text: JSON.stringify would overflow the stack. */
const nestedText = (depth: number): string => '{"d":['.repeat(depth) + '"bottom"' + ']}'.repeat(depth);

/** `json` as text with the string "__NEST__" replaced by a value nested `depth` levels deep. */
const withNested = (json: unknown, depth: number): string =>
  JSON.stringify(json).replace('"__NEST__"', nestedText(depth));

/** A deep copy with the break applied (the path's parents are created as plain objects). */
function broken(base: Record<string, unknown>, change: Break): Record<string, unknown> {
  const copy = structuredClone(base);
  let target: Record<string, unknown> = copy;
  for (const key of change.path.slice(0, -1)) {
    if (typeof target[key] !== 'object' || target[key] === null) target[key] = {};
    target = target[key] as Record<string, unknown>;
  }
  const last = change.path.at(-1)!;
  if (change.op === 'delete') delete target[last];
  else target[last] = change.value;
  return copy;
}

/** Adds own properties, `__proto__` included (as JSON.parse would make it), without touching any prototype. */
function decorate<T extends object>(value: T, decorations: Decoration[]): T {
  for (const { key, value: v } of decorations) {
    Object.defineProperty(value, key, { value: v, enumerable: true, configurable: true, writable: true });
  }
  return value;
}

/** Where the items go: every place of DESIGN 3.1 that carries expectations, in v1.0 and v0.3. */
const envelopes = [
  'artifactUpdate',
  'inputRequiredStatus',
  'taskArtifact',
  'v03Task',
  'v03ArtifactUpdate',
  'v03InputRequired',
] as const;
type Envelope = (typeof envelopes)[number];

function envelope(kind: Envelope, payload: unknown, decorations: Decoration[] = []): unknown {
  const metadata = decorate({ [EXTENSION_URI]: payload } as Record<string, unknown>, decorations);
  const ids = { taskId: `t-${run}`, contextId: `c-${run}` };
  switch (kind) {
    case 'artifactUpdate':
      return { artifactUpdate: { ...ids, artifact: { artifactId: 'a', parts: [{ text: 'plan' }], metadata } } };
    case 'inputRequiredStatus':
      return {
        statusUpdate: {
          ...ids,
          status: {
            state: 'TASK_STATE_INPUT_REQUIRED',
            message: { messageId: 'm', role: 'ROLE_AGENT', parts: [], metadata },
          },
        },
      };
    case 'taskArtifact':
      return {
        task: {
          id: ids.taskId,
          contextId: ids.contextId,
          status: { state: 'TASK_STATE_WORKING' },
          artifacts: [{ artifactId: 'a', parts: [], metadata }],
        },
      };
    case 'v03Task':
      return {
        kind: 'task',
        id: ids.taskId,
        contextId: ids.contextId,
        status: { state: 'working' },
        artifacts: [{ artifactId: 'a', parts: [], metadata }],
      };
    case 'v03ArtifactUpdate':
      return { kind: 'artifact-update', ...ids, artifact: { artifactId: 'a', parts: [], metadata } };
    case 'v03InputRequired':
      return {
        kind: 'status-update',
        ...ids,
        status: {
          state: 'input-required',
          message: { kind: 'message', messageId: 'm', role: 'agent', parts: [], metadata },
        },
      };
  }
}

/** Remembers the ids and fact keys a body carries, wherever they are. */
function remember(items: Record<string, unknown>[]): void {
  for (const item of items) {
    if (typeof item.expectationId === 'string') idsUsed.add(item.expectationId);
    const key = (item.satisfiedBy as { factKey?: unknown } | undefined)?.factKey ?? item.factKey;
    if (typeof key === 'string') factKeysUsed.add(key);
  }
}

const token = (who: 'agent-a' | 'feed') => bridge.tokens[who];

/** Sends one input and checks the answer: 4xx problem+json naming its own status, never a 5xx. */
async function expectRefused(answer: Promise<Answer>): Promise<Answer> {
  tried++;
  const a = await answer;
  expect(a.status, JSON.stringify(a.body).slice(0, 500)).toBeGreaterThanOrEqual(400);
  expect(a.status, JSON.stringify(a.body).slice(0, 500)).toBeLessThan(500);
  expect(a.contentType).toMatch(/^application\/problem\+json/);
  expect(a.body).toMatchObject({
    status: a.status,
    type: expect.stringMatching(/^urn:expectations-watcher:problem:/),
    title: expect.any(String),
    detail: expect.any(String),
  });
  return a;
}

/** Checks `numRuns` inputs drawn from `inputs`: each is refused (`expectRefused`) when `answerTo` sends it. */
function refusesEvery<T>(inputs: fc.Arbitrary<T>, answerTo: (input: T) => Promise<Answer>, numRuns: number) {
  return fc.assert(
    fc.asyncProperty(inputs, async (input) => {
      await expectRefused(answerTo(input));
    }),
    { numRuns },
  );
}

const events = (json: unknown, as: 'agent-a' | 'feed' = 'agent-a') =>
  send(`${bridge.url}/a2a/events`, { token: token(as), json });
const facts = (json: unknown) => send(`${bridge.url}/v1/facts`, { token: token('feed'), json });

/**
 * Cases per property in `npm test`, which must stay within its time budget on two cores. `WATCHER_PROPERTY_SCALE=2
 * npx vitest run test/e2e/bad-input.property.test.ts` runs the full sizes (3,000 / 2,000 / 2,000 / 1,000).
 */
const SCALE = Number(process.env.WATCHER_PROPERTY_SCALE ?? 1);
const RUNS = { items: 1_500 * SCALE, envelopes: 1_000 * SCALE, facts: 1_000 * SCALE, transport: 500 * SCALE, huge: 60 };

// ── properties ───────────────────────────────────────────────────────────────────────────────────────────

describe('POST /a2a/events with bad expectations', () => {
  it('refuses every request that holds one broken expectation, and raises none of the good ones beside it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...envelopes),
        fc.array(validExpectation, { maxLength: 3 }),
        fc.array(fc.tuple(validExpectation, expectationBreak, fc.array(decoration, { maxLength: 2 })), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(validFact, { maxLength: 2 }),
        fc.array(decoration, { maxLength: 2 }),
        fc.boolean(),
        async (kind, good, bad, goodFacts, outer, badFirst) => {
          const broke = bad.map(([e, change, decorations]) => decorate(broken(e, change), decorations));
          const expectations = badFirst ? [...broke, ...good] : [...good, ...broke];
          remember([...good, ...broke, ...goodFacts]);
          await expectRefused(events(envelope(kind, { expectations, facts: goodFacts }, outer)));
        },
      ),
      { numRuns: RUNS.items },
    );
  });

  it.each(['.', '..'])('refuses %j as an expectation id with a 400 naming the field and the rule', async (dots) => {
    const e = { ...dueExpectationOf(`${PREFIX}dots`), expectationId: dots };
    remember([e]);

    const answer = await expectRefused(events(envelope('artifactUpdate', { expectations: [e] })));

    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([
      {
        path: expect.stringMatching(/\/expectations\/0\/expectationId$/),
        message: "expectationId must not be '.' or '..', which a URL path reads as the folder or its parent",
      },
    ]);
  });

  it('refuses a reporter that carries expectations or withdrawals (403), whatever they hold', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...envelopes), validExpectation, fc.boolean(), async (kind, e, asWithdraw) => {
        remember([e]);
        const payload = asWithdraw ? { withdraw: [e.expectationId] } : { expectations: [e] };
        const answer = await expectRefused(events(envelope(kind, payload), 'feed'));
        // A lone surrogate is refused (400) before anything else is looked at; anything else is the role (403).
        const carried = asWithdraw
          ? [e.expectationId]
          : [e.expectationId, e.expects, e.subject.id, e.satisfiedBy.factKey];
        // So is a withdraw list with a control character in an id: the list is part of the envelope's shape.
        const illFormed =
          carried.some((text) => LONE_SURROGATE.test(text)) ||
          (asWithdraw && [...e.expectationId].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f'));
        expect(answer.status).toBe(illFormed ? 400 : 403);
      }),
      { numRuns: 300 },
    );
  });
});

describe('POST /a2a/events with bad facts and bad envelopes', () => {
  it('refuses every request that holds one broken fact, in any place a fact may be', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...envelopes, 'message' as const),
        fc.array(validFact, { maxLength: 3 }),
        fc.array(fc.tuple(validFact, factBreak), { minLength: 1, maxLength: 3 }),
        async (kind, good, bad) => {
          const items = [...good, ...bad.map(([f, change]) => broken(f, change))];
          remember(items);
          const body =
            kind === 'message'
              ? {
                  message: {
                    messageId: 'm',
                    role: 'ROLE_USER',
                    parts: [],
                    metadata: { [EXTENSION_URI]: { facts: items } },
                  },
                }
              : envelope(kind, { facts: items });
          await expectRefused(events(body, 'feed'));
        },
      ),
      { numRuns: RUNS.envelopes },
    );
  });

  /** Envelopes broken where the bridge reads them: ids, states, metadata and the extension's own shape. */
  const envelopeBreak = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
    fc.constant({}),
    fc.constant({ task: {}, message: {} }),
    fc.constant({ kind: 'not-a-kind' }),
    fc.constant({ kind: 'task', id: 't' }),
    fc.record({
      artifactUpdate: fc.record({
        taskId: fc.oneof(fc.constant(''), notAString),
        contextId: fc.constant('c'),
        artifact: fc.constant({}),
      }),
    }),
    fc.record({
      artifactUpdate: fc.record({
        taskId: fc.constant('t'),
        contextId: fc.constant('c'),
        artifact: notAnObject.filter((v) => JSON.stringify(v) !== '{}'),
      }),
    }),
    fc.record({
      statusUpdate: fc.record({
        taskId: fc.constant('t'),
        contextId: fc.constant('c'),
        status: fc.record({ state: fc.oneof(fc.string(), fc.integer({ min: 9 }), fc.integer({ max: -1 })) }),
      }),
    }),
    fc.record({
      artifactUpdate: fc.record({
        taskId: fc.constant('t'),
        contextId: fc.constant('c'),
        artifact: fc.record({ metadata: fc.oneof(fc.string(), fc.array(fc.integer()), fc.integer()) }),
      }),
    }),
    // metadata[URI] of the wrong shape: not an object, expectations or facts not arrays, withdraw ids not strings.
    fc
      .oneof(
        fc.jsonValue({ maxDepth: 1 }).filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
        fc.record({ expectations: fc.oneof(fc.string(), fc.integer(), fc.constant({}), fc.constant(null)) }),
        fc.record({ facts: fc.oneof(fc.string(), fc.integer(), fc.constant({}), fc.constant(null)) }),
        fc.record({
          withdraw: fc.oneof(fc.string(), fc.constant(['']), fc.constant([1]), fc.constant([null]), fc.constant({})),
        }),
      )
      .chain((payload) => fc.constantFrom(...envelopes).map((kind) => envelope(kind, payload))),
    // Expectations and withdrawals where the extension does not allow them (422).
    fc.tuple(validExpectation, fc.boolean()).map(([e, inMessage]) => {
      remember([e]);
      const metadata = { [EXTENSION_URI]: { expectations: [e] } };
      return inMessage
        ? { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [], metadata } }
        : {
            statusUpdate: {
              taskId: 't',
              contextId: 'c',
              status: {
                state: 'TASK_STATE_WORKING',
                message: { messageId: 'm', role: 'ROLE_AGENT', parts: [], metadata },
              },
            },
          };
    }),
  );

  it('refuses envelopes that are not A2A objects, or carry the extension in the wrong shape or place', () =>
    refusesEvery(envelopeBreak, (body) => events(body), RUNS.envelopes));
});

describe('POST /v1/facts with bad bodies', () => {
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
    fc.constant({}),
    fc.record({ facts: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.constant({}), fc.constant([])) }),
    fc
      .tuple(
        fc.array(validFact, { maxLength: 3 }),
        fc.array(fc.tuple(validFact, factBreak), { minLength: 1, maxLength: 3 }),
        fc.array(decoration, { maxLength: 3 }),
      )
      .map(([good, bad, decorations]) => {
        const items = [...good, ...bad.map(([f, change]) => broken(f, change))];
        remember(items);
        return decorate({ facts: items }, decorations);
      }),
  );

  it('refuses every body that is not a list of good facts, and records none of the good ones beside a bad one', () =>
    refusesEvery(body, facts, RUNS.facts));
});

describe('bodies that are not JSON, or not sent as JSON', () => {
  const validBodies = (key: string) => ({
    events: JSON.stringify(
      envelope('artifactUpdate', { facts: [{ factKey: `${PREFIX}${key}`, observedAt: '2026-01-01T00:00:00Z' }] }),
    ),
    facts: JSON.stringify({ facts: [{ factKey: `${PREFIX}${key}`, observedAt: '2026-01-01T00:00:00Z' }] }),
  });

  /** Corruptions that leave no valid JSON behind. */
  const corrupt = fc.oneof(
    fc.nat().map((n) => (text: string) => text.slice(0, 1 + (n % (text.length - 1)))),
    fc.constantFrom('x', ',', '}', ']', '"', '{', '\u0000').map((tail) => (text: string) => `${text}${tail}`),
    fc.constant((text: string) => text.replaceAll('"', "'")),
    fc.constant((text: string) => `${text.slice(0, -1)},}`),
    fc.constant((text: string) => text.replace('"2026-01-01T00:00:00Z"', 'NaN')),
    fc.constant((text: string) => `// a comment\n${text}`),
    fc.constant((text: string) => text.replace(':', '=')),
  );

  it('answers 400 to JSON that does not parse, on both endpoints', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('events', 'facts') as fc.Arbitrary<'events' | 'facts'>,
        corrupt,
        fc.nat(),
        async (which, mangle, n) => {
          const raw = mangle(validBodies(`json-${n}`)[which]);
          factKeysUsed.add(`${PREFIX}json-${n}`);
          const answer = await expectRefused(
            send(`${bridge.url}/${which === 'events' ? 'a2a/events' : 'v1/facts'}`, { token: token('feed'), raw }),
          );
          expect(answer.status).toBe(400);
        },
      ),
      { numRuns: RUNS.transport },
    );
  });

  it.each([
    ['text/plain', 415],
    ['text/json', 415],
    ['application/x-www-form-urlencoded', 415],
    ['multipart/form-data; boundary=x', 415],
    ['application/xml', 415],
    ['application/jsonx', 415],
    ['application/octet-stream', 415],
    // UTF-16 is a charset body-parser reads: the bytes sent are UTF-8, so what it reads is not JSON.
    ['application/json; charset=utf-16', 400],
    ['application/json; charset=iso-8859-1', 415],
  ])('answers %s with %i, on both endpoints', async (contentType, status) => {
    for (const [path, raw] of [
      ['a2a/events', validBodies(`ct-${contentType}`).events],
      ['v1/facts', validBodies(`ct-${contentType}`).facts],
    ] as const) {
      factKeysUsed.add(`${PREFIX}ct-${contentType}`);
      const answer = await expectRefused(send(`${bridge.url}/${path}`, { token: token('feed'), raw, contentType }));
      expect(answer.status).toBe(status);
    }
  });

  it('answers 415 to a body sent with no content type', async () => {
    factKeysUsed.add(`${PREFIX}ct-none`);
    const raw = Buffer.from(validBodies('ct-none').facts);
    const answer = await expectRefused(
      fetch(`${bridge.url}/v1/facts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token('feed')}` },
        body: raw,
      }).then(async (r) => ({
        status: r.status,
        headers: r.headers,
        contentType: r.headers.get('content-type') ?? '',
        body: JSON.parse(await r.text()),
        ms: 0,
      })),
    );
    expect(answer.status).toBe(415);
  });

  it.each([
    ['gzip', () => Buffer.from('this is not gzip')],
    ['deflate', () => Buffer.from('nor is this deflate')],
    ['gzip', () => gzipSync(Buffer.from('{"facts": [ {"factKey": ')).subarray(0, 20)],
    ['x-unheard-of', () => Buffer.from(validBodies('enc').facts)],
  ])('refuses a body in Content-Encoding %s that cannot be decoded', async (encoding, raw) => {
    factKeysUsed.add(`${PREFIX}enc`);
    const answer = await expectRefused(
      fetch(`${bridge.url}/v1/facts`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token('feed')}`,
          'content-type': 'application/json',
          'content-encoding': encoding,
        },
        body: raw(),
      }).then(async (r) => {
        const text = await r.text();
        return {
          status: r.status,
          headers: r.headers,
          contentType: r.headers.get('content-type') ?? '',
          body: JSON.parse(text),
          ms: 0,
        };
      }),
    );
    expect([400, 415]).toContain(answer.status);
  });
});

describe('huge and deep bodies', () => {
  it('refuses huge strings, huge arrays and deep nesting with a 4xx (413 over 1 MiB)', async () => {
    const text = (path: 'events' | 'facts', json: unknown) => ({ path, raw: JSON.stringify(json) });
    const shapes = fc.oneof(
      // A huge id or fact key in an otherwise broken item.
      fc.integer({ min: 10_000, max: 900_000 }).map((n) =>
        text(
          'events',
          envelope('artifactUpdate', {
            expectations: [{ expectationId: `${PREFIX}${'i'.repeat(n)}`, kind: 'delivery' }],
          }),
        ),
      ),
      fc
        .integer({ min: 10_000, max: 900_000 })
        .map((n) => text('facts', { facts: [{ factKey: `${PREFIX}${'k'.repeat(n)}`, observedAt: 'then' }] })),
      // Over the limit.
      fc
        .integer({ min: 1_100_000, max: 2_000_000 })
        .map((n) => text('facts', { facts: [{ factKey: 'k'.repeat(n), observedAt: '2026-01-01T00:00:00Z' }] })),
      // Huge arrays of broken items, and of good items beside one broken one.
      fc
        .integer({ min: 1_000, max: 20_000 })
        .map((n) => text('facts', { facts: Array.from({ length: n }, () => ({})) })),
      fc.integer({ min: 1_000, max: 10_000 }).map((n) =>
        text('facts', {
          facts: [
            ...Array.from({ length: n }, (_, i) => ({
              factKey: `${PREFIX}many-${i}`,
              observedAt: '2026-01-01T00:00:00Z',
            })),
            { factKey: '' },
          ],
        }),
      ),
      fc.integer({ min: 1_000, max: 5_000 }).map((n) =>
        text(
          'events',
          envelope('artifactUpdate', {
            expectations: Array.from({ length: n }, (_, i) => ({ expectationId: `${PREFIX}arr-${i}` })),
          }),
        ),
      ),
      // Deep nesting: as the body, as the extension's payload, inside an expectation, and where an object is expected.
      fc.integer({ min: 1_000, max: 100_000 }).map((n) => ({ path: 'facts' as const, raw: nestedText(n) })),
      fc.integer({ min: 1_000, max: 50_000 }).map((n) => ({
        path: 'events' as const,
        raw: withNested(envelope('artifactUpdate', { expectations: ['__NEST__'] }), n),
      })),
      fc.integer({ min: 1_000, max: 50_000 }).map((n) => ({
        path: 'events' as const,
        raw: withNested(
          envelope('artifactUpdate', {
            expectations: [{ expectationId: `${PREFIX}deep`, kind: 'delivery', extra: '__NEST__' }],
          }),
          n,
        ),
      })),
      fc.integer({ min: 1_000, max: 50_000 }).map((n) => ({
        path: 'facts' as const,
        raw: withNested(
          { facts: [{ factKey: `${PREFIX}deep`, observedAt: '2026-01-01T00:00:00Z', subject: '__NEST__' }] },
          n,
        ),
      })),
    );
    await fc.assert(
      fc.asyncProperty(shapes, async ({ path, raw }) => {
        const answer = await expectRefused(
          send(`${bridge.url}/${path === 'events' ? 'a2a/events' : 'v1/facts'}`, {
            token: token(path === 'events' ? 'agent-a' : 'feed'),
            raw,
          }),
        );
        expect(answer.status).not.toBe(404);
      }),
      { numRuns: RUNS.huge },
    );
  });
});

describe('the other endpoints: path parameters and list queries', () => {
  it.each(['%', '%E0%A4%A', '%ED%A0%80', '%FF', '%C0%AF'])(
    'answers 400, not 500, to an expectation id that is not valid percent-encoding: %s',
    async (id) => {
      const read = await expectRefused(send(`${bridge.url}/v1/expectations/${id}`, { token: token('agent-a') }));
      const withdraw = await expectRefused(
        send(`${bridge.url}/v1/expectations/${id}/withdraw`, { token: token('agent-a'), json: { reason: 'bad id' } }),
      );

      expect([read.status, withdraw.status]).toEqual([400, 400]);
    },
  );

  it('answers 400 naming the field when a string holds a lone surrogate', async () => {
    const answer = await expectRefused(
      facts({ facts: [{ factKey: `${PREFIX}\ud800`, observedAt: '2026-01-01T00:00:00Z' }] }),
    );

    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([
      { path: 'facts/0/factKey', message: 'must be well-formed Unicode (it holds a lone surrogate)' },
    ]);
  });

  it('answers JSON-RPC -32600 on /a2a/jsonrpc, to a lone surrogate and to a body nested 5,000 deep (no internal error)', async () => {
    const rpc = (params: unknown) => ({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params });
    const jsonrpc = (raw: string) => send(`${bridge.url}/a2a/jsonrpc`, { token: token('agent-a'), raw });
    const lone = await jsonrpc(
      JSON.stringify(rpc({ message: { messageId: 'm\ud800', role: 'ROLE_USER', parts: [] } })),
    );
    const deep = await jsonrpc(withNested(rpc({ message: '__NEST__' }), 5_000));

    // JSON-RPC answers in its own envelope (test/e2e/jsonrpc-conformance.test.ts has the rest of its rules).
    expect([lone.status, deep.status]).toEqual([200, 200]);
    expect(lone.body.error).toEqual({
      code: -32600,
      message: 'Invalid Request: params.message.messageId must be well-formed Unicode (it holds a lone surrogate)',
    });
    expect(deep.body.error).toEqual({ code: -32600, message: expect.stringContaining('nests deeper than 64 levels') });
  });
});

/** Schema-valid but hostile: odd ids are raised and read back as sent, or refused with a 4xx; never a 5xx. */
describe('odd but well-formed ids, on a worker of their own', () => {
  const oddQueue = `bad-input-odd-${randomUUID()}`;
  useWatcherWorker(oddQueue);
  let oddBridge: BridgeApp;

  beforeAll(async () => {
    oddBridge = await startBridgeApp(client, oddQueue, [{ id: 'agent-a', roles: ['agent'], cardUrl: agent.cardUrl }]);
  });

  afterAll(async () => {
    await oddBridge?.close();
  });

  const wellFormedOdd = fc
    .tuple(
      fc.nat({ max: 1_000_000 }),
      oddText.filter((text) => !LONE_SURROGATE.test(text) && text !== ''),
    )
    .map(([n, tail]) => `odd-${run}-${n}${tail}`);

  it('raises each as sent and reads it back under the same id, or refuses it with a 4xx', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(wellFormedOdd, async (id) => {
        fc.pre(!seen.has(id));
        seen.add(id);
        tried++;
        const e = {
          expectationId: id,
          kind: 'delivery',
          subject: { type: 'shipment', id },
          expects: 'x',
          satisfiedBy: { factKey: id },
          dueAt: '2030-01-01T00:00:00Z',
          basis: 'contract',
        };

        const raised = await send(`${oddBridge.url}/a2a/events`, {
          token: oddBridge.tokens['agent-a'],
          json: envelope('artifactUpdate', { expectations: [e] }),
        });
        expect(raised.status, JSON.stringify(raised.body)).toBeLessThan(500);
        if (raised.status !== 200) {
          expect(raised.contentType).toMatch(/^application\/problem\+json/);
          return;
        }
        const read = await send(`${oddBridge.url}/v1/expectations/${encodeURIComponent(id)}`, {
          token: oddBridge.tokens['agent-a'],
        });
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(read.body.expectation.expectationId).toBe(id);
        const again = await send(`${oddBridge.url}/a2a/events`, {
          token: oddBridge.tokens['agent-a'],
          json: envelope('artifactUpdate', { expectations: [e] }),
        });
        expect(again.body.expectations).toEqual([{ expectationId: id, result: 'unchanged' }]);
      }),
      { numRuns: 40 },
    );
  });

  // DESIGN 3.1 checks every field "with its format"; a duration whose end no clock can represent is not a duration
  // the watcher can keep. Raised, it gives a workflow that lapses at once (NaN deadlines) or whose every task fails.
  it.each([
    ['grace', { grace: 'P99999999999999999999Y' }],
    ['grace', { grace: 'PT9007199254740993S' }],
    ['grace', { grace: 'P300000000D' }],
  ])('refuses a %s whose end is past any representable instant (%o) with a 4xx', async (_field, override) => {
    const e = { ...dueExpectationOf(`huge-${unique()}`), ...override };

    const answer = await expectRefused(
      send(`${oddBridge.url}/a2a/events`, {
        token: oddBridge.tokens['agent-a'],
        json: envelope('artifactUpdate', { expectations: [e] }),
      }),
    );

    expect(answer.status).toBeLessThan(500);
  });

  it('answers 400, not 503, to a page token that is not one of its own', async () => {
    const answer = await expectRefused(
      send(`${oddBridge.url}/v1/expectations?pageToken=AAAA`, { token: oddBridge.tokens['agent-a'] }),
    );

    expect(answer.status).toBe(400);
  });

  it('leaves no workflow whose task fails, of all the odd ones it raised and their routers and routers', async () => {
    // A workflow task that fails is retried for ever: its pending task shows attempts past the first.
    const stuck: string[] = [];
    let seen = 0;
    for await (const execution of client.workflow.list({
      query: `${onQueues(oddQueue)} AND ExecutionStatus = 'Running'`,
    })) {
      seen++;
      const { raw } = await client.workflow.getHandle(execution.workflowId).describe();
      if ((raw.pendingWorkflowTask?.attempt ?? 0) > 1) stuck.push(execution.workflowId);
    }

    expect(seen).toBeGreaterThan(0);
    expect(stuck).toEqual([]);
  });
});

/**
 * Every bound of core/limits.ts a request can meet, property-based: the request at the bound is taken
 * (200), and the same one a character or an item over it is refused with the bound's status, the field's path, its
 * rule and its limit. Padding characters, digits and ids vary; the expectations the requests refer to (ids that must
 * exist for `after`, withdraw and the count of ids looked up) are raised once, on a worker of their own.
 */
describe('each bound, met exactly and exceeded by one', () => {
  const boundsQueue = `bad-input-bounds-${randomUUID()}`;
  useWatcherWorker(boundsQueue);
  let boundsBridge: BridgeApp;
  const agents: TestAgent[] = [];
  const LONG_KIND = 'k'.repeat(MAX_LENGTH.kind);
  const LONG_BASIS = 'b'.repeat(MAX_LENGTH.basis);
  const kindsOf = (n: number) => [
    { kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'The shipment is delivered' },
    ...Array.from({ length: n - 1 }, (_, i) => ({
      kind: `extra-${i}`,
      subjectType: 'shipment',
      basis: 'contract',
      describes: 'Something else happens',
    })),
  ];
  /** Pool of expectations to refer to: POOL_SUBJECTS subjects with MAX_ITEMS.after expectations each. */
  const POOL_SUBJECTS = 16;
  const poolSubject = (s: number) => ({ type: 'shipment', id: `POOL-${run}-${s}` });
  const poolId = (s: number, j: number) => `pool-${run}-${s}-${j}`;

  beforeAll(async () => {
    const wide = await startTestAgent({
      kinds: [
        ...kindsOf(1),
        { kind: LONG_KIND, subjectType: 'shipment', basis: 'contract', describes: 'A kind with the longest name' },
        { kind: 'long-basis', subjectType: 'shipment', basis: LONG_BASIS, describes: 'A kind with the longest basis' },
      ],
    });
    const most = await startTestAgent({ kinds: kindsOf(MAX_ITEMS.kinds) });
    const tooMany = await startTestAgent({ kinds: kindsOf(MAX_ITEMS.kinds + 1) });
    agents.push(wide, most, tooMany);
    boundsBridge = await startBridgeApp(client, boundsQueue, [
      { id: 'agent-a', roles: ['agent'], cardUrl: wide.cardUrl },
      { id: 'agent-100-kinds', roles: ['agent'], cardUrl: most.cardUrl },
      { id: 'agent-101-kinds', roles: ['agent'], cardUrl: tooMany.cardUrl },
      { id: 'feed', roles: ['reporter'] },
    ]);
    for (let s = 0; s < POOL_SUBJECTS; s++) {
      const expectations = Array.from({ length: MAX_ITEMS.after }, (_, j) => ({
        ...dueExpectationOf(poolId(s, j)),
        subject: poolSubject(s),
        satisfiedBy: { factKey: `${PREFIX}pool-${s}` },
      }));
      const raised = await send(`${boundsBridge.url}/a2a/events`, {
        token: boundsBridge.tokens['agent-a'],
        json: envelope('artifactUpdate', { expectations }),
      });
      if (raised.status !== 200)
        throw new Error(`arrange: the pool answered ${raised.status} ${JSON.stringify(raised.body).slice(0, 500)}`);
    }
  }, 600_000);

  afterAll(async () => {
    await boundsBridge?.close();
    await Promise.all(agents.map((a) => a.close()));
  });

  /** One character of UTF-16 length 1, for padding ids and texts. */
  const pad = fc.constantFrom('x', 'é', 'Ω', '~', '中', '-');
  const digits = (n: number) =>
    fc.array(fc.constantFrom(...'0123456789'), { minLength: n, maxLength: n }).map((d) => d.join(''));
  // A counter beside the generated number: fast-check starts each property from the same small values.
  let made = 0;
  const fresh = fc.nat({ max: 1_000_000_000 }).map((n) => `${run}-${made++}-${n}`);
  const padded = (head: string, length: number, char: string) => head + char.repeat(length - head.length);
  const artifactAt = (rest: string) =>
    joinPath(['artifactUpdate', 'artifact', 'metadata', EXTENSION_URI, ...rest.split('/')]);
  const events = (payload: unknown, ids = { taskId: `t-${run}`, contextId: `c-${run}` }) => ({
    path: 'a2a/events' as const,
    json: {
      artifactUpdate: {
        ...ids,
        artifact: { artifactId: 'a', parts: [{ text: 'plan' }], metadata: { [EXTENSION_URI]: payload } },
      },
    },
  });
  const raising = (...expectations: unknown[]) => events({ expectations });
  const newExpectation = (id: string, extra: object = {}) => ({
    ...dueExpectationOf(`bound-${id}`),
    subject: { type: 'shipment', id: `S-bound-${id}` },
    ...extra,
  });

  interface Case {
    name: string;
    limit: number;
    status: 413 | 422;
    rule: 'max-items' | 'max-length' | 'declaration-params';
    path: string;
    /** The request with the bounded field or list at `n` (ids, padding and digits vary from run to run). */
    request: fc.Arbitrary<(n: number) => { path: 'a2a/events' | 'v1/facts'; json: unknown; as?: string }>;
    /** How many requests at the bound (each raises or records what it carries) and past it. */
    runs: [exact: number, over: number];
  }

  /** A list of one request over its bound: the whole request is too large (413). */
  const tooMany = (bound: Omit<Case, 'status' | 'rule'>): Case => ({ ...bound, status: 413, rule: 'max-items' });
  /** A text over its length: the item that holds it breaks a rule (422). */
  const tooLong = (bound: Omit<Case, 'status' | 'rule'>): Case => ({ ...bound, status: 422, rule: 'max-length' });

  /** An expectation field padded to `n`: `make` builds the expectation from the padded text and a fresh id. */
  const expectationField = (
    name: string,
    field: string,
    limit: number,
    make: (text: string, id: string) => unknown,
  ): Case =>
    tooLong({
      name,
      limit,
      path: artifactAt(field),
      request: fc.tuple(pad, fresh).map(
        ([char, id]) =>
          (n: number) =>
            raising(make(padded(`${id}-`, n, char), id)),
      ),
      runs: [2, 4],
    });

  const cases: Case[] = [
    // Lists of one request (413).
    tooMany({
      name: 'facts per request',
      limit: MAX_ITEMS.facts,
      path: `facts/${MAX_ITEMS.facts}`,
      request: fresh.map((id) => (n: number) => ({
        path: 'v1/facts' as const,
        json: {
          facts: Array.from({ length: n }, (_, i) => ({
            factKey: `${PREFIX}many-${id}-${i}`,
            observedAt: '2026-01-01T00:00:00Z',
          })),
        },
        as: 'feed',
      })),
      runs: [1, 3],
    }),
    tooMany({
      name: 'expectations per request',
      limit: MAX_ITEMS.expectations,
      path: artifactAt(`expectations/${MAX_ITEMS.expectations}`),
      request: fresh.map(
        (id) => (n: number) => raising(...Array.from({ length: n }, (_, i) => newExpectation(`${id}-${i}`))),
      ),
      runs: [1, 3],
    }),
    tooMany({
      name: 'withdraw ids per request',
      limit: MAX_ITEMS.withdraw,
      path: artifactAt(`withdraw/${MAX_ITEMS.withdraw}`),
      request: fc.constant((n: number) =>
        events({
          withdraw: Array.from({ length: n }, (_, i) =>
            poolId(POOL_SUBJECTS - 1 - Math.floor(i / MAX_ITEMS.after), i % MAX_ITEMS.after),
          ),
        }),
      ),
      runs: [1, 3],
    }),
    tooMany({
      // 15 new expectations, each after the 32 of its pool subject: 15 × 33 = 495 ids; withdraw ids make up the rest.
      name: 'distinct expectation ids referred to',
      limit: MAX_ITEMS.references,
      path: artifactAt(`withdraw/${MAX_ITEMS.references - 495}`),
      request: fresh.map(
        (id) => (n: number) =>
          events({
            expectations: Array.from({ length: 15 }, (_, s) => ({
              ...newExpectation(`${id}-refs-${s}`),
              subject: poolSubject(s),
              after: Array.from({ length: MAX_ITEMS.after }, (_, j) => poolId(s, j)),
            })),
            withdraw: Array.from({ length: n - 495 }, (_, j) => poolId(POOL_SUBJECTS - 1, j)),
          }),
      ),
      runs: [1, 2],
    }),
    // Lists of one item (422).
    {
      name: 'after ids',
      limit: MAX_ITEMS.after,
      status: 422,
      rule: 'max-items',
      path: artifactAt('expectations/0/after'),
      request: fc.tuple(fresh, fc.nat({ max: POOL_SUBJECTS - 2 })).map(
        ([id, s]) =>
          (n: number) =>
            raising({
              ...newExpectation(`${id}-after`),
              subject: poolSubject(s),
              after: Array.from({ length: n }, (_, j) => poolId(s, j % MAX_ITEMS.after)),
            }),
      ),
      runs: [2, 4],
    },
    // Text fields (422).
    expectationField('expectationId', 'expectations/0/expectationId', MAX_LENGTH.id, (text, id) =>
      newExpectation(id, { expectationId: text }),
    ),
    expectationField('subject.id', 'expectations/0/subject/id', MAX_LENGTH.subjectId, (text, id) =>
      newExpectation(id, { subject: { type: 'shipment', id: text } }),
    ),
    // Another subject type than the kind's is a warning only (DESIGN 3.1): taken at the bound all the same.
    expectationField('subject.type', 'expectations/0/subject/type', MAX_LENGTH.subjectType, (text, id) =>
      newExpectation(id, { subject: { type: text, id: `S-${id}` } }),
    ),
    expectationField('expects', 'expectations/0/expects', MAX_LENGTH.expects, (text, id) =>
      newExpectation(id, { expects: text }),
    ),
    expectationField('satisfiedBy.factKey', 'expectations/0/satisfiedBy/factKey', MAX_LENGTH.factKey, (text, id) =>
      newExpectation(id, { satisfiedBy: { factKey: text } }),
    ),
  ];

  // Fields whose bound is not a padding of an id: built each by hand, `n` the field's length.
  const handmade: Case[] = [
    tooLong({
      name: 'kind',
      limit: MAX_LENGTH.kind,
      path: artifactAt('expectations/0/kind'),
      request: fresh.map((id) => (n: number) => raising(newExpectation(id, { kind: 'k'.repeat(n) }))),
      runs: [1, 3],
    }),
    tooLong({
      name: 'basis',
      limit: MAX_LENGTH.basis,
      path: artifactAt('expectations/0/basis'),
      request: fresh.map(
        (id) => (n: number) => raising(newExpectation(id, { kind: 'long-basis', basis: 'b'.repeat(n) })),
      ),
      runs: [1, 3],
    }),
    ...(['dueAt', 'horizon'] as const).map((field) =>
      tooLong({
        name: field,
        limit: MAX_LENGTH.instant,
        path: artifactAt(`expectations/0/${field}`),
        request: fc.tuple(fresh, digits(MAX_LENGTH.instant)).map(
          ([id, d]) =>
            (n: number) =>
              raising(newExpectation(id, { [field]: `2030-01-01T00:00:00.${d.slice(0, n - 21)}Z` })),
        ),
        runs: [2, 4],
      }),
    ),
    tooLong({
      name: 'grace',
      limit: MAX_LENGTH.duration,
      path: artifactAt('expectations/0/grace'),
      request: fc.tuple(fresh, fc.constantFrom('S', 'M', 'H'), fc.integer({ min: 1, max: 9 })).map(
        ([id, unit, d]) =>
          (n: number) =>
            raising(newExpectation(id, { grace: `PT${'0'.repeat(n - 4)}${d}${unit}` })),
      ),
      runs: [2, 4],
    }),
    tooLong({
      name: 'anchor.offset',
      limit: MAX_LENGTH.duration,
      path: artifactAt('expectations/1/anchor/offset'),
      request: fresh.map(
        (id) => (n: number) =>
          raising(
            newExpectation(`${id}-anchor`),
            newExpectation(id, { anchor: { expectationId: `bound-${id}-anchor`, offset: `P${'0'.repeat(n - 3)}1D` } }),
          ),
      ),
      runs: [2, 4],
    }),
    ...(
      [
        [
          'anchor.expectationId',
          'anchor/expectationId',
          (id: string) => ({ anchor: { expectationId: id, offset: 'PT1H' } }),
        ],
        ['after[]', 'after/0', (id: string) => ({ after: [id] })],
        ['supersedes', 'supersedes', (id: string) => ({ supersedes: id })],
      ] as const
    ).map(([name, field, refer]) =>
      tooLong({
        // The expectation referred to is raised earlier in the same request, with an id of length n.
        name,
        limit: MAX_LENGTH.id,
        path: artifactAt(`expectations/1/${field}`),
        request: fc.tuple(pad, fresh).map(([char, id]) => (n: number) => {
          const first = { ...newExpectation(`${id}-first`), expectationId: padded(`${id}-`, n, char) };
          return raising(first, { ...newExpectation(id), subject: first.subject, ...refer(first.expectationId) });
        }),
        runs: [2, 4],
      }),
    ),
    tooLong({
      name: 'withdraw id',
      limit: MAX_LENGTH.id,
      path: artifactAt('withdraw/0'),
      request: fc.tuple(pad, fresh).map(([char, id]) => (n: number) => {
        const first = { ...newExpectation(id), expectationId: padded(`${id}-`, n, char) };
        return events({ expectations: [first], withdraw: [first.expectationId] });
      }),
      runs: [2, 4],
    }),
    ...(['taskId', 'contextId'] as const).map((field) =>
      tooLong({
        name: `origin ${field}`,
        limit: MAX_LENGTH.originId,
        path: `artifactUpdate/${field}`,
        request: fc.tuple(pad, fresh).map(
          ([char, id]) =>
            (n: number) =>
              events(
                { facts: [{ factKey: `${PREFIX}origin-${id}`, observedAt: '2026-01-01T00:00:00Z' }] },
                { taskId: `t-${id}`, contextId: `c-${id}`, [field]: padded(`${id}-`, n, char) },
              ),
        ),
        runs: [2, 4],
      }),
    ),
    ...(
      [
        ['factKey', MAX_LENGTH.factKey, (text: string) => ({ factKey: text })],
        ['source', MAX_LENGTH.source, (text: string) => ({ source: text })],
        ['subject/type', MAX_LENGTH.subjectType, (text: string) => ({ subject: { type: text, id: 'S' } })],
        ['subject/id', MAX_LENGTH.subjectId, (text: string) => ({ subject: { type: 'shipment', id: text } })],
      ] as const
    ).map(([field, limit, set]) =>
      tooLong({
        name: `fact ${field}`,
        limit,
        path: `facts/0/${field}`,
        request: fc.tuple(pad, fresh).map(([char, id]) => (n: number) => ({
          path: 'v1/facts' as const,
          json: {
            facts: [
              { factKey: `${PREFIX}f-${id}`, observedAt: '2026-01-01T00:00:00Z', ...set(padded(`${id}-`, n, char)) },
            ],
          },
          as: 'feed',
        })),
        runs: [2, 4],
      }),
    ),
    tooLong({
      name: 'fact observedAt',
      limit: MAX_LENGTH.instant,
      path: 'facts/0/observedAt',
      request: fc.tuple(fresh, digits(MAX_LENGTH.instant)).map(([id, d]) => (n: number) => ({
        path: 'v1/facts' as const,
        json: { facts: [{ factKey: `${PREFIX}obs-${id}`, observedAt: `2020-01-01T00:00:00.${d.slice(0, n - 21)}Z` }] },
        as: 'feed',
      })),
      runs: [2, 4],
    }),
    {
      name: "kinds of the raising agent's card",
      limit: MAX_ITEMS.kinds,
      status: 422,
      rule: 'declaration-params',
      path: 'card/capabilities/extensions/0/params/kinds',
      request: fresh.map((id) => (n: number) => ({
        ...raising(newExpectation(id)),
        as: n > MAX_ITEMS.kinds ? 'agent-101-kinds' : 'agent-100-kinds',
      })),
      runs: [1, 2],
    },
  ];

  const post = (built: { path: string; json: unknown; as?: string }) =>
    send(`${boundsBridge.url}/${built.path}`, { token: boundsBridge.tokens[built.as ?? 'agent-a'], json: built.json });
  // At the bound a request is taken, though perhaps only on a resend: 100 facts not stored within the fact wait on a
  // busy server are a 503 with Retry-After (DESIGN 3.2), and a client sends them again.
  const postAsAClient = (built: { path: string; json: unknown; as?: string }) =>
    sendFollowingRetryAfter(`${boundsBridge.url}/${built.path}`, {
      token: boundsBridge.tokens[built.as ?? 'agent-a'],
      json: built.json,
    });

  describe.each([...cases, ...handmade])('$name ($limit)', ({ limit, status, rule, path, request, runs }) => {
    it('is taken at the bound', async () => {
      await fc.assert(
        fc.asyncProperty(request, async (build) => {
          tried++;
          const answer = await postAsAClient(build(limit));
          expect(answer.status, JSON.stringify(answer.body).slice(0, 500)).toBe(200);
        }),
        { numRuns: runs[0] },
      );
    }, 180_000);

    it(`is refused with ${status} one past it, naming the field and the limit`, async () => {
      await fc.assert(
        fc.asyncProperty(request, async (build) => {
          const answer = await expectRefused(post(build(limit + 1)));
          expect(answer.status).toBe(status);
          expect(answer.body.errors).toContainEqual(
            expect.objectContaining({ path, rule, ...(rule === 'declaration-params' ? {} : { limit }) }),
          );
        }),
        { numRuns: runs[1] },
      );
    });
  });
});

describe('after all of it', () => {
  it('started nothing, and polluted no prototype of the process that ran the bridge', async () => {
    // Nothing polls the bridge's task queue: a workflow started by any input would still be listed on it.
    const started = await countWorkflows(client, onQueues(taskQueue));
    // Ids with a lone surrogate cannot even be asked about (they are not UTF-8); the count above covers them.
    const askable = (id: string) => !LONE_SURROGATE.test(id);
    const sample = [...idsUsed]
      .filter(askable)
      .slice(0, 200)
      .map(expectationWorkflowId)
      .concat([...new Set([...factKeysUsed].filter(askable).map((key) => factRouterWorkflowId(key, taskQueue)))]);
    const found: string[] = [];
    for (const workflowId of sample) {
      try {
        await client.workflow.getHandle(workflowId).describe();
        found.push(workflowId);
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }

    expect(tried).toBeGreaterThan(1_000);
    expect(started).toBe(0);
    expect(found).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });
});
