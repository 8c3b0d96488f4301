/**
 * All activities of the watcher, built from their dependencies (STYLE 6): the Temporal client for router and
 * anchor calls, `fetch` and the card reader for lapse delivery.
 */
import type { Client } from '@temporalio/client';
import type { CardResolver } from './agent-card/card.js';
import { createDeliveryActivities, type AgentDirectory } from './deliver-lapse.js';
import { createClientActivities } from './client-calls.js';

export interface ActivityDeps {
  client: Client;
  fetch?: typeof fetch;
  /** Agents' card URLs and credentials, from the principals file (never from Temporal). */
  agents?: AgentDirectory;
  /** Reads agents' cards (./agent-card/card.ts, cached for WATCHER_CARD_CACHE_SECONDS). */
  cards?: CardResolver;
}

/** The activities object registered on the worker. */
export function createActivities(deps: ActivityDeps) {
  return { ...createClientActivities(deps), ...createDeliveryActivities(deps) };
}

export type WatcherActivities = ReturnType<typeof createActivities>;
