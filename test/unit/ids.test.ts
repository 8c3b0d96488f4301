import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  expectationLinks,
  expectationWorkflowId,
  factLedgerWorkflowId,
  subjectLedgerWorkflowId,
} from '../../src/temporal/ids.js';

describe('workflow ids', () => {
  it('are the business keys of DESIGN 2', () => {
    expect(expectationWorkflowId('EXP-42')).toBe('expectation:EXP-42');
    expect(factLedgerWorkflowId('shipment/SHP-1/delivered')).toBe('fact:shipment/SHP-1/delivered');
    expect(subjectLedgerWorkflowId({ type: 'ship ment', id: 'a:b/c' })).toBe('subject:ship%20ment:a%3Ab%2Fc');
  });

  it('replace an id over 512 bytes by the sha256 of the whole original', () => {
    const long = 'é'.repeat(300); // 600 bytes
    const expected = createHash('sha256').update(`expectation:${long}`).digest('hex');

    expect(expectationWorkflowId(long)).toBe(`expectation:sha256:${expected}`);
    expect(expectationWorkflowId('x'.repeat(500))).toBe(`expectation:${'x'.repeat(500)}`);
  });

  it('link an expectation to its ledgers, after and anchor targets', () => {
    const links = expectationLinks({
      expectationId: 'e2',
      subject: { type: 'shipment', id: 'SHP-1' },
      satisfiedBy: { factKey: 'k' },
      after: ['e1'],
      anchor: { expectationId: 'e0' },
    });

    expect(links).toEqual({
      self: 'expectation:e2',
      factLedger: 'fact:k',
      subjectLedger: 'subject:shipment:SHP-1',
      after: { e1: 'expectation:e1' },
      anchor: 'expectation:e0',
      supersedes: undefined,
    });
  });
});
