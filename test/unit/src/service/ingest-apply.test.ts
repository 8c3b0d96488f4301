/**
 * The facts of one request are recorded in chains (src/service/ingest.ts): facts that go to one router, by key or by
 * subject, stay in one chain in the request's order; the others may go together.
 */
import { describe, expect, it } from 'vitest';
import type { Fact } from '../../../../core/schemas/extension.js';
import { chainsOf } from '../../../../src/service/ingest-apply.js';
import { fact as keyFact } from '../../../support/fixtures.js';

/** A fact on `factKey`, on shipment `subjectId` when given. */
const fact = (factKey: string, subjectId?: string): Fact =>
  keyFact(factKey, subjectId ? { subject: { type: 'shipment', id: subjectId } } : {});

describe('chainsOf', () => {
  it('puts facts of different keys and no subject in chains of their own', () => {
    expect(chainsOf([fact('a'), fact('b'), fact('c')])).toEqual([[0], [1], [2]]);
  });

  it('keeps the facts of one key in one chain, in the order of the request', () => {
    expect(chainsOf([fact('a'), fact('b'), fact('a'), fact('a')])).toEqual([[0, 2, 3], [1]]);
  });

  it('joins facts of different keys that share a subject, since they meet in its router', () => {
    expect(chainsOf([fact('a', 's1'), fact('b'), fact('c', 's1'), fact('d', 's2')])).toEqual([[0, 2], [1], [3]]);
  });

  it('joins chains through a fact that shares its key with one and its subject with the other', () => {
    // 0 and 1 share nothing; 2 has 0's key and 1's subject, so all three meet in routers one after the other.
    expect(chainsOf([fact('a', 's1'), fact('b', 's2'), fact('a', 's2'), fact('c')])).toEqual([[0, 1, 2], [3]]);
  });

  it('tells a subject from another of the same id and another type', () => {
    const parcel: Fact = { ...fact('b'), subject: { type: 'parcel', id: 's1' } };
    expect(chainsOf([fact('a', 's1'), parcel])).toEqual([[0], [1]]);
  });

  it('has no chain for no fact', () => {
    expect(chainsOf([])).toEqual([]);
  });
});
