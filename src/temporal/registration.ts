/**
 * Registers raised expectations with their fact routers, one signal-with-start per router, before the bridge answers
 * `raised`, so that no fact received after the answer can miss them (docs/raise-path.md; DESIGN 3.2).
 */
import type { Client } from '@temporalio/client';
import { shardOf } from '../../core/fact-shards.js';
import { routerTaskQueue } from '../../core/ids.js';
import { ROUTER_WORKFLOW_TASK_TIMEOUT_MS } from '../../core/limits.js';
import type { factRouterWorkflow } from '../../workflows/fact-router.js';
import { subscribeSignal, type FactRouterInput, type Subscribe as SubscribeArgs } from '../../workflows/messages.js';
import { settled } from './settled.js';

/**
 * How every router is started, whichever call starts it (a subscription, a stored fact, a recorded one): on the
 * routers' own queue, with their workflow task timeout (core/limits.ts), its shard and retention as input.
 */
export function routerStart(taskQueue: string, shard: number, retention: string) {
  return {
    taskQueue: routerTaskQueue(taskQueue),
    args: [{ shard, retention }] as [FactRouterInput],
    staticSummary: `fact router ${shard}`,
    workflowTaskTimeout: ROUTER_WORKFLOW_TASK_TIMEOUT_MS,
  };
}

export interface Registration {
  /** Workflow id of the expectation that subscribes. */
  subscriber: string;
  factRouter: string;
  factKey: string;
  /** The fact router's retention, should this call start it. */
  retention: string;
}

/**
 * Subscribes every expectation to its fact router, all routers at once and one call per router: a router that
 * several of them share gets them all in one signal. Idempotent (a router keeps a set of subscribers), so a request
 * sent again completes an interrupted one.
 */
export async function subscribeAllToRouters(
  client: Client,
  taskQueue: string,
  registrations: readonly Registration[],
): Promise<void> {
  const factRouters = groupBy(registrations, (r) => r.factRouter);
  await settled(
    [...factRouters].map(([workflowId, group]) => {
      const { factKey, retention } = group[0]!;
      const shard = shardOf(factKey);
      const subscription: SubscribeArgs = {
        workflowIds: group.map((r) => r.subscriber),
        factKeys: group.map((r) => r.factKey),
      };
      return client.workflow.signalWithStart<typeof factRouterWorkflow, [SubscribeArgs]>('factRouterWorkflow', {
        workflowId,
        ...routerStart(taskQueue, shard, retention),
        signal: subscribeSignal,
        signalArgs: [subscription],
      });
    }),
  );
}

export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
