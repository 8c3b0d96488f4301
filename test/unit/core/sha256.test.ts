/**
 * The pure SHA-256 of core/sha256.ts (hashed workflow ids, core/ids.ts) against Node's: the ids must not change when
 * the hash moved off node:crypto.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../core/sha256.js';

const nodeSha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

describe('sha256Hex', () => {
  it('is the FIPS 180-4 digest of the empty string and of "abc"', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it.each([55, 56, 63, 64, 65, 119, 120, 10_000])(
    'agrees with node:crypto on %i bytes (the padding edges)',
    (length) => {
      const text = 'x'.repeat(length);

      expect(sha256Hex(text)).toBe(nodeSha256(text));
    },
  );

  it('hashes the UTF-8 bytes, a lone surrogate as U+FFFD, as node:crypto does', () => {
    for (const text of ['é'.repeat(130), 'subject:😀/ü', 'a\uD800b', 'z\uDC00'])
      expect(sha256Hex(text)).toBe(nodeSha256(text));
  });
});
