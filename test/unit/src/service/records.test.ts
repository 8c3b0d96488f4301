/**
 * What the records service lists (src/service/records.ts), against a visibility store that compares as a
 * case-insensitive collation does (MySQL's default): the answer keeps only what the principal may read.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../../src/auth/principals.js';
import type { ExpectationRecord } from '../../../../core/schemas/record.js';
import { createRecordsService } from '../../../../src/service/records.js';
import { deliveryExpectation } from '../../../support/fixtures.js';
import { fakeVisibility } from '../../../support/visibility.js';

const recordOf = (id: string, agent: string): ExpectationRecord => ({
  expectation: deliveryExpectation(id, '2026-12-01T01:00:00.000Z', { subject: { type: 'shipment', id: 'S-1' } }),
  projectedDueAt: '2026-12-01T01:00:00.000Z',
  dueAt: '2026-12-01T01:00:00.000Z',
  state: 'open',
  raisedAt: '2026-12-01T00:00:00.000Z',
  lapses: [],
  lineage: 0,
  agent: { id: agent },
  origin: {},
});

/** Both agents' expectations on S-1, whatever the query says of the agent: `alice` = `Alice` to the store. */
const caseBlind = fakeVisibility(() => [recordOf('mine', 'alice'), recordOf('theirs', 'Alice')]);
const records = createRecordsService({
  client: caseBlind.client,
  namespace: 'default',
  taskQueue: 'watcher',
  call: (fn) => fn(),
});
const alice: Principal = { id: 'alice', roles: ['agent'] };
const reader: Principal = { id: 'ops', roles: ['reader'] };
const subject = { subjectType: 'shipment', subjectId: 'S-1', pageSize: 100 };

describe('listing against a store that ignores case', () => {
  it("shows an agent its own expectations only, not another agent's whose id differs in case", async () => {
    const page = await records.list(alice, subject);

    expect(caseBlind.queries.at(-1)).toContain("ExpectationAgent = 'alice'");
    expect(page.items.map((item) => [item.expectationId, item.agent])).toEqual([['mine', 'alice']]);
  });

  it('gives a reader who names an agent that agent exactly, and everyone when it names none', async () => {
    const named = await records.list(reader, { ...subject, agent: 'Alice' });
    const everyone = await records.list(reader, subject);

    expect(named.items.map((item) => item.expectationId)).toEqual(['theirs']);
    expect(everyone.items.map((item) => item.expectationId)).toEqual(['mine', 'theirs']);
  });
});
