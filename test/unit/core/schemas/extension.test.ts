import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { expectationSchema, extensionMetadataSchema, reportedFactSchema } from '../../../../core/schemas/extension.js';
import { factsBodySchema, listQuerySchema, withdrawBodySchema } from '../../../../src/schemas/http.js';
import { joinPath } from '../../../../src/service/errors.js';
import { shipmentDelivery } from '../../../support/fixtures.js';

const seed = shipmentDelivery('EXP-1', 'S-1', '2026-12-01T00:00:00Z', { expects: 'delivered to the consignee' });

function errors(schema: z.ZodType, value: unknown) {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error('expected a failure');
  return parsed.error.issues.map((issue) => ({ path: joinPath(issue.path), message: issue.message }));
}

describe('expectation seeds', () => {
  it('accepts the seed with every optional field', () => {
    const full = {
      ...seed,
      grace: 'PT6H',
      anchor: { expectationId: 'EXP-0', offset: 'P2D' },
      after: ['EXP-0'],
      horizon: '2026-12-10T00:00:00Z',
      supersedes: 'EXP-00',
    };

    expect(expectationSchema.parse(full)).toEqual(full);
  });

  it('refuses a dueAt with an offset other than Z, naming dueAt', () => {
    expect(errors(expectationSchema, { ...seed, dueAt: '2026-12-01T00:00:00+02:00' })).toEqual([
      { path: 'dueAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' },
    ]);
  });

  it('refuses a grace that is not an ISO 8601 duration', () => {
    expect(errors(expectationSchema, { ...seed, grace: '6 hours' })).toEqual([
      { path: 'grace', message: 'must be an ISO 8601 duration, e.g. PT6H or P7D' },
    ]);
  });

  it('names a missing nested field by its full path', () => {
    expect(errors(expectationSchema, { ...seed, satisfiedBy: {} })).toEqual([
      { path: 'satisfiedBy/factKey', message: 'Invalid input: expected string, received undefined' },
    ]);
  });

  it('names a bad anchor offset and a bad after item', () => {
    expect(
      errors(expectationSchema, { ...seed, anchor: { expectationId: 'a', offset: 'tomorrow' }, after: ['ok', ''] }).map(
        (e) => e.path,
      ),
    ).toEqual(['anchor/offset', 'after/1']);
  });

  it.each(['.', '..'])(
    'refuses %j as an expectation id, a fact key or a subject id (a URL path would resolve it away), naming each',
    (dots) => {
      const message = (field: string) =>
        `${field} must not be '.' or '..', which a URL path reads as the folder or its parent`;
      const everywhere = {
        ...seed,
        expectationId: dots,
        subject: { type: 'shipment', id: dots },
        satisfiedBy: { factKey: dots },
        anchor: { expectationId: dots, offset: 'PT1H' },
        after: [dots],
        supersedes: dots,
      };

      expect(errors(expectationSchema, everywhere)).toEqual([
        { path: 'expectationId', message: message('expectationId') },
        { path: 'subject/id', message: message('subject.id') },
        { path: 'satisfiedBy/factKey', message: message('satisfiedBy.factKey') },
        { path: 'anchor/expectationId', message: message('anchor.expectationId') },
        { path: 'after/0', message: message('after[]') },
        { path: 'supersedes', message: message('supersedes') },
      ]);
      expect(
        errors(reportedFactSchema, {
          factKey: dots,
          observedAt: '2026-01-01T00:00:00Z',
          subject: { type: 't', id: dots },
        }),
      ).toEqual([
        { path: 'factKey', message: message('factKey') },
        { path: 'subject/id', message: message('subject.id') },
      ]);
      expect(errors(extensionMetadataSchema, { withdraw: [dots] })).toEqual([
        { path: 'withdraw/0', message: message('withdraw[]') },
      ]);
    },
  );

  it('takes ids that only begin or end with dots, and a subject type or kind of dots', () => {
    const dotted = {
      ...seed,
      expectationId: '...',
      kind: '..',
      subject: { type: '.', id: '.S-1' },
      satisfiedBy: { factKey: 'k..' },
    };

    expect(expectationSchema.parse(dotted)).toEqual(dotted);
  });

  it('refuses a seed without dueAt: there is no open-ended expectation', () => {
    const { dueAt: _dueAt, ...withoutDue } = seed;

    expect(errors(expectationSchema, withoutDue).map((e) => e.path)).toEqual(['dueAt']);
  });
});

describe('reported facts', () => {
  it('accepts a fact without source: the watcher sets it', () => {
    expect(reportedFactSchema.parse({ factKey: 'k', observedAt: '2026-01-01T00:00:00Z' })).toEqual({
      factKey: 'k',
      observedAt: '2026-01-01T00:00:00Z',
    });
  });

  it('refuses an observedAt without time zone', () => {
    expect(errors(reportedFactSchema, { factKey: 'k', observedAt: '2026-01-01T00:00:00' }).map((e) => e.path)).toEqual([
      'observedAt',
    ]);
  });

  it('names a subject without id', () => {
    expect(
      errors(reportedFactSchema, { factKey: 'k', observedAt: '2026-01-01T00:00:00Z', subject: { type: 't' } }).map(
        (e) => e.path,
      ),
    ).toEqual(['subject/id']);
  });
});

describe('bridge bodies and queries', () => {
  it('requires at least one fact in POST /v1/facts', () => {
    expect(errors(factsBodySchema, { facts: [] })).toEqual([
      { path: 'facts', message: 'must carry at least one fact' },
    ]);
  });

  it('requires a non-empty reason to withdraw', () => {
    expect(errors(withdrawBodySchema, { reason: '  ' })).toEqual([
      { path: 'reason', message: 'reason must not be empty' },
    ]);
  });

  it('defaults pageSize to 100 and coerces it from the query string', () => {
    expect(listQuerySchema.parse({}).pageSize).toBe(100);
    expect(listQuerySchema.parse({ pageSize: '7' }).pageSize).toBe(7);
  });

  it('refuses subjectId without subjectType', () => {
    expect(errors(listQuerySchema, { subjectId: 'S-1' })).toEqual([
      { path: 'subjectId', message: 'subjectId needs subjectType' },
    ]);
  });

  it('refuses an unknown state and a repeated kind', () => {
    expect(errors(listQuerySchema, { state: 'late', kind: ['a', 'b'] }).map((e) => e.path)).toEqual(['state', 'kind']);
  });

  it('refuses a filter with a control character (a NUL would reach the visibility query), naming it', () => {
    const message = (name: string) => `${name} must not contain control characters (U+0000 to U+001F, U+007F)`;

    expect(
      errors(listQuerySchema, { subjectType: 'ship\u0000ment', subjectId: 'S-\u001f', kind: 'delivery\u007f' }),
    ).toEqual([
      { path: 'subjectType', message: message('subjectType') },
      { path: 'subjectId', message: message('subjectId') },
      { path: 'kind', message: message('kind') },
    ]);
  });

  it('refuses a page token that is not base64url', () => {
    expect(errors(listQuerySchema, { pageToken: 'a+b/c=' }).map((e) => e.path)).toEqual(['pageToken']);
  });
});

describe('joinPath', () => {
  it('escapes slashes and tildes in a segment as RFC 6901 does', () => {
    expect(joinPath(['task', 'metadata', 'https://x/y', 'a~b', 0])).toBe('task/metadata/https:~1~1x~1y/a~0b/0');
  });
});
