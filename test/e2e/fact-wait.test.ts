/**
 * `POST /v1/facts?wait=true` through a real bridge and worker on the dev server: the answer comes once the
 * expectations waiting on the fact have taken it, lists those the principal may read with the state the fact left
 * them in, and counts every one; right after it, the records read so. Raised and reported as a client would, with
 * nothing waited for in between.
 */
import { describe, expect, it } from 'vitest';
import { expectation } from '../support/fixtures.js';
import { artifactUpdate, problem, request, unique, useBridgeEnv } from '../support/bridge.js';

const env = useBridgeEnv(
  ['agent-a', 'agent-b'],
  [
    { id: 'feed', roles: ['reporter'] },
    { id: 'reading-feed', roles: ['reporter', 'reader'] },
  ],
  'fact-wait',
);

const token = (principal: string) => env.tokens[principal]!;

/** Raises, as `by`, one expectation waiting on `factKey`; returns its id. */
async function raiseOn(factKey: string, by: string): Promise<string> {
  const e = expectation(`wait-${unique()}`, { satisfiedBy: { factKey } });
  const answer = await request(`${env.url}/a2a/events`, {
    token: token(by),
    body: artifactUpdate({ expectations: [e] }),
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return e.expectationId;
}

const report = (by: string, factKey: string, query = '?wait=true', observedAt = new Date().toISOString()) =>
  request(`${env.url}/v1/facts${query}`, { token: token(by), body: { facts: [{ factKey, observedAt }] } });

const state = async (id: string) =>
  (await request(`${env.url}/v1/expectations/${encodeURIComponent(id)}`, { token: token('reading-feed') })).body.state;

describe('POST /v1/facts?wait=true', () => {
  it('answers once every expectation waiting on the fact has taken it, and their records read satisfied at once', async () => {
    const factKey = `shipment:${unique()}:delivered`;
    const first = await raiseOn(factKey, 'agent-a');
    const second = await raiseOn(factKey, 'agent-b');

    const answer = await report('reading-feed', factKey);
    const states = await Promise.all([state(first), state(second)]);

    expect(answer.status).toBe(200);
    expect(answer.body.facts).toHaveLength(1);
    expect(answer.body.facts[0]).toMatchObject({ factKey, result: 'recorded', awaitedBy: 2 });
    const taken = [...answer.body.facts[0].expectations].sort((a, b) => a.expectationId.localeCompare(b.expectationId));
    const expected = [first, second].sort().map((expectationId) => ({
      expectationId,
      state: 'satisfied',
      satisfiedAt: expect.any(String),
      late: false,
    }));
    expect(taken).toEqual(expected);
    expect(states).toEqual(['satisfied', 'satisfied']);
  });

  it('lists only the expectations the principal may read: an agent its own, a bare reporter none, and counts them all', async () => {
    const agentsKey = `shipment:${unique()}:delivered`;
    const own = await raiseOn(agentsKey, 'agent-a');
    const other = await raiseOn(agentsKey, 'agent-b');
    const feedsKey = `shipment:${unique()}:delivered`;
    const unseen = await raiseOn(feedsKey, 'agent-a');

    const byAgent = await report('agent-a', agentsKey);
    const byFeed = await report('feed', feedsKey);
    const states = await Promise.all([state(own), state(other), state(unseen)]);

    expect(byAgent.body.facts[0]).toEqual({
      factKey: agentsKey,
      result: 'recorded',
      awaitedBy: 2,
      expectations: [{ expectationId: own, state: 'satisfied', satisfiedAt: expect.any(String), late: false }],
    });
    expect(byFeed.body.facts[0]).toEqual({ factKey: feedsKey, result: 'recorded', awaitedBy: 1, expectations: [] });
    expect(states).toEqual(['satisfied', 'satisfied', 'satisfied']);
  });

  it('answers a fact nobody waits on with none, a duplicate without waiting, and without wait as before', async () => {
    const factKey = `shipment:${unique()}:delivered`;
    const observedAt = new Date().toISOString();

    const unawaited = await report('reading-feed', factKey, '?wait=true', observedAt);
    const duplicate = await report('reading-feed', factKey, '?wait=true', observedAt);
    const plain = await report('reading-feed', `shipment:${unique()}:delivered`, '');
    const waitFalse = await report('reading-feed', `shipment:${unique()}:delivered`, '?wait=false');

    expect(unawaited.body.facts).toEqual([{ factKey, result: 'recorded', awaitedBy: 0, expectations: [] }]);
    expect(duplicate.body.facts).toEqual([{ factKey, result: 'duplicate' }]);
    expect(Object.keys(plain.body.facts[0]).sort()).toEqual(['factKey', 'result']);
    expect(Object.keys(waitFalse.body.facts[0]).sort()).toEqual(['factKey', 'result']);
  });

  it('refuses a wait that is not true or false with 400 naming the parameter, and records nothing', async () => {
    const factKey = `shipment:${unique()}:delivered`;
    const id = await raiseOn(factKey, 'agent-a');

    const answer = await report('reading-feed', factKey, '?wait=yes');

    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      type: problem('invalid-request'),
      errors: [{ path: 'wait', message: 'wait must be true or false' }],
    });
    expect(await state(id)).toBe('open');
  });
});
