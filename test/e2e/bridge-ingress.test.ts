/**
 * The bridge end to end: `createApp` on a real Temporal client and a real worker (shared dev server, own task queue).
 * Raising, reading, facts, re-delivery, conflicts and every rule of DESIGN 3.1, each answer checked to the byte.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { getExpectationRecord } from '../../src/temporal/expectations.js';
import { cardJson, cardKinds, declaration, expectation } from '../support/fixtures.js';
import {
  artifactUpdate,
  invalidRequest,
  openRecordOf,
  problemBody,
  request,
  startBridgeEnv,
  startCardServer,
  unique,
} from '../support/bridge.js';
import type { BridgeEnv, CardServer } from '../support/bridge.js';
import { routerRecorded } from '../support/routers.js';

const U = 'https:~1~1rsaxb.com~1a2a~1expectations~1v1';
const AT = `artifactUpdate/artifact/metadata/${U}`;

let cards: CardServer;
let env: BridgeEnv;

beforeAll(async () => {
  cards = await startCardServer();
  cards.set('good', cardJson());
  cards.set(
    'placeholder',
    cardJson({
      params: {
        keepsTime: false,
        lapseSkill: 'handle-lapse',
        kinds: [{ kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'TODO' }],
      },
    }),
  );
  cards.set('noext', cardJson({ declare: false }));
  cards.set('badskill', cardJson({ skills: ['something-else'] }));
  const good = cardJson();
  // Another extension's entries the watcher cannot read: a string, no uri, a uri that is not a string.
  const unreadable = ['a string', { description: 'no uri' }, { uri: 42, params: { x: 1 } }];
  cards.set('otherext', { ...good, capabilities: { extensions: [...unreadable, ...good.capabilities.extensions] } });
  const delivery = cardKinds[0]!;
  const declaring = (...kinds: object[]) => cardJson({ params: declaration(kinds) });
  cards.set('twice', declaring(delivery, { ...delivery, basis: 'observed' }));
  cards.set('unrelated-empty', declaring(delivery, { ...delivery, kind: 'pickup', describes: '' }));
  cards.set('kindskill', declaring({ ...delivery, skills: ['book-delivery'] }));
  env = await startBridgeEnv(
    [
      { id: 'agent-a', roles: ['agent'], cardUrl: cards.url('good'), authorization: 'Bearer watcher-to-a' },
      { id: 'agent-b', roles: ['agent'], cardUrl: cards.url('good') },
      { id: 'agent-nocard', roles: ['agent'], cardUrl: 'http://127.0.0.1:1/.well-known/agent-card.json' },
      { id: 'agent-placeholder', roles: ['agent'], cardUrl: cards.url('placeholder') },
      { id: 'agent-noext', roles: ['agent'], cardUrl: cards.url('noext') },
      { id: 'agent-badskill', roles: ['agent'], cardUrl: cards.url('badskill') },
      ...['otherext', 'twice', 'unrelated-empty', 'kindskill'].map((name) => ({
        id: `agent-${name}`,
        roles: ['agent' as const],
        cardUrl: cards.url(name),
      })),
      { id: 'feed', roles: ['reporter'] },
    ],
    { name: 'ingress', settings: { maxLineage: 1 } },
  );
});

afterAll(async () => {
  await env?.close();
  await cards?.close();
});

const events = (token: string, body: unknown, headers?: Record<string, string>) =>
  request(`${env.url}/a2a/events`, { token, body, headers });
const facts = (token: string, body: unknown, query = '') => request(`${env.url}/v1/facts${query}`, { token, body });
const record = (id: string) =>
  request(`${env.url}/v1/expectations/${encodeURIComponent(id)}`, { token: env.tokens['agent-a'] });
const A = () => env.tokens['agent-a']!;
/** The answer to events that raise `expectationId` and carry nothing else. */
const raisedOnly = (expectationId: string) => ({
  expectations: [{ expectationId, result: 'raised' }],
  facts: [],
  withdrawn: [],
});

describe('raise, read, satisfy', () => {
  it('raises an expectation from an artifact update and answers one result per item', async () => {
    const e = expectation(`raise-${unique()}`);

    const answer = await events(A(), artifactUpdate({ expectations: [e] }));

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(raisedOnly(e.expectationId));
  });

  it('reads the record back with agent, origin, lineage and the Temporal UI link', async () => {
    const e = expectation(`read-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [e] }, 'task-read', 'ctx-read'));

    const answer = await record(e.expectationId);

    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      ...openRecordOf(e, 'agent-a', { taskId: 'task-read', contextId: 'ctx-read' }),
      projectedDueAt: new Date(e.dueAt).toISOString(),
      dueAt: new Date(e.dueAt).toISOString(),
    });
  });

  it('fetches the card with the authorization of the principal', async () => {
    await events(A(), artifactUpdate({ expectations: [expectation(`auth-${unique()}`)] }));

    expect(cards.authorizations).toContain('Bearer watcher-to-a');
  });

  it('satisfies the expectation with a reported fact attributed to the reporter, keeping the claimed source', async () => {
    const e = expectation(`satisfy-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [e] }));
    const observedAt = new Date().toISOString();

    const answer = await facts(env.tokens.feed!, {
      facts: [{ factKey: e.satisfiedBy.factKey, observedAt, source: 'somebody-else' }],
    });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ facts: [{ factKey: e.satisfiedBy.factKey, result: 'accepted' }] });
    await vi.waitFor(
      async () => {
        const read = await record(e.expectationId);
        expect(read.body).toMatchObject({
          state: 'satisfied',
          satisfiedBy: { factKey: e.satisfiedBy.factKey, source: 'feed', claimedSource: 'somebody-else' },
        });
      },
      { timeout: 15_000, interval: 200 },
    );
  });

  it('raises from the status message of an input-required status update', async () => {
    const e = expectation(`input-${unique()}`);

    const answer = await events(A(), {
      statusUpdate: {
        taskId: 'task-input',
        contextId: 'ctx-input',
        status: {
          state: 'TASK_STATE_INPUT_REQUIRED',
          message: {
            messageId: `m-${unique()}`,
            role: 'ROLE_AGENT',
            parts: [{ text: 'waiting' }],
            metadata: { [EXTENSION_URI]: { expectations: [e] } },
          },
        },
      },
    });

    expect(answer.body).toEqual(raisedOnly(e.expectationId));
  });

  it('raises from a v0.3 task object', async () => {
    const e = expectation(`v03-${unique()}`);

    const answer = await events(A(), {
      kind: 'task',
      id: 'task-v03',
      contextId: 'ctx-v03',
      status: { state: 'completed' },
      artifacts: [
        { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }], metadata: { [EXTENSION_URI]: { expectations: [e] } } },
      ],
    });

    expect(answer.body).toEqual(raisedOnly(e.expectationId));
  });

  it('takes facts from a plain message', async () => {
    const key = `plain-${unique()}`;

    const answer = await events(A(), {
      message: {
        messageId: 'm',
        role: 'ROLE_AGENT',
        metadata: { [EXTENSION_URI]: { facts: [{ factKey: key, observedAt: '2026-01-01T00:00:00Z' }] } },
      },
    });

    expect(answer.body).toEqual({ expectations: [], facts: [{ factKey: key, result: 'accepted' }], withdrawn: [] });
  });

  it('answers an expectation in a task’s history as not raised, with its reason, and records the facts there', async () => {
    const e = expectation(`history-${unique()}`);
    const key = `history-fact-${unique()}`;

    const answer = await events(A(), {
      task: {
        id: `t-${unique()}`,
        contextId: 'c',
        status: { state: 'TASK_STATE_COMPLETED' },
        history: [
          {
            messageId: 'm',
            role: 'ROLE_AGENT',
            metadata: {
              [EXTENSION_URI]: {
                expectations: [e],
                facts: [{ factKey: key, observedAt: '2026-01-01T00:00:00Z' }],
                withdraw: ['x'],
              },
            },
          },
        ],
      },
    });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      expectations: [],
      facts: [{ factKey: key, result: 'accepted' }],
      withdrawn: [],
      warnings: [
        {
          path: `task/history/0/metadata/${U}/expectations`,
          rule: 'history-not-raised',
          message: expect.stringContaining('not raised'),
        },
        {
          path: `task/history/0/metadata/${U}/withdraw`,
          rule: 'history-not-withdrawn',
          message: expect.stringContaining('not withdrawn'),
        },
      ],
    });
    expect((await record(e.expectationId)).status).toBe(404);
  });

  it('answers a member of metadata[URI] the extension does not define as ignored', async () => {
    const key = `unknown-member-${unique()}`;

    const answer = await events(A(), {
      message: {
        messageId: 'm',
        role: 'ROLE_AGENT',
        metadata: {
          [EXTENSION_URI]: { facts: [{ factKey: key, observedAt: '2026-01-01T00:00:00Z' }], expectation: {} },
        },
      },
    });

    expect(answer.body).toEqual({
      expectations: [],
      facts: [{ factKey: key, result: 'accepted' }],
      withdrawn: [],
      warnings: [
        {
          path: `message/metadata/${U}/expectation`,
          rule: 'unknown-member',
          message: expect.stringContaining('ignored'),
        },
      ],
    });
  });

  it('answers 200 with nothing for an object that does not carry the extension', async () => {
    const answer = await events(A(), { task: { id: 't', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } });

    expect([answer.status, answer.body]).toEqual([200, { expectations: [], facts: [], withdrawn: [] }]);
  });

  it('warns, but raises, when subject.type differs from the kind subjectType', async () => {
    const e = expectation(`warn-${unique()}`, { subject: { type: 'parcel', id: 'P-1' } });

    const answer = await events(A(), artifactUpdate({ expectations: [e] }));

    expect(answer.body).toEqual({
      ...raisedOnly(e.expectationId),
      warnings: [
        {
          path: `${AT}/expectations/0/subject/type`,
          message: "subject.type 'parcel' differs from the subjectType 'shipment' declared for kind 'delivery'",
        },
      ],
    });
  });
});

describe('re-delivery and conflicts', () => {
  it('answers unchanged and accepted when the same event is delivered again, whatever the key order', async () => {
    const e = expectation(`again-${unique()}`);
    const fact = { factKey: `again-${unique()}`, observedAt: '2026-02-01T00:00:00Z' };
    await events(A(), artifactUpdate({ expectations: [e], facts: [fact] }));
    const reordered = Object.fromEntries(Object.entries(e).reverse());

    const answer = await events(A(), artifactUpdate({ expectations: [reordered], facts: [fact] }));

    expect(answer.body).toEqual({
      expectations: [{ expectationId: e.expectationId, result: 'unchanged' }],
      facts: [{ factKey: fact.factKey, result: 'accepted' }],
      withdrawn: [],
    });
  });

  it('answers a batch of facts in its order with wait=true, a repeat duplicate and a later one recorded; sent again without it, accepted', async () => {
    // Twelve keys go together; the three facts of one key, and the two of one subject, one after the other.
    const keys = Array.from({ length: 12 }, () => `batch-${unique()}`);
    const subject = { type: 'shipment', id: `SHP-${unique()}` };
    const batch = [
      ...keys.map((factKey) => ({ factKey, observedAt: '2026-02-01T00:00:00Z' })),
      { factKey: keys[3]!, observedAt: '2026-02-01T00:00:00Z' },
      { factKey: keys[3]!, observedAt: '2026-02-02T00:00:00Z' },
      { factKey: keys[5]!, observedAt: '2026-02-01T00:00:00Z', subject },
      { factKey: keys[7]!, observedAt: '2026-02-01T00:00:00Z', subject },
    ];

    const answer = await facts(env.tokens.feed!, { facts: batch }, '?wait=true');
    const again = await facts(env.tokens.feed!, { facts: batch });

    expect(answer.status).toBe(200);
    expect(
      answer.body.facts.map(({ factKey, result }: { factKey: string; result: string }) => ({ factKey, result })),
    ).toEqual([
      ...keys.map((factKey) => ({ factKey, result: 'recorded' })),
      { factKey: keys[3], result: 'duplicate' },
      { factKey: keys[3], result: 'recorded' },
      // A subject is not part of a fact's identity for re-delivery: key, observedAt and source are.
      { factKey: keys[5], result: 'duplicate' },
      { factKey: keys[7], result: 'duplicate' },
    ]);
    // Stored again, answered by the server: the routers see the re-deliveries and send them to nobody.
    expect(again.body.facts).toEqual(batch.map(({ factKey }) => ({ factKey, result: 'accepted' })));
  });

  it('refuses the same id with other content (409) and starts nothing new', async () => {
    const e = expectation(`conflict-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [e] }));

    const answer = await events(A(), artifactUpdate({ expectations: [{ ...e, expects: 'something else' }] }));

    const message = `expectation '${e.expectationId}' was raised before with other content; it is immutable and its id is never reused`;
    expect(answer.status).toBe(409);
    expect(answer.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(answer.body).toEqual(
      problemBody('conflict', message, [{ path: `${AT}/expectations/0/expectationId`, message }]),
    );
    expect((await record(e.expectationId)).body.expectation.expects).toBe(e.expects);
  });

  it('refuses an id another agent raised (409), even with identical content', async () => {
    const e = expectation(`other-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [e] }));

    const answer = await events(env.tokens['agent-b']!, artifactUpdate({ expectations: [e] }));

    const message = `expectation id '${e.expectationId}' was raised by another agent; ids are never reused`;
    expect(answer.body).toEqual(
      problemBody('conflict', message, [{ path: `${AT}/expectations/0/expectationId`, message }]),
    );
  });

  it('validates every item before applying any: one bad item starts none of the others', async () => {
    const good = expectation(`first-${unique()}`);
    const bad = expectation(`second-${unique()}`, { kind: 'teleport' });

    const answer = await events(A(), artifactUpdate({ expectations: [good, bad] }));

    expect(answer.status).toBe(422);
    expect(await getExpectationRecord(env.client, good.expectationId)).toBeUndefined();
  });
});

describe('rules against the card (422)', () => {
  const rule = (detail: string, errors: { path: string; rule: string; message: string }[]) =>
    problemBody('rule-violation', detail, errors);

  it('refuses a kind the card does not declare', async () => {
    const answer = await events(
      A(),
      artifactUpdate({ expectations: [expectation(`k-${unique()}`, { kind: 'teleport' })] }),
    );

    const message = "kind 'teleport' is not declared on the agent's card (declared: delivery, pickup)";
    expect([answer.status, answer.body]).toEqual([
      422,
      rule(message, [{ path: `${AT}/expectations/0/kind`, rule: 'kind-declared', message }]),
    ]);
  });

  it('refuses a basis other than the declared one', async () => {
    const answer = await events(
      A(),
      artifactUpdate({ expectations: [expectation(`b-${unique()}`, { basis: 'observed' })] }),
    );

    const message = "basis 'observed' differs from the basis 'contract' declared for kind 'delivery'";
    expect(answer.body).toEqual(rule(message, [{ path: `${AT}/expectations/0/basis`, rule: 'basis', message }]));
  });

  /** A raise as an agent whose card breaks a rule: what is refused, the agent, its id prefix and the error. */
  type CardCase = [refused: string, principal: string, idPrefix: string, path: string, rule: string, message: string];

  it.each<CardCase>([
    [
      'a kind whose describes on the card is a placeholder',
      'agent-placeholder',
      'p',
      'card/capabilities/extensions/0/params/kinds/0/describes',
      'describes-placeholder',
      "the card's kind 'delivery' has a placeholder describes ('TODO'); say what is expected",
    ],
    [
      'when the card does not declare the extension',
      'agent-noext',
      'n',
      'card/capabilities/extensions',
      'extension-declared',
      `the agent's card does not declare the extension ${EXTENSION_URI} in capabilities.extensions`,
    ],
    [
      'when lapseSkill names no skill on the card',
      'agent-badskill',
      's',
      'card/capabilities/extensions/0/params/lapseSkill',
      'lapse-skill',
      "lapseSkill 'handle-lapse' names no skill on the card (skills: something-else)",
    ],
    [
      "when a kind's skills name a skill the card does not have",
      'agent-kindskill',
      'ks',
      'card/capabilities/extensions/0/params/kinds/0/skills/0',
      'kind-skills',
      "the card's kind 'delivery' names skill 'book-delivery', which is not a skill on the card (skills: handle-lapse)",
    ],
  ])('refuses %s', async (_refused, principal, idPrefix, path, violated, message) => {
    const answer = await events(
      env.tokens[principal]!,
      artifactUpdate({ expectations: [expectation(`${idPrefix}-${unique()}`)] }),
    );

    expect(answer.body).toEqual(rule(message, [{ path, rule: violated, message }]));
  });

  it("raises for a card whose other extensions' entries the watcher cannot read (no 502): only ours is read", async () => {
    const e = expectation(`o-${unique()}`);

    const answer = await events(env.tokens['agent-otherext']!, artifactUpdate({ expectations: [e] }));

    expect([answer.status, answer.body]).toEqual([200, raisedOnly(e.expectationId)]);
  });

  it('refuses every raise while the card declares a kind twice, naming the second', async () => {
    const answer = await events(
      env.tokens['agent-twice']!,
      artifactUpdate({ expectations: [expectation(`t-${unique()}`)] }),
    );

    const message = "kind 'delivery' is declared twice (kinds/0 and kinds/1); a kind is unique within one declaration";
    expect([answer.status, answer.body]).toEqual([
      422,
      rule(message, [{ path: 'card/capabilities/extensions/0/params/kinds/1/kind', rule: 'kind-unique', message }]),
    ]);
  });

  it('refuses a raise of one kind while another kind of the card has an empty describes, as for a placeholder', async () => {
    const e = expectation(`u-${unique()}`);

    const answer = await events(env.tokens['agent-unrelated-empty']!, artifactUpdate({ expectations: [e] }));

    const message = "the card's kind 'pickup' has an empty describes; say what is expected";
    expect(answer.body).toEqual(
      rule(message, [
        { path: 'card/capabilities/extensions/0/params/kinds/1/describes', rule: 'describes-placeholder', message },
      ]),
    );
    expect(await getExpectationRecord(env.client, e.expectationId)).toBeUndefined();
  });

  it('refuses after naming an expectation never raised', async () => {
    const answer = await events(
      A(),
      artifactUpdate({ expectations: [expectation(`a-${unique()}`, { after: ['ghost'] })] }),
    );

    const message = "after names 'ghost', which was not raised before";
    expect(answer.body).toEqual(
      rule(message, [{ path: `${AT}/expectations/0/after/0`, rule: 'after-exists', message }]),
    );
  });

  it('accepts after naming an expectation earlier in the same request', async () => {
    const first = expectation(`pick-${unique()}`, { kind: 'pickup', basis: 'observed' });
    const second = expectation(`drop-${unique()}`, { subject: first.subject, after: [first.expectationId] });

    const answer = await events(A(), artifactUpdate({ expectations: [first, second] }));

    expect(answer.body.expectations).toEqual([
      { expectationId: first.expectationId, result: 'raised' },
      { expectationId: second.expectationId, result: 'raised' },
    ]);
  });

  it('refuses after naming an expectation on another subject', async () => {
    const first = expectation(`x-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [first] }));
    const second = expectation(`y-${unique()}`, { after: [first.expectationId] });

    const answer = await events(A(), artifactUpdate({ expectations: [second] }));

    const message = `after names '${first.expectationId}', which is on subject shipment/${first.subject.id}, not shipment/${second.subject.id}`;
    expect(answer.body).toEqual(
      rule(message, [{ path: `${AT}/expectations/0/after/0`, rule: 'after-subject', message }]),
    );
  });

  it('refuses an anchor never raised', async () => {
    const e = expectation(`an-${unique()}`, { anchor: { expectationId: 'ghost', offset: 'P1D' } });

    const answer = await events(A(), artifactUpdate({ expectations: [e] }));

    const message = "anchor names 'ghost', which was not raised before";
    expect(answer.body).toEqual(
      rule(message, [{ path: `${AT}/expectations/0/anchor/expectationId`, rule: 'anchor-exists', message }]),
    );
  });

  it('refuses to supersede an expectation that is no longer open', async () => {
    const old = expectation(`old-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [old] }));
    await request(`${env.url}/v1/expectations/${old.expectationId}/withdraw`, {
      token: A(),
      body: { reason: 'plan changed' },
    });

    const answer = await events(
      A(),
      artifactUpdate({ expectations: [expectation(`new-${unique()}`, { supersedes: old.expectationId })] }),
    );

    const message = `supersedes '${old.expectationId}', which is withdrawn; only an open (or lapsed) expectation can be superseded`;
    expect(answer.body).toEqual(
      rule(message, [{ path: `${AT}/expectations/0/supersedes`, rule: 'supersedes-open', message }]),
    );
  });

  it('supersedes an open expectation with lineage + 1, and refuses a lineage over the bound', async () => {
    const first = expectation(`l0-${unique()}`);
    const second = expectation(`l1-${unique()}`, { supersedes: first.expectationId });
    const third = expectation(`l2-${unique()}`, { supersedes: second.expectationId });
    await events(A(), artifactUpdate({ expectations: [first] }));
    await events(A(), artifactUpdate({ expectations: [second] }));

    const answer = await events(A(), artifactUpdate({ expectations: [third] }));

    expect((await record(second.expectationId)).body.lineage).toBe(1);
    const message = 'lineage would be 2, above the bound of 1 superseded ancestors';
    expect(answer.body).toEqual(rule(message, [{ path: `${AT}/expectations/0/supersedes`, rule: 'lineage', message }]));
  });

  it('refuses expectations in a plain message, naming the rule', async () => {
    const answer = await events(A(), {
      message: { messageId: 'm', metadata: { [EXTENSION_URI]: { expectations: [expectation('m')] } } },
    });

    const message =
      'expectations are raised only in artifacts or in the status message of an input-required task; a plain message may carry facts only';
    expect(answer.body).toEqual(
      rule(message, [{ path: `message/metadata/${U}/expectations`, rule: 'expectations-placement', message }]),
    );
  });

  it('refuses to withdraw an expectation never raised', async () => {
    const answer = await events(A(), artifactUpdate({ withdraw: ['ghost-withdraw'] }));

    const message = "expectation 'ghost-withdraw' was never raised";
    expect(answer.body).toEqual(rule(message, [{ path: `${AT}/withdraw/0`, rule: 'withdraw-exists', message }]));
  });
});

describe('facts observed in the future (422)', () => {
  const FAR = '9999-12-31T23:59:59Z';
  const message = `observedAt ${FAR} is more than PT5M ahead of the watcher's clock; a fact is reported once observed`;
  const refusal = (path: string) =>
    problemBody('rule-violation', message, [{ path, rule: 'observed-at-future', message }]);
  const recorded = (factKey: string) => routerRecorded(env.client, env.taskQueue, factKey);

  it('refuses a fact of POST /v1/facts observed beyond the allowed clock skew, and records nothing', async () => {
    const key = `future-${unique()}`;

    const answer = await facts(env.tokens.feed!, { facts: [{ factKey: key, observedAt: FAR }] });

    expect([answer.status, answer.body]).toEqual([422, refusal('facts/0/observedAt')]);
    expect(await recorded(key)).toBe(false);
  });

  it('refuses such a fact in an artifact, and starts nothing of the same request', async () => {
    const e = expectation(`future-${unique()}`);
    const fact = { factKey: e.satisfiedBy.factKey, observedAt: FAR };

    const answer = await events(A(), artifactUpdate({ expectations: [e], facts: [fact] }));

    expect([answer.status, answer.body]).toEqual([422, refusal(`${AT}/facts/0/observedAt`)]);
    expect(await getExpectationRecord(env.client, e.expectationId)).toBeUndefined();
    expect(await recorded(fact.factKey)).toBe(false);
  });

  it('accepts a fact observed a little ahead, within the skew', async () => {
    const key = `skew-${unique()}`;
    const observedAt = new Date(Date.now() + 60_000).toISOString();

    const answer = await facts(env.tokens.feed!, { facts: [{ factKey: key, observedAt }] });

    expect([answer.status, answer.body]).toEqual([200, { facts: [{ factKey: key, result: 'accepted' }] }]);
  });
});

describe('withdraw lists', () => {
  it('withdraws from an artifact, then reports not-open on re-delivery', async () => {
    const e = expectation(`wd-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [e] }));
    const body = artifactUpdate({ withdraw: [e.expectationId] });

    const first = await events(A(), body);
    const again = await events(A(), body);

    expect(first.body.withdrawn).toEqual([{ expectationId: e.expectationId, result: 'withdrawn' }]);
    expect(again.body.withdrawn).toEqual([{ expectationId: e.expectationId, result: 'not-open' }]);
    expect((await record(e.expectationId)).body.state).toBe('withdrawn');
  });

  it("refuses (403) to withdraw another agent's expectation through an artifact", async () => {
    const e = expectation(`wdo-${unique()}`);
    await events(A(), artifactUpdate({ expectations: [e] }));

    const answer = await events(env.tokens['agent-b']!, artifactUpdate({ withdraw: [e.expectationId] }));

    const message = `expectation '${e.expectationId}' was raised by another agent`;
    expect(answer.body).toEqual(problemBody('forbidden', message, [{ path: `${AT}/withdraw/0`, message }]));
  });
});

describe('card unreachable (502)', () => {
  it('answers 502 and starts nothing', async () => {
    const e = expectation(`card-${unique()}`);

    const answer = await events(env.tokens['agent-nocard']!, artifactUpdate({ expectations: [e] }));

    expect(answer.status).toBe(502);
    const detail = expect.stringMatching(
      /^the agent card at http:\/\/127\.0\.0\.1:1\/\.well-known\/agent-card\.json could not be fetched: fetch failed/,
    );
    expect(answer.body).toEqual(problemBody('agent-card-unreachable', detail));
    expect(await getExpectationRecord(env.client, e.expectationId)).toBeUndefined();
  });
});

describe('schema (400)', () => {
  it('names each bad field of an expectation by its path in the body', async () => {
    const e = { ...expectation(`bad-${unique()}`), dueAt: 'tomorrow', satisfiedBy: {} };

    const answer = await events(A(), artifactUpdate({ expectations: [e] }));

    expect(answer.body).toEqual(
      invalidRequest(
        [`${AT}/expectations/0/satisfiedBy/factKey`, 'Invalid input: expected string, received undefined'],
        [`${AT}/expectations/0/dueAt`, 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z'],
      ),
    );
  });

  it('names a bad fact of POST /v1/facts', async () => {
    const answer = await facts(env.tokens.feed!, { facts: [{ factKey: 'k', observedAt: '2026-01-01' }] });

    expect(answer.body).toEqual(
      invalidRequest(['facts/0/observedAt', 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z']),
    );
  });

  it('refuses an A2A object of unknown shape', async () => {
    const answer = await events(A(), { hello: 'world' });

    const message =
      'must be a v1.0 StreamResponse ({task}, {message}, {statusUpdate} or {artifactUpdate}) or a v0.3 object with kind';
    expect(answer.body).toEqual(invalidRequest(['', message]));
  });

  it('refuses a body that is not JSON', async () => {
    const answer = await request(`${env.url}/v1/facts`, {
      token: env.tokens.feed,
      rawBody: '{"facts": [',
      headers: { 'content-type': 'application/json' },
    });

    expect(answer.body).toEqual(problemBody('malformed-body', expect.stringMatching(/^the body is not valid JSON: /)));
  });
});

describe('limits and headers', () => {
  it('refuses a body over 1 MiB (413)', async () => {
    const big = { facts: [{ factKey: 'x'.repeat(1024 * 1024), observedAt: '2026-01-01T00:00:00Z' }] };

    const answer = await facts(env.tokens.feed!, big);

    expect(answer.body).toEqual(problemBody('payload-too-large', 'the body is over the limit of 1 MiB'));
  });

  it('refuses a body that is not JSON by type (415)', async () => {
    const answer = await request(`${env.url}/v1/facts`, {
      token: env.tokens.feed,
      rawBody: 'factKey=x',
      headers: { 'content-type': 'text/plain' },
    });

    expect(answer.body).toEqual(
      problemBody(
        'unsupported-media-type',
        "Content-Type must be application/json (or application/a2a+json), not 'text/plain'",
      ),
    );
  });

  it('accepts application/a2a+json, the type push notifications use', async () => {
    const answer = await request(`${env.url}/a2a/events`, {
      token: A(),
      rawBody: JSON.stringify(artifactUpdate({})),
      headers: { 'content-type': 'application/a2a+json' },
    });

    expect(answer.status).toBe(200);
  });

  it('echoes A2A-Extensions when the request activated the extension', async () => {
    const answer = await events(A(), artifactUpdate({}), {
      'A2A-Extensions': `https://example.com/x, ${EXTENSION_URI}`,
    });

    expect(answer.headers.get('a2a-extensions')).toBe(EXTENSION_URI);
  });

  it('does not echo A2A-Extensions when the request did not activate it', async () => {
    const answer = await events(A(), artifactUpdate({}));

    expect(answer.headers.get('a2a-extensions')).toBeNull();
  });

  it("reads an artifact's extensions listing the URI as activation where no header says so, and raises", async () => {
    const e = expectation(`act-${unique()}`);
    const { artifactUpdate: update } = artifactUpdate({ expectations: [e] });
    const body = { artifactUpdate: { ...update, artifact: { ...update.artifact, extensions: [EXTENSION_URI] } } };

    const answer = await events(A(), body);

    expect([answer.status, answer.headers.get('a2a-extensions'), answer.body]).toEqual([
      200,
      EXTENSION_URI,
      raisedOnly(e.expectationId),
    ]);
  });

  it("reads a v0.3 message's extensions as activation, and echoes on a refusal too", async () => {
    const body = {
      kind: 'message',
      messageId: `m-${unique()}`,
      role: 'agent',
      parts: [],
      extensions: [EXTENSION_URI],
      metadata: { [EXTENSION_URI]: { expectations: [expectation(`act03-${unique()}`)] } },
    };

    const answer = await events(A(), body);

    expect([answer.status, answer.headers.get('a2a-extensions'), answer.body.errors[0].rule]).toEqual([
      422,
      EXTENSION_URI,
      'expectations-placement',
    ]);
  });

  it('raises from an object that activates the extension neither way, without the echo', async () => {
    const e = expectation(`noact-${unique()}`);

    const answer = await events(A(), artifactUpdate({ expectations: [e] }));

    expect([answer.status, answer.headers.get('a2a-extensions'), answer.body.expectations]).toEqual([
      200,
      null,
      [{ expectationId: e.expectationId, result: 'raised' }],
    ]);
  });

  it('answers 401 without a token and with an unknown one', async () => {
    const none = await request(`${env.url}/v1/facts`, { body: { facts: [] } });
    const wrong = await request(`${env.url}/v1/facts`, { token: 'not-a-token', body: { facts: [] } });

    expect([none.status, none.headers.get('www-authenticate'), none.body]).toEqual([
      401,
      'Bearer',
      problemBody('unauthenticated', 'the request carries no Authorization header (Bearer token)'),
    ]);
    expect(wrong.body).toEqual(problemBody('unauthenticated', 'the bearer token names no principal'));
  });

  it('answers 404 for an unknown expectation and an unknown route', async () => {
    const unknown = await record('never-raised');
    const route = await request(`${env.url}/v1/nothing`, { token: A() });

    expect(unknown.body).toEqual(problemBody('not-found', "no expectation 'never-raised'"));
    expect(route.body).toEqual(problemBody('not-found', 'no route GET /v1/nothing'));
  });
});

describe('health and metrics', () => {
  it('answers /healthz and /readyz without a token (ready: its worker polls the task queue)', async () => {
    const health = await request(`${env.url}/healthz`);
    const ready = await request(`${env.url}/readyz`);

    expect([health.status, health.body, ready.status, ready.body]).toEqual([
      200,
      { status: 'ok' },
      200,
      { status: 'ready', temporal: 'reachable', worker: 'polling' },
    ]);
  });

  it('exposes raised expectations by kind and request durations by route and status', async () => {
    await events(
      A(),
      artifactUpdate({ expectations: [expectation(`m-${unique()}`, { kind: 'pickup', basis: 'observed' })] }),
    );

    const answer = await request(`${env.url}/metrics`);

    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(answer.body).toMatch(/^watcher_expectations_raised_total\{kind="pickup"\} [1-9]/m);
    expect(answer.body).toMatch(
      /^watcher_http_request_duration_seconds_count\{method="POST",route="\/a2a\/events",status="200"\} [1-9]/m,
    );
    expect(answer.body).toMatch(/^watcher_facts_recorded_total [0-9]/m);
  });
});
