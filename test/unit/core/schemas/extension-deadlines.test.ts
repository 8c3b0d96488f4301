import { describe, expect, it } from 'vitest';
import { expectationSchema } from '../../../../core/schemas/extension.js';
import { shipmentDelivery } from '../../../support/fixtures.js';

const seed = shipmentDelivery('e1', 'SHP-1', '2026-12-04T17:00:00Z', { expects: 'SHP-1 is delivered' });

const issues = (value: unknown) =>
  expectationSchema
    .safeParse(value)
    .error?.issues.map((issue) => ({ path: issue.path.join('/'), message: issue.message }));

describe('deadlines a clock can reach', () => {
  it('accepts long but real graces and offsets', () => {
    expect(issues({ ...seed, grace: 'P100Y', anchor: { expectationId: 'e0', offset: 'P7000Y' } })).toBeUndefined();
  });

  it.each(['P99999999999999999999Y', 'PT9007199254740993S', 'P300000000D', 'P8000Y'])(
    'refuses a grace of %s, naming the field',
    (grace) => {
      expect(issues({ ...seed, grace })).toEqual([
        { path: 'grace', message: 'dueAt plus this duration must fall no later than 9999-12-31T23:59:59.999Z' },
      ]);
    },
  );

  it('refuses an anchor offset no clock can reach', () => {
    expect(issues({ ...seed, anchor: { expectationId: 'e0', offset: 'P300000000D' } })).toEqual([
      { path: 'anchor/offset', message: 'dueAt plus this duration must fall no later than 9999-12-31T23:59:59.999Z' },
    ]);
  });

  it('refuses negative and sign-prefixed durations', () => {
    expect(issues({ ...seed, grace: '-PT6H' })).toEqual([
      { path: 'grace', message: 'must be an ISO 8601 duration, e.g. PT6H or P7D' },
    ]);
  });
});

describe('duration format', () => {
  it.each(['P1W2D', 'P', 'PT', 'P1.5Y', '6 hours'])('refuses %s as RFC 3339 does', (grace) => {
    expect(issues({ ...seed, grace })).toEqual([
      { path: 'grace', message: 'must be an ISO 8601 duration, e.g. PT6H or P7D' },
    ]);
  });

  it.each(['P1W', 'P1Y2M3DT4H5M6.5S', 'PT0.5S', 'P0D'])('accepts %s', (grace) => {
    expect(issues({ ...seed, grace })).toBeUndefined();
  });
});
