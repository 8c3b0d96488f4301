import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_REFERENCE_PATH, apiReference, typeOf } from '../../../dev/docs/api-reference.js';

describe('docs/api-reference.md', () => {
  it('is what `npm run docs` writes from the OpenAPI document now (run it after changing a schema or route)', () => {
    expect(readFileSync(API_REFERENCE_PATH, 'utf8')).toBe(apiReference());
  });

  it('has a section for every route and every schema the document holds', () => {
    const reference = apiReference();
    for (const heading of ['## `GET /v1/expectations/{id}`', '## `POST /v1/facts`', '### ExpectationRecord']) {
      expect(reference).toContain(heading);
    }
    expect(reference).toMatch(
      /\| `pageSize` \| query \| integer \| {2}\| Items per page\. ≥ 1; ≤ 1000; default 100 \|/,
    );
  });

  it('names types as a reader reads them', () => {
    expect(typeOf({ $ref: '#/components/schemas/Subject' })).toBe('[Subject](#subject)');
    expect(typeOf({ type: 'array', items: { type: 'string', format: 'date-time' } })).toBe('string (date-time)[]');
    expect(typeOf({ type: 'string', enum: ['open', 'lapsed'] })).toBe('"open" \\| "lapsed"');
  });
});
