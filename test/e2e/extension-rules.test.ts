/**
 * The extension's rules, end to end: a client posts to the bridge as an agent's push
 * would, the real worker decides on the shared dev server, and a real @a2a-js/sdk agent receives the lapse tasks.
 * The origin of a raise on the watcher's own A2A endpoint is in watcher-agent.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { EXTENSION_URI } from '../../core/schemas/extension.js';
import { lapseOf, lapsesFor } from '../support/agent.js';
import { dueExpectation, expectation } from '../support/fixtures.js';
import { artifactUpdate, request, unique, useAgentBridge } from '../support/bridge.js';

const { env, agents } = useAgentBridge(
  'extension-rules',
  {
    'shipping-agent': {},
    'vague-agent': { kinds: [{ kind: 'delivery', subjectType: 'shipment', basis: 'contract', describes: 'n/a' }] },
  },
  () => [{ id: 'carrier-feed', roles: ['reporter'] }],
);
/** The agent behind shipping-agent, which receives the lapse tasks. */
const agent = () => agents['shipping-agent']!;

const events = (principal: string, body: unknown) =>
  request(`${env.url}/a2a/events`, { token: env.tokens[principal], body });
const facts = (body: unknown) => request(`${env.url}/v1/facts`, { token: env.tokens['carrier-feed'], body });
const record = async (id: string) =>
  (await request(`${env.url}/v1/expectations/${encodeURIComponent(id)}`, { token: env.tokens['shipping-agent'] })).body;
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const U = EXTENSION_URI.replaceAll('/', '~1');

describe('satisfiedAfter', () => {
  it('lists every later expectation that one fact satisfied while the earlier one was open', async () => {
    const subject = { type: 'shipment', id: `S-${unique()}` };
    const factKey = `shipment/${subject.id}/delivered`;
    const first = expectation(`rules-first-${unique()}`, { subject });
    const later = [1, 2, 3].map((n) =>
      expectation(`rules-later-${n}-${unique()}`, { subject, after: [first.expectationId], satisfiedBy: { factKey } }),
    );
    expect((await events('shipping-agent', artifactUpdate({ expectations: [first, ...later] }))).status).toBe(200);

    expect((await facts({ facts: [{ factKey, observedAt: now() }] })).status).toBe(200);

    await expect.poll(() => lapsesFor(agent(), first.expectationId).length, { timeout: 30_000 }).toBe(1);
    const lapse = lapseOf(lapsesFor(agent(), first.expectationId)[0]!) as { lapse: string; satisfiedAfter?: string[] };
    expect(lapse.lapse).toBe('skipped');
    expect([...(lapse.satisfiedAfter ?? [])].sort()).toEqual(later.map((e) => e.expectationId).sort());
  });
});

describe('a fact that satisfies an expectation', () => {
  it('is a fact on its subject for a sibling even when it names no subject: the sibling’s horizon does not stall', async () => {
    const subject = { type: 'shipment', id: `S-${unique()}` };
    const satisfied = expectation(`rules-satisfied-${unique()}`, { subject });
    // Due just after its horizon, so that its overdue lapse comes once the horizon has been decided. The satisfied
    // expectation stores its fact on the subject as it closes, which its worker must have done by the horizon.
    const horizon = new Date(Date.now() + 10_000);
    horizon.setUTCMilliseconds(0);
    const sibling = dueExpectation(`rules-sibling-${unique()}`, new Date(horizon.getTime() + 2_000), {
      subject,
      horizon: horizon.toISOString().replace('.000Z', 'Z'),
    });
    expect((await events('shipping-agent', artifactUpdate({ expectations: [satisfied, sibling] }))).status).toBe(200);
    const observedAt = now();

    expect((await facts({ facts: [{ factKey: satisfied.satisfiedBy.factKey, observedAt }] })).status).toBe(200);

    await expect.poll(() => lapsesFor(agent(), sibling.expectationId).length, { timeout: 30_000 }).toBe(1);
    const lapse = lapseOf(lapsesFor(agent(), sibling.expectationId)[0]!) as { lapse: string; lastFactAt?: string };
    expect(lapse).toMatchObject({ lapse: 'overdue', lastFactAt: new Date(observedAt).toISOString() });
    expect(
      (await record(sibling.expectationId)).lapses.map((entry: { lapse: { lapse: string } }) => entry.lapse.lapse),
    ).toEqual(['overdue']);
    expect(await record(satisfied.expectationId)).toMatchObject({
      state: 'satisfied',
      lastFactAt: new Date(observedAt).toISOString(),
    });
  });
});

describe('what the watcher reads but does not raise', () => {
  it('answers an expectation in a task’s history with its reason instead of dropping it', async () => {
    const e = expectation(`rules-history-${unique()}`);
    const task = { id: `task-${unique()}`, contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } };

    const answer = await events('shipping-agent', {
      task: {
        ...task,
        history: [{ messageId: 'm', role: 'ROLE_AGENT', metadata: { [EXTENSION_URI]: { expectations: [e] } } }],
      },
    });

    expect(answer.status).toBe(200);
    expect(answer.body.expectations).toEqual([]);
    expect(answer.body.warnings).toEqual([
      {
        path: `task/history/0/metadata/${U}/expectations`,
        rule: 'history-not-raised',
        message: expect.stringContaining('not raised'),
      },
    ]);
    expect(
      (await request(`${env.url}/v1/expectations/${e.expectationId}`, { token: env.tokens['shipping-agent'] })).status,
    ).toBe(404);
  });
});

describe('placeholders', () => {
  it('refuses a raise whose kind describes itself as n/a, naming the rule', async () => {
    const e = expectation(`rules-vague-${unique()}`);

    const answer = await events('vague-agent', artifactUpdate({ expectations: [e] }));

    expect(answer.status).toBe(422);
    expect(answer.body.errors).toEqual([expect.objectContaining({ rule: 'describes-placeholder' })]);
    expect(
      (await request(`${env.url}/v1/expectations/${e.expectationId}`, { token: env.tokens['vague-agent'] })).status,
    ).toBe(404);
  });
});
