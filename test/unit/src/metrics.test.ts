import { describe, expect, it } from 'vitest';
import { createMetrics, MAX_KIND_LABELS } from '../../../src/metrics.js';

describe('the kind label', () => {
  it(`keeps the first ${MAX_KIND_LABELS} kinds as they are and counts any later one as other`, async () => {
    const metrics = createMetrics();
    for (let i = 0; i < MAX_KIND_LABELS + 50; i++)
      metrics.expectationsRaised.inc({ kind: metrics.kindLabel(`kind-${i}`) });
    metrics.expectationsRaised.inc({ kind: metrics.kindLabel('kind-0') });

    const values = (await metrics.expectationsRaised.get()).values;

    expect(values).toHaveLength(MAX_KIND_LABELS + 1);
    expect(values.find((v) => v.labels.kind === 'other')?.value).toBe(50);
    expect(values.find((v) => v.labels.kind === 'kind-0')?.value).toBe(2);
  });
});
