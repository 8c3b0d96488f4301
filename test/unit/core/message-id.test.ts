import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LAPSE_MESSAGE_NAMESPACE, lapseMessageId, sha1, utf8Bytes, uuidv5 } from '../../../core/message-id.js';
import { nodeUuidv5, URL_NAMESPACE } from '../../support/uuid-v5.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('lapse message id', () => {
  it('is the example of DESIGN 3.8', () => {
    expect(lapseMessageId('e1', 'overdue', '2026-12-01T00:00:00.000Z')).toBe('b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8');
  });

  it('takes dueAt as Date.toISOString(), so a dueAt without milliseconds gives the same id', () => {
    expect(lapseMessageId('e1', 'overdue', '2026-12-01T00:00:00Z')).toBe('b40ef0bc-0853-5c12-80e1-05dd5a8e6ef8');
  });

  it('differs per lapse kind and per dueAt', () => {
    const ids = new Set([
      lapseMessageId('e1', 'overdue', '2026-12-01T00:00:00Z'),
      lapseMessageId('e1', 'stalled', '2026-12-01T00:00:00Z'),
      lapseMessageId('e1', 'overdue', '2026-12-02T00:00:00Z'),
    ]);
    expect(ids.size).toBe(3);
  });

  it('uses the namespace UUID v5(URL namespace, extension URI)', () => {
    expect(uuidv5('https://rsaxb.com/a2a/expectations/v1', URL_NAMESPACE)).toBe(LAPSE_MESSAGE_NAMESPACE);
  });
});

describe('pure SHA-1 and UUID v5', () => {
  it('match Node crypto on random bytes of every length around the block boundaries', () => {
    for (let length = 0; length < 200; length++) {
      const bytes = randomBytes(length);
      expect(hex(sha1(bytes))).toBe(createHash('sha1').update(bytes).digest('hex'));
    }
  });

  it('encode any string as Node does in UTF-8 (lone surrogates included)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(hex(utf8Bytes(text))).toBe(Buffer.from(text, 'utf8').toString('hex'));
      }),
    );
  });

  it('give the same UUID v5 as a Node crypto reference over random names and namespaces', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.uuid(), (name, namespace) => {
        expect(uuidv5(name, namespace)).toBe(nodeUuidv5(name, namespace));
      }),
    );
    const expectationId = randomUUID();
    expect(lapseMessageId(expectationId, 'skipped', '2027-01-31T12:00:00.5Z')).toBe(
      nodeUuidv5(`${expectationId}|skipped|2027-01-31T12:00:00.500Z`, LAPSE_MESSAGE_NAMESPACE),
    );
  });
});
