import { describe, expect, it } from 'vitest';
import { decodePageToken, encodePageToken } from '../../src/service/records.js';
import { SchemaError } from '../../src/service/errors.js';

/** The field errors of the SchemaError `act` throws. */
function refusal(act: () => unknown): unknown {
  try {
    act();
  } catch (error) {
    if (error instanceof SchemaError) return error.errors;
    throw error;
  }
  throw new Error('expected a SchemaError');
}

const query = `ExpectationSubject STARTS_WITH "shipment/"`;

describe('page tokens', () => {
  it('carry the visibility store token of the list they came from', () => {
    const store = Uint8Array.from([0, 1, 2, 250, 255]);

    const token = encodePageToken(store, query);

    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect([...decodePageToken(token, query)]).toEqual([...store]);
  });

  it('refuse a token that is not ours, naming pageToken', () => {
    for (const foreign of ['AAAA', '', 'not base64!', Buffer.from('{"q":1}').toString('base64url')]) {
      expect(refusal(() => decodePageToken(foreign, query))).toEqual([
        { path: 'pageToken', message: 'not a page token from a previous answer' },
      ]);
    }
  });

  it('refuse a token of a list with other filters', () => {
    const token = encodePageToken(Uint8Array.from([1]), query);

    expect(refusal(() => decodePageToken(token, `${query} AND ExpectationState = "open"`))).toEqual([
      { path: 'pageToken', message: 'the page token belongs to a list with other filters' },
    ]);
  });
});
