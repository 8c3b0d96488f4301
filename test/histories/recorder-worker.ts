/**
 * The worker both history recorders (record-histories.ts, record-encrypted.ts) run on their own dev server.
 */
import type { DevServer } from '../../dev/temporal/dev-server.js';
import { agentDirectory, createPrincipalStore } from '../../src/auth/principals.js';
import { createWatcherWorker, type WatcherWorker, type WatcherWorkerOptions } from '../../src/temporal/worker.js';
import { principalsFileOf } from '../support/agents.js';
import { loopbackAgents } from '../support/outbound.js';

/**
 * The watcher's worker on a recorder's own dev server, polling `taskQueue`: it finds the agents it delivers lapses
 * to among principals with the card URLs of `cards` (by principal id), as it does in the principals file, and
 * reaches them on loopback. `options`: what else the recording needs, e.g. a data converter.
 */
export function recorderWorker(
  server: Pick<DevServer, 'address' | 'namespace'>,
  taskQueue: string,
  cards: Record<string, string>,
  options: Partial<WatcherWorkerOptions> = {},
): Promise<WatcherWorker> {
  const principals = principalsFileOf(
    Object.entries(cards).map(([id, cardUrl]) => ({ id, roles: ['agent'], cardUrl })),
  );
  return createWatcherWorker({
    address: server.address,
    namespace: server.namespace,
    taskQueue,
    agents: agentDirectory(createPrincipalStore(principals)),
    outbound: loopbackAgents,
    ...options,
  });
}
