/**
 * The router's own record of its subjects (workflows/fact-router-state.ts), without a server: what continue-as-new
 * carries for the history reads, and what it lets go of, for want of room, with the instant the reads need.
 */
import { describe, expect, it } from 'vitest';
import { MAX_SUBJECTS_PER_ROUTER } from '../../../core/limits.js';
import { RouterState } from '../../../workflows/fact-router-state.js';
import type { SubjectFact } from '../../../workflows/messages.js';
import { subjectFact } from '../../support/fixtures.js';

const T = Date.parse('2026-12-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const on = (id: string, receivedMs: number, observedMs = receivedMs): SubjectFact =>
  subjectFact({ type: 'shipment', id }, `shipment/${id}/scanned`, observedMs, receivedMs);

describe("a router's subjects", () => {
  it('carry the fact observed last and the one received last of each subject', () => {
    const router = new RouterState({ shard: 0, retention: 'P7D' });
    router.observeSubject(on('S1', T + 2_000, T + 5_000));
    router.observeSubject(on('S1', T + 3_000, T + 1_000));

    expect(router.carried().subjects).toEqual([
      {
        subject: { type: 'shipment', id: 'S1' },
        latest: on('S1', T + 2_000, T + 5_000),
        lastReceived: on('S1', T + 3_000, T + 1_000),
      },
    ]);
    expect(new RouterState({ shard: 0, retention: 'P7D', carried: router.carried() }).carried()).toEqual(
      router.carried(),
    );
  });

  it(`keep the ${MAX_SUBJECTS_PER_ROUTER} heard of last, and say until when they let the others go`, () => {
    const router = new RouterState({ shard: 0, retention: 'P7D' });
    for (let i = 0; i < MAX_SUBJECTS_PER_ROUTER + 2; i++) router.observeSubject(on(`S${i}`, T + i));
    const carried = router.carried();

    expect(carried.subjects).toHaveLength(MAX_SUBJECTS_PER_ROUTER);
    expect(carried.subjects![0]!.subject.id).toBe('S2');
    expect(carried.subjectsForgottenThrough).toBe(iso(T + 1));
  });
});
