/**
 * What a kind actually does (GET /v1/statistics) read back from a known population raised through the bridge: ten
 * satisfied on time, two late, one withdrawn, one lapsed overdue, one still open; who may read whose figures; and
 * the `observed-due` warning of a raise whose dueAt is sooner than the observed p10, absent for one later; and that a
 * second deployment in the same namespace (another task queue) is neither listed nor counted.
 */
import { WatcherClient, type Statistics } from 'expectations-watcher/client';
import { describe, expect, it } from 'vitest';
import type { Expectation } from '../../core/types.js';
import { expectation } from '../support/fixtures.js';
import { artifactUpdate, problem, request, unique, useBridgeEnv } from '../support/bridge.js';
import { until } from '../support/poll.js';

const agentId = `stats-agent-${unique()}`;
const otherId = `stats-other-${unique()}`;
const env = useBridgeEnv([agentId, otherId], [{ id: 'stats-reader', roles: ['reader'] }], 'statistics');
// Another deployment in the same namespace (its own task queue, worker and bridge), with an agent of its own.
const neighbourAgent = `stats-neighbour-${unique()}`;
const neighbour = useBridgeEnv([neighbourAgent], [{ id: 'stats-reader', roles: ['reader'] }], 'statistics-neighbour');
const client = (principal: string, on = env) => new WatcherClient({ baseUrl: on.url, token: on.tokens[principal]! });

/** A `pickup` (basis observed, on the test card) due at `dueAt`, no grace. */
const pickup = (name: string, dueAt: Date): Expectation =>
  expectation(`stats-${name}-${unique()}`, {
    kind: 'pickup',
    basis: 'observed',
    dueAt: new Date(Math.floor(dueAt.getTime() / 1000) * 1000).toISOString(),
    grace: 'PT0S',
  });

const fact = (e: Expectation, observedAt: Date) => ({
  factKey: e.satisfiedBy.factKey,
  observedAt: observedAt.toISOString(),
  subject: e.subject,
});

const itemOf = (answer: Statistics, agent = agentId) =>
  answer.items.find((item) => item.kind === 'pickup' && item.agent === agent);

describe('GET /v1/statistics', () => {
  it('reads back the outcomes and times of a known population, and warns a raise due sooner than the observed p10', async () => {
    const agent = client(agentId);
    const t0 = Date.now();
    const inAnHour = new Date(t0 + 3_600_000);
    const onTime = Array.from({ length: 10 }, (_, k) => pickup(`on-time-${k}`, inAnHour));
    const late = [0, 1].map((k) => pickup(`late-${k}`, new Date(t0 + 30_000)));
    const withdrawn = pickup('withdrawn', inAnHour);
    const lapsed = pickup('lapsed', new Date(t0 + 2_000));
    const open = pickup('open', inAnHour);
    const raised = await agent.sendEvent(
      artifactUpdate({ expectations: [...onTime, ...late, withdrawn, lapsed, open] }),
    );
    expect(raised.expectations.every((item) => item.result === 'raised')).toBe(true);

    // Observed 10, 20, ... 100 s after the raise (ahead of the clock, within WATCHER_MAX_CLOCK_SKEW); the two late
    // ones 200 s after it, past their dueAt of 30 s, and received before it: late, not lapsed.
    await agent.reportFacts([
      ...onTime.map((e, k) => fact(e, new Date(t0 + (k + 1) * 10_000))),
      ...late.map((e) => fact(e, new Date(t0 + 200_000))),
    ]);
    await agent.withdraw(withdrawn.expectationId, 'statistics test');

    const figures = await until(
      () => agent.statistics({ kind: 'pickup' }),
      (answer) => {
        const item = itemOf(answer);
        return item?.satisfiedOnTime === 10 && item.satisfiedLate === 2 && item.lapsed.overdue === 1;
      },
      { timeoutMs: 120_000, intervalMs: 2_000, describe: (last) => JSON.stringify(last) },
    );
    const item = itemOf(figures)!;
    expect(figures).toMatchObject({ window: 'P7D', truncated: false });
    expect(item).toMatchObject({
      raised: 15,
      open: 1,
      satisfiedOnTime: 10,
      satisfiedLate: 2,
      withdrawn: 1,
      lapsed: { overdue: 1, skipped: 0, stalled: 0 },
    });
    // The raise is stamped by the workflow's first task, a moment after t0: the times are a little under the offsets.
    const times = item.timeToSatisfySeconds;
    expect(times.count).toBe(12);
    const near = (value: number | undefined, expected: number) => {
      expect(value).toBeGreaterThan(expected - 6);
      expect(value).toBeLessThanOrEqual(expected);
    };
    near(times.p10, 20);
    near(times.p50, 60);
    near(times.p90, 200);
    near(times.p99, 200);
    const relative = item.satisfiedRelativeToDueSeconds;
    expect(relative).toMatchObject({ count: 12 });
    // Early by 3,590 to 3,500 s for the ten, late by 170 s for the two (dueAt is whole seconds: within a second).
    expect(relative.p10).toBeCloseTo(-3580 + (t0 % 1000) / 1000, 0);
    expect(relative.p99).toBeCloseTo(170 + (t0 % 1000) / 1000, 0);

    // Sooner than nine in ten needed (p10 about 20 s): warned, and raised all the same. Later than it: not warned.
    const hasty = pickup('hasty', new Date(Date.now() + 5_000));
    const patient = pickup('patient', new Date(Date.now() + 600_000));
    const answer = await agent.sendEvent(artifactUpdate({ expectations: [hasty, patient] }));
    expect(answer.expectations[0]).toMatchObject({
      expectationId: hasty.expectationId,
      result: 'raised',
      warnings: [{ path: expect.stringMatching(/\/expectations\/0\/dueAt$/), rule: 'observed-due' }],
    });
    expect(answer.expectations[0]!.warnings![0]!.message).toMatch(/sooner than nine in ten of your recent 'pickup'/);
    expect(answer.expectations[1]).toEqual({ expectationId: patient.expectationId, result: 'raised' });
  }, 180_000);

  it('shows an agent its own figures only, and a reader everyone', async () => {
    const mine = pickup('own', new Date(Date.now() + 3_600_000));
    await client(otherId).sendEvent(artifactUpdate({ expectations: [mine] }));

    const other = await until(
      () => client(otherId).statistics(),
      (answer) => itemOf(answer, otherId)?.raised === 1,
      { timeoutMs: 60_000, intervalMs: 1_000, describe: (last) => JSON.stringify(last) },
    );
    expect(other.items.map((item) => item.agent)).toEqual([otherId]);

    const refused = await request(`${env.url}/v1/statistics?agent=${encodeURIComponent(agentId)}`, {
      token: env.tokens[otherId],
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ type: problem('forbidden'), errors: [{ path: 'agent' }] });

    const all = await client('stats-reader').statistics({ kind: 'pickup' });
    const agents = all.items.map((item) => item.agent);
    expect(agents).toContain(otherId);

    const bad = await request(`${env.url}/v1/statistics?window=P1Y`, { token: env.tokens['stats-reader'] });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'window', message: 'window must be between PT1M and P90D' }]);
  }, 120_000);

  it("lists and counts only its own deployment's expectations, not another task queue's in the same namespace", async () => {
    const theirs = pickup('neighbour', new Date(Date.now() + 3_600_000));
    await client(neighbourAgent, neighbour).sendEvent(artifactUpdate({ expectations: [theirs] }));
    const onTheirSubject = (on: typeof env) =>
      request(
        `${on.url}/v1/expectations?subjectType=${theirs.subject.type}&subjectId=${encodeURIComponent(theirs.subject.id)}`,
        { token: on.tokens['stats-reader'] },
      );
    // The neighbour's own reader sees it: it is in the namespace's visibility store.
    await until(
      () => client('stats-reader', neighbour).statistics({ kind: 'pickup' }),
      (answer) => itemOf(answer, neighbourAgent)?.raised === 1,
      { timeoutMs: 60_000, intervalMs: 1_000, describe: (last) => JSON.stringify(last) },
    );
    await until(
      () => onTheirSubject(neighbour),
      (answer) => answer.body.items?.length === 1,
      { timeoutMs: 60_000, intervalMs: 1_000, describe: (last) => JSON.stringify(last?.body) },
    );

    // A window no read of this file asked for, so that the answer is computed now, not reused (30 s).
    const counted = await client('stats-reader').statistics({ kind: 'pickup', window: 'PT5H' });
    const listed = await onTheirSubject(env);

    expect(counted.items.map((item) => item.agent)).not.toContain(neighbourAgent);
    expect(counted.items.map((item) => item.agent)).toContain(agentId);
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([]);
  }, 120_000);
});
