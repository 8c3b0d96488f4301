/**
 * All activities of the watcher, built from their dependencies (STYLE 6): the Temporal client for ledger and
 * anchor calls, `fetch` and a clock for lapse delivery.
 */
import type { Client } from '@temporalio/client';
import { createDeliveryActivities, type AgentDirectory } from './deliver-lapse.js';
import { createLedgerActivities } from './ledgers.js';

export interface ActivityDeps {
  client: Client;
  fetch?: typeof fetch;
  now?: () => Date;
  /** Agents' card URLs and credentials, from the principals file (never from Temporal). */
  agents?: AgentDirectory;
}

/** The activities object registered on the worker. */
export function createActivities(deps: ActivityDeps) {
  return { ...createLedgerActivities(deps), ...createDeliveryActivities(deps) };
}

export type WatcherActivities = ReturnType<typeof createActivities>;
