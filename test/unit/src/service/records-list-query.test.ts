/**
 * `GET /v1/expectations` filters without a server: the query string as listQuerySchema reads it (400 errors naming
 * the parameter), the visibility query the records service builds from it, and the `ExpectationSubject` value a
 * subject type holding `/` or `%` is kept and listed under.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { listQuerySchema } from '../../../../src/schemas/http.js';
import { joinPath } from '../../../../src/service/errors.js';
import { listQuery } from '../../../../src/service/records.js';
import { parseSubjectKey, subjectKey, subjectTypePrefix } from '../../../../core/ids.js';

function errors(schema: z.ZodType, value: unknown) {
  const parsed = schema.safeParse(value);
  if (parsed.success) throw new Error('expected a failure');
  return parsed.error.issues.map((issue) => ({ path: joinPath(issue.path), message: issue.message }));
}

const base = "WorkflowType = 'expectationWorkflow' AND TaskQueue = 'watcher'";

describe('dueAt range', () => {
  it('reads dueAfter and dueBefore as RFC 3339 instants, with Z or an offset', () => {
    const parsed = listQuerySchema.parse({ dueAfter: '2026-12-01T00:00:00Z', dueBefore: '2026-12-02T01:00:00+01:00' });

    expect(parsed).toMatchObject({ dueAfter: '2026-12-01T00:00:00Z', dueBefore: '2026-12-02T01:00:00+01:00' });
    expect(listQuery('watcher', parsed)).toBe(
      `${base} AND ExpectationDueAt >= '2026-12-01T00:00:00.000Z' AND ExpectationDueAt < '2026-12-02T00:00:00.000Z'`,
    );
  });

  it('refuses what is not an RFC 3339 date-time, naming the parameter', () => {
    const message = (name: string) => `${name} must be an RFC 3339 date-time, e.g. 2026-12-01T00:00:00Z`;

    expect(errors(listQuerySchema, { dueAfter: '2026-12-01', dueBefore: 'tomorrow' })).toEqual([
      { path: 'dueAfter', message: message('dueAfter') },
      { path: 'dueBefore', message: message('dueBefore') },
    ]);
    expect(errors(listQuerySchema, { dueAfter: '2026-12-01T00:00:00' })).toEqual([
      { path: 'dueAfter', message: message('dueAfter') },
    ]);
    expect(errors(listQuerySchema, { dueBefore: ['2026-12-01T00:00:00Z', '2026-12-02T00:00:00Z'] })).toEqual([
      { path: 'dueBefore', message: message('dueBefore') },
    ]);
  });

  it('refuses an empty range, naming dueBefore', () => {
    const at = '2026-12-01T00:00:00Z';

    expect(errors(listQuerySchema, { dueAfter: at, dueBefore: '2026-12-01T01:00:00+01:00' })).toEqual([
      { path: 'dueBefore', message: 'dueBefore must be later than dueAfter' },
    ]);
    expect(listQuerySchema.safeParse({ dueAfter: at, dueBefore: '2026-12-01T00:00:00.001Z' }).success).toBe(true);
  });
});

describe('late', () => {
  it('reads true and false, and filters on ExpectationLate', () => {
    const late = listQuerySchema.parse({ late: 'true' });
    const onTime = listQuerySchema.parse({ late: 'false' });

    expect([late.late, onTime.late, listQuerySchema.parse({}).late]).toEqual([true, false, undefined]);
    expect(listQuery('watcher', late)).toBe(`${base} AND ExpectationLate = true`);
    expect(listQuery('watcher', onTime)).toBe(`${base} AND ExpectationLate = false`);
  });

  it('refuses anything else, naming late', () => {
    for (const value of ['yes', '1', 'TRUE', '', ['true', 'false']]) {
      expect(errors(listQuerySchema, { late: value })).toEqual([
        { path: 'late', message: 'late must be true or false' },
      ]);
    }
  });
});

describe('subject filter', () => {
  it('keeps a plain subject as type/id, so an operator types it into the UI as it reads', () => {
    expect(subjectKey({ type: 'shipment', id: 'S-1/a' })).toBe('shipment/S-1/a');
    expect(listQuery('watcher', { subjectType: 'shipment', subjectId: 'S-1' })).toBe(
      `${base} AND ExpectationSubject = 'shipment/S-1'`,
    );
    expect(listQuery('watcher', { subjectType: 'shipment' })).toBe(
      `${base} AND ExpectationSubject STARTS_WITH 'shipment/'`,
    );
  });

  it('encodes / and % in the type, so that a type with / is neither another subject nor a prefix of one', () => {
    const slashType = { type: 'org/unit', id: 'U-1' };
    const slashId = { type: 'org', id: 'unit/U-1' };

    expect(subjectKey(slashType)).toBe('org%2Funit/U-1');
    expect(subjectKey(slashId)).toBe('org/unit/U-1');
    expect(subjectKey({ type: '100%', id: 'x' })).toBe('100%25/x');
    expect(subjectKey(slashType).startsWith(subjectTypePrefix('org'))).toBe(false);
    expect(listQuery('watcher', { subjectType: 'org/unit' })).toBe(
      `${base} AND ExpectationSubject STARTS_WITH 'org%2Funit/'`,
    );
    expect(listQuery('watcher', { subjectType: 'org/unit', subjectId: 'U-1' })).toBe(
      `${base} AND ExpectationSubject = 'org%2Funit/U-1'`,
    );
  });

  it('reads back every subject from its key, whatever its type and id hold', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        (type, id) => {
          const key = subjectKey({ type, id });
          expect(parseSubjectKey(key)).toEqual({ type, id });
          expect(key.startsWith(subjectTypePrefix(type))).toBe(true);
        },
      ),
    );
  });

  it('reads a key whose id was hashed with the hash as its id, and a key with no type as no subject', () => {
    const long = { type: 'a/b', id: 'i'.repeat(300) };

    expect(parseSubjectKey(subjectKey(long))).toEqual({
      type: 'a/b',
      id: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    expect(parseSubjectKey('sha256:00ff')).toBeUndefined();
  });
});

it('combines every filter, and the agent of an agent’s own list, with AND', () => {
  const query = listQuerySchema.parse({
    subjectType: 'shipment',
    state: 'satisfied',
    kind: 'delivery',
    dueAfter: '2026-12-01T00:00:00Z',
    late: 'true',
  });

  expect(listQuery('watcher', query, 'agent-a')).toBe(
    [
      base,
      "ExpectationSubject STARTS_WITH 'shipment/'",
      "ExpectationState = 'satisfied'",
      "ExpectationKind = 'delivery'",
      "ExpectationDueAt >= '2026-12-01T00:00:00.000Z'",
      'ExpectationLate = true',
      "ExpectationAgent = 'agent-a'",
    ].join(' AND '),
  );
});

it('filters by the raising agent, a reader’s choice', () => {
  const query = listQuerySchema.parse({ agent: "ops'agent" });

  expect(listQuery('watcher', query)).toBe(`${base} AND ExpectationAgent = 'ops\\'agent'`);
});
