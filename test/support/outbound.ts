/**
 * The outbound address policy the tests run under. Their agents, card servers and bridges listen on 127.0.0.1, which
 * the watcher denies on an existing cluster unless WATCHER_OUTBOUND_ALLOW names it: so every worker and bridge a test
 * starts allows loopback through that setting, as an operator would, and none through a code path of its own.
 */
import { loadConfig } from '../../src/config.js';
import type { OutboundRules } from '../../activities/outbound/address-policy.js';
import { createGuardedFetch } from '../../activities/outbound/guarded-fetch.js';

/** The setting, for a worker or bridge a test spawns as a process (`npm run worker`, `npm run bridge`). */
export const LOOPBACK_AGENTS_ENV = { WATCHER_OUTBOUND_ALLOW: 'loopback' } as const;

/** The rules WATCHER_OUTBOUND_ALLOW / _DENY give, read by src/config.ts as a worker on a cluster reads them. */
export function outboundRules(env: { WATCHER_OUTBOUND_ALLOW?: string; WATCHER_OUTBOUND_DENY?: string }): OutboundRules {
  return loadConfig({ TEMPORAL_ADDRESS: 'temporal.test:7233', ...env }).outbound;
}

/** WATCHER_OUTBOUND_ALLOW=loopback, for the workers and bridges a test builds in its own process. */
export const loopbackAgents: OutboundRules = outboundRules(LOOPBACK_AGENTS_ENV);

/** The guarded fetch under that policy, for activities and card readers a test builds itself. */
export const loopbackFetch: typeof fetch = createGuardedFetch({ rules: loopbackAgents });
