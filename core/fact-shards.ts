/**
 * Which fact router serves a key (DESIGN 3.2, workflow id `facts:<taskQueue>:<shard>`): a fixed set of routers, chosen by a hash
 * of the key, so that a key's subscriptions and facts serialise in one workflow and a fact nobody waits on starts
 * nothing. Pure and deterministic: the bridge routes with it and the router checks what it is sent with it.
 */

/** How many routers there are. Changing it moves keys between routers: subscriptions then wait on the wrong one. */
export const FACT_ROUTER_SHARDS = 16;

/** FNV-1a (32 bits) over the key's UTF-8 bytes: stable across processes and Node versions, no crypto needed. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** The router of `factKey`: 0 to FACT_ROUTER_SHARDS - 1. */
export const shardOf = (factKey: string): number => fnv1a(factKey) % FACT_ROUTER_SHARDS;
