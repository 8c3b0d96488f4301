/**
 * UUID v5 on Node's own SHA-1: the reference the tests check the workflows' pure-JS implementation against
 * (DESIGN 3.8).
 */
import { createHash } from 'node:crypto';

/** The RFC 4122 namespace of URLs. */
export const URL_NAMESPACE = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';

/** The name-based (SHA-1) UUID of `name` in `namespace`. */
export function nodeUuidv5(name: string, namespace: string): string {
  const digest = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  digest[6] = (digest[6]! & 0x0f) | 0x50;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
