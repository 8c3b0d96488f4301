import { describe, expect, it } from 'vitest';
import { latestObserved } from '../../workflows/subject-ledger.js';

describe("a subject ledger's coalesced facts", () => {
  const fact = (observedAt: string, receivedAt: string) => ({ factKey: `k-${observedAt}`, observedAt, receivedAt });

  it('carry the latest observation, received when the first of them was', () => {
    const early = fact('2026-06-01T11:59:00Z', '2026-06-01T12:00:00Z');
    const late = fact('2026-06-01T12:00:30Z', '2026-06-01T12:01:00Z');

    // Received before a horizon at 12:00:30, the first still breaks the silence when it travels with the second.
    expect(latestObserved(early, late)).toEqual({ ...late, receivedAt: early.receivedAt });
    expect(latestObserved(late, early)).toEqual({ ...late, receivedAt: early.receivedAt });
    expect(latestObserved(undefined, late)).toEqual(late);
  });
});
