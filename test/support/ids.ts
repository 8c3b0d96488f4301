/**
 * Ids for test data: every file and test on the shared server makes its own, so none collide.
 */
import { randomUUID } from 'node:crypto';
import { routerTaskQueue } from '../../core/ids.js';

/** A unique suffix for ids (8 hex digits), or `<prefix>-<suffix>` with a prefix. */
export function unique(prefix?: string): string {
  const suffix = randomUUID().slice(0, 8);
  return prefix === undefined ? suffix : `${prefix}-${suffix}`;
}

/** The visibility clause for every workflow of a deployment on `taskQueue`: its expectations' queue and its routers'. */
export const onQueues = (taskQueue: string): string => `TaskQueue IN ('${taskQueue}', '${routerTaskQueue(taskQueue)}')`;
