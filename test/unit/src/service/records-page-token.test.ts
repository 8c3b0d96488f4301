import { describe, expect, it } from 'vitest';
import { decodePageToken, encodePageToken } from '../../../../src/service/records.js';
import { SchemaError } from '../../../../src/service/errors.js';

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
const key = Buffer.from('a key of the bridges of one deployment');

describe('page tokens', () => {
  it('carry the visibility store token of the list they came from', () => {
    const store = Uint8Array.from([0, 1, 2, 250, 255]);

    const token = encodePageToken(store, query, key);

    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect([...decodePageToken(token, query, key)]).toEqual([...store]);
  });

  it('refuse a token that is not ours, naming pageToken', () => {
    for (const foreign of ['AAAA', '', 'not base64!', Buffer.from('{"q":1}').toString('base64url')]) {
      expect(refusal(() => decodePageToken(foreign, query, key))).toEqual([
        { path: 'pageToken', message: 'not a page token from a previous answer' },
      ]);
    }
  });

  it('refuse a token of a list with other filters', () => {
    const token = encodePageToken(Uint8Array.from([1]), query, key);

    expect(refusal(() => decodePageToken(token, `${query} AND ExpectationState = "open"`, key))).toEqual([
      { path: 'pageToken', message: 'the page token belongs to a list with other filters' },
    ]);
  });

  it('refuse a forged token, or one signed under another key, before it reaches the visibility store', () => {
    const token = encodePageToken(Uint8Array.from([1, 2, 3]), query, key);
    const body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { q: string; t: string; s: string };
    const forged = Buffer.from(JSON.stringify({ ...body, t: Buffer.from([9, 9, 9]).toString('base64') })).toString(
      'base64url',
    );
    const unsigned = Buffer.from(JSON.stringify({ q: body.q, t: body.t })).toString('base64url');
    const message =
      'not a page token from a previous answer (its signature does not match: forged, or from a bridge with another WATCHER_PAGE_TOKEN_SECRET)';

    expect(refusal(() => decodePageToken(forged, query, key))).toEqual([{ path: 'pageToken', message }]);
    expect(refusal(() => decodePageToken(token, query, Buffer.from('another key')))).toEqual([
      { path: 'pageToken', message },
    ]);
    expect(refusal(() => decodePageToken(unsigned, query, key))).toEqual([
      { path: 'pageToken', message: 'not a page token from a previous answer' },
    ]);
  });
});
