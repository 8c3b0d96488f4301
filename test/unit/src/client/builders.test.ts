/**
 * The client's builders (src/client/builders.ts), imported as agent authors import them: what they accept, the
 * exact error they throw before any request, and that what they build is what the bridge reads.
 */
import {
  artifactUpdateEvent,
  EXTENSION_URI,
  expectation,
  extensionPayload,
  fact,
  WatcherValidationError,
  withdrawList,
  withExtension,
  type ExpectationInput,
} from 'expectations-watcher/client';
import { describe, expect, it } from 'vitest';
import { parseA2AEvent } from '../../../../src/schemas/a2a.js';
import { joinPath } from '../../../../src/service/errors.js';
import { extractEvent } from '../../../../src/service/extract.js';
import { shipmentDelivery } from '../../../support/fixtures.js';

const seed: ExpectationInput = shipmentDelivery('SHP-1-delivery', 'SHP-1', '2026-12-04T17:00:00Z', {
  expects: 'The shipment is delivered to the consignee',
  grace: 'PT6H',
});

/** The WatcherValidationError `build` throws (the test fails if it throws nothing or something else). */
function refusal(build: () => unknown): { message: string; errors: unknown } {
  try {
    build();
  } catch (error) {
    if (error instanceof WatcherValidationError) return { message: error.message, errors: error.errors };
    throw error;
  }
  throw new Error('expected a WatcherValidationError');
}

describe('expectation()', () => {
  it('answers the expectation, every optional field kept', () => {
    const full = {
      ...seed,
      anchor: { expectationId: 'SHP-1-pickup', offset: 'P2D' },
      after: ['SHP-1-pickup'],
      horizon: '2026-12-10T00:00:00Z',
      supersedes: 'SHP-1-delivery-v0',
    };

    expect(expectation(full)).toEqual(full);
  });

  it('names every bad field (a missing dueAt, a grace that is no duration) in one error', () => {
    const { dueAt: _dueAt, ...withoutDueAt } = seed;

    expect(refusal(() => expectation({ ...withoutDueAt, grace: '6 hours' } as ExpectationInput))).toEqual({
      message:
        'invalid expectation: dueAt: must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z; grace: must be an ISO 8601 duration, e.g. PT6H or P7D',
      errors: [
        { path: 'dueAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' },
        { path: 'grace', message: 'must be an ISO 8601 duration, e.g. PT6H or P7D' },
      ],
    });
  });

  it('refuses a dueAt with an offset and a nested empty factKey, by their paths', () => {
    expect(
      refusal(() => expectation({ ...seed, dueAt: '2026-12-04T17:00:00+02:00', satisfiedBy: { factKey: '' } })).errors,
    ).toEqual([
      { path: 'satisfiedBy/factKey', message: 'satisfiedBy.factKey must not be empty' },
      { path: 'dueAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' },
    ]);
  });

  it('refuses a grace that takes the deadline past the year 9999', () => {
    expect(refusal(() => expectation({ ...seed, dueAt: '9999-12-31T00:00:00Z', grace: 'P2D' })).errors).toEqual([
      { path: 'grace', message: 'dueAt plus this duration must fall no later than 9999-12-31T23:59:59.999Z' },
    ]);
  });
});

describe('fact()', () => {
  it('answers the fact, with no source (the watcher sets it)', () => {
    const input = {
      factKey: 'shipment/SHP-1/delivered',
      observedAt: '2026-12-04T10:00:00Z',
      subject: { type: 'shipment', id: 'SHP-1' },
    };

    expect(fact(input)).toEqual(input);
  });

  it('refuses an observedAt that is a date only', () => {
    expect(refusal(() => fact({ factKey: 'k', observedAt: '2026-12-04' }))).toEqual({
      message: 'invalid fact: observedAt: must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z',
      errors: [{ path: 'observedAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' }],
    });
  });
});

describe('withdrawList()', () => {
  it('answers the ids', () => {
    expect(withdrawList(['SHP-1-delivery', 'SHP-1-pickup'])).toEqual(['SHP-1-delivery', 'SHP-1-pickup']);
  });

  it('refuses an empty id, naming its place', () => {
    expect(refusal(() => withdrawList(['SHP-1-delivery', '']))).toEqual({
      message: 'invalid withdraw list: withdraw/1: withdraw[] must not be empty',
      errors: [{ path: 'withdraw/1', message: 'withdraw[] must not be empty' }],
    });
  });
});

describe('extensionPayload()', () => {
  it('checks every list at once and names each bad item by its path in the payload', () => {
    const { message, errors } = refusal(() =>
      extensionPayload({
        expectations: [seed, { ...seed, expectationId: 'SHP-1-late', satisfiedBy: { factKey: '' } }],
        facts: [{ factKey: 'k', observedAt: 'yesterday' }],
        withdraw: [''],
      }),
    );

    expect(errors).toEqual([
      { path: 'expectations/1/satisfiedBy/factKey', message: 'satisfiedBy.factKey must not be empty' },
      { path: 'facts/0/observedAt', message: 'must be an RFC 3339 date-time in UTC, e.g. 2026-12-01T00:00:00Z' },
      { path: 'withdraw/0', message: 'withdraw[] must not be empty' },
    ]);
    expect(message).toMatch(/^invalid extension payload: expectations\/1\/satisfiedBy\/factKey: /);
  });

  it('keeps only the lists it was given', () => {
    expect(extensionPayload({ withdraw: ['SHP-1-pickup'] })).toEqual({ withdraw: ['SHP-1-pickup'] });
  });
});

describe('withExtension()', () => {
  const artifact = {
    artifactId: 'plan',
    parts: [{ text: 'Delivery on Friday' }],
    metadata: { other: 1, [EXTENSION_URI]: 'old' },
  };

  it('puts the payload under metadata[URI], keeps the other metadata and lists the extension once', () => {
    const once = withExtension(artifact, { expectations: [seed] });
    const twice = withExtension(once, { facts: [{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }] });

    expect(once).toEqual({
      ...artifact,
      metadata: { other: 1, [EXTENSION_URI]: { expectations: [seed] } },
      extensions: [EXTENSION_URI],
    });
    expect(twice.extensions).toEqual([EXTENSION_URI]);
    expect(twice.metadata[EXTENSION_URI]).toEqual({ facts: [{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }] });
    expect(artifact.metadata[EXTENSION_URI]).toBe('old');
  });

  it('refuses a bad payload before anything is sent', () => {
    expect(
      refusal(() => withExtension(artifact, { expectations: [{ ...seed, basis: 7 as unknown as string }] })).errors,
    ).toEqual([{ path: 'expectations/0/basis', message: 'Invalid input: expected string, received number' }]);
  });
});

describe('artifactUpdateEvent()', () => {
  it('is a push body the bridge parses, its expectations and facts found where the extension puts them', () => {
    const event = artifactUpdateEvent({
      taskId: 'task-1',
      contextId: 'ctx-1',
      artifact: withExtension(
        { artifactId: 'plan', parts: [{ text: 'plan' }] },
        { expectations: [seed], facts: [{ factKey: 'k', observedAt: '2026-12-01T00:00:00Z' }] },
      ),
    });

    const parsed = parseA2AEvent(event);
    if (!parsed.success) throw new Error(JSON.stringify(parsed.issues));
    const extracted = extractEvent(parsed.data);

    const at = `artifactUpdate/artifact/metadata/${joinPath([EXTENSION_URI])}`;
    expect(extracted.origin).toEqual({ taskId: 'task-1', contextId: 'ctx-1' });
    expect(extracted.expectations.map((item) => [joinPath(item.path), item.value])).toEqual([
      [`${at}/expectations/0`, seed],
    ]);
    expect(extracted.facts.map((item) => joinPath(item.path))).toEqual([`${at}/facts/0`]);
    expect([...extracted.schemaErrors, ...extracted.placementErrors]).toEqual([]);
  });
});
