/**
 * Whether a worker takes the bridge's work (src/temporal/worker-readiness.ts), as `/readyz` asks it: from the pollers
 * DescribeTaskQueue reports (seen lately, the answer reused a few seconds), or from the state of the process's own
 * worker. The clock and the pollers are the test's.
 */
import { describe, expect, it } from 'vitest';
import {
  ownWorkerReadiness,
  POLLER_CACHE_MS,
  POLLER_FRESH_MS,
  pollerReadiness,
} from '../../../../src/temporal/worker-readiness.js';

/** A probe on fake pollers and a fake clock; `calls` counts the DescribeTaskQueue calls it made. */
function probeWith(pollers: () => Promise<number[]>) {
  const clock = { now: Date.parse('2026-12-01T00:00:00Z') };
  const counted = { calls: 0 };
  const probe = pollerReadiness({
    taskQueue: 'expectations',
    pollers: () => {
      counted.calls++;
      return pollers();
    },
    now: () => clock.now,
  });
  return { probe, clock, counted };
}

const noWorker =
  'no worker polls expectations: Temporal saw no poller of its workflow tasks in the last 120 s, so raised expectations would never progress';

describe('readiness from the pollers Temporal reports', () => {
  it('is ready while a poller was seen within the last two minutes', async () => {
    const { probe, clock } = probeWith(async () => [clock.now - POLLER_FRESH_MS, clock.now - 10 * POLLER_FRESH_MS]);

    expect(await probe()).toEqual({ ready: true, worker: 'polling' });
  });

  it('is not ready when the last poll is older than that, or there is no poller at all, and says which queue', async () => {
    const stale = probeWith(async () => [stale.clock.now - POLLER_FRESH_MS - 1]);
    const none = probeWith(async () => []);

    expect(await stale.probe()).toEqual({ ready: false, reason: noWorker });
    expect(await none.probe()).toEqual({ ready: false, reason: noWorker });
  });

  it('is not ready when Temporal cannot say, and says why', async () => {
    const { probe } = probeWith(async () => {
      throw new Error('PermissionDenied: DescribeTaskQueue');
    });

    expect(await probe()).toEqual({
      ready: false,
      reason: 'could not ask Temporal which workers poll expectations: PermissionDenied: DescribeTaskQueue',
    });
  });

  it('asks Temporal once per five seconds however often it is probed, concurrent probes sharing one call', async () => {
    let seen: number[] = [];
    const { probe, clock, counted } = probeWith(async () => seen);

    const first = await Promise.all([probe(), probe(), probe()]);
    seen = [clock.now];
    clock.now += POLLER_CACHE_MS - 1;
    const cached = await probe();
    clock.now += 1;
    const fresh = await probe();

    expect(first.map((answer) => answer.ready)).toEqual([false, false, false]);
    expect(cached.ready).toBe(false);
    expect(fresh).toEqual({ ready: true, worker: 'polling' });
    expect(counted.calls).toBe(2);
  });
});

describe("readiness from the process's own worker", () => {
  it('is ready while it runs', () => {
    expect(
      ownWorkerReadiness(
        'expectations',
        () => 'RUNNING',
        () => undefined,
      ),
    ).toEqual({ ready: true, worker: 'running' });
  });

  it.each(['STOPPING', 'DRAINING', 'DRAINED', 'STOPPED', 'INITIALIZED'])('is not ready when it is %s', (state) => {
    expect(
      ownWorkerReadiness(
        'expectations',
        () => state,
        () => undefined,
      ),
    ).toEqual({
      ready: false,
      reason: `no worker polls expectations: the worker of this process is ${state.toLowerCase()}, so raised expectations would never progress`,
    });
  });

  it('names the error a failed worker died of', () => {
    const failed = ownWorkerReadiness(
      'expectations',
      () => 'FAILED',
      () => new Error('Namespace default is not found'),
    );

    expect(failed).toEqual({
      ready: false,
      reason:
        'no worker polls expectations: the worker of this process has failed (Namespace default is not found), so raised expectations would never progress',
    });
  });
});
