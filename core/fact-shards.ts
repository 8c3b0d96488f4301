/**
 * Which fact router serves a key or a subject (DESIGN 3.2, workflow id `facts:<taskQueue>:<shard>`): a fixed set of
 * long-lived routers, chosen by a hash, so that a key's subscriptions and facts serialise in one workflow, a subject's
 * facts are stored in one history, and a fact starts nothing of its own. Pure and deterministic: the bridge routes
 * with it, the router checks what it is sent with it, and the history reads find the router with it.
 */

/** How many routers there are: few enough that every one stays in a worker's cache (docs/operations.md). */
// Changing it moves keys between routers, whose subscriptions then wait on the wrong one: only with a drained release.
export const FACT_ROUTER_SHARDS = 64;

/** The UTF-8 bytes of one code point (a lone surrogate as U+FFFD, as TextEncoder does). */
function utf8(codePoint: number): number[] {
  const cp = codePoint >= 0xd800 && codePoint <= 0xdfff ? 0xfffd : codePoint;
  if (cp < 0x80) return [cp];
  if (cp < 0x800) return [0xc0 | (cp >> 6), 0x80 | (cp & 0x3f)];
  if (cp < 0x10000) return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
  return [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
}

/**
 * FNV-1a (32 bits) over the key's UTF-8 bytes: stable across processes and Node versions, and computed the same in
 * the workflow sandbox (no crypto, no TextEncoder needed).
 */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const char of text) {
    for (const byte of utf8(char.codePointAt(0)!)) {
      hash ^= byte;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
  }
  return hash;
}

/** The UTF-8 length of `text` in bytes, as Temporal measures a payload. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (const char of text) bytes += utf8(char.codePointAt(0)!).length;
  return bytes;
}

/** The router of `factKey`: 0 to FACT_ROUTER_SHARDS - 1. */
export const shardOf = (factKey: string): number => fnv1a(factKey) % FACT_ROUTER_SHARDS;

/** The router that stores the facts on a subject: 0 to FACT_ROUTER_SHARDS - 1, in the same set as the keys'. */
export const subjectShardOf = (subject: { type: string; id: string }): number =>
  fnv1a(`subject\u0000${subject.type}\u0000${subject.id}`) % FACT_ROUTER_SHARDS;
