/**
 * A task queue's backlog as the server reports it (DescribeTaskQueue with stats): the workflow and activity tasks
 * waiting for a worker. "Settled" in the bench means this backlog has drained.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { delay, progress } from './progress.js';

/** Workflow plus activity tasks waiting on `queue`; undefined when the server reports no stats. */
export async function backlogOf(client: Client, namespace: string, queue: string): Promise<number | undefined> {
  const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;
  let total = 0;
  for (const taskQueueType of [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY]) {
    const described = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType,
      reportStats: true,
    });
    const count = described.stats?.approximateBacklogCount;
    if (count === undefined || count === null) return undefined;
    total += Number(count);
  }
  return total;
}

/**
 * The instant `queue`'s backlog was first seen empty at two reads 0.5 s apart (at once when the server reports no
 * stats); `at` undefined when it had not by `timeoutMs`.
 */
export async function drainedAt(
  client: Client,
  namespace: string,
  queue: string,
  options: { timeoutMs: number; label?: string },
): Promise<{ at?: number; backlog?: number }> {
  const ends = Date.now() + options.timeoutMs;
  let calmSince: number | undefined;
  let backlog: number | undefined;
  let lastTick = Date.now();
  while (Date.now() < ends) {
    backlog = await backlogOf(client, namespace, queue);
    if (backlog === undefined) return { at: Date.now() };
    if (backlog === 0 && calmSince !== undefined) return { at: calmSince, backlog };
    calmSince = backlog === 0 ? Date.now() : undefined;
    if (options.label && Date.now() - lastTick >= 5_000) {
      progress(`  ${options.label}: task backlog ${backlog}`);
      lastTick = Date.now();
    }
    await delay(500);
  }
  return { backlog };
}
