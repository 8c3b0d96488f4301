/**
 * Whether a worker takes the bridge's work, for `/readyz`: a bridge that accepts raises no worker will ever run is
 * not ready. In one process with its worker (`npm start`) the worker's own state says it; a bridge alone asks Temporal
 * which workers poll the workflow task queue (DescribeTaskQueue), at most once per few seconds however often it is
 * probed.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { TemporalCall } from './call.js';
import { timestampMs } from '../../core/timestamps.js';

/** `ready` with how it knows (`running`: its own worker; `polling`: Temporal saw a poller), or why not. */
export type WorkerReadiness = { ready: true; worker: 'running' | 'polling' } | { ready: false; reason: string };

/**
 * A poller counts when Temporal saw it this recently. A worker with nothing to do polls again when its long poll
 * expires (a minute on a default server), so two of those; a worker that stopped is noticed after as long.
 */
export const POLLER_FRESH_MS = 120_000;
/** How long one DescribeTaskQueue answer is reused: probes every second cost one call per five seconds. */
export const POLLER_CACHE_MS = 5_000;

export interface PollerReadinessOptions {
  taskQueue: string;
  /** When Temporal last saw each poller of the workflow task queue (milliseconds since the epoch). */
  pollers: () => Promise<number[]>;
  freshMs?: number;
  cacheMs?: number;
  now?: () => number;
}

/** Readiness from the pollers Temporal reports, cached for `cacheMs`; concurrent probes share one call. */
export function pollerReadiness(options: PollerReadinessOptions): () => Promise<WorkerReadiness> {
  const freshMs = options.freshMs ?? POLLER_FRESH_MS;
  const cacheMs = options.cacheMs ?? POLLER_CACHE_MS;
  const now = options.now ?? Date.now;
  let cached: { at: number; answer: Promise<WorkerReadiness> } | undefined;

  async function ask(): Promise<WorkerReadiness> {
    let seen: number[];
    try {
      seen = await options.pollers();
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return { ready: false, reason: `could not ask Temporal which workers poll ${options.taskQueue}: ${why}` };
    }
    const recent = seen.filter((at) => now() - at <= freshMs);
    if (recent.length > 0) return { ready: true, worker: 'polling' };
    const seconds = Math.round(freshMs / 1000);
    return {
      ready: false,
      reason: `no worker polls ${options.taskQueue}: Temporal saw no poller of its workflow tasks in the last ${seconds} s, so raised expectations would never progress`,
    };
  }

  return () => {
    if (!cached || now() - cached.at >= cacheMs) cached = { at: now(), answer: ask() };
    return cached.answer;
  };
}

/** When Temporal last saw each poller of the workflow task queue `taskQueue` (DescribeTaskQueue). */
export function workflowPollersOf(
  client: Client,
  namespace: string,
  taskQueue: string,
  call: TemporalCall,
  timeoutMs = 2_000,
) {
  return async (): Promise<number[]> => {
    const described = await call(
      () =>
        client.workflowService.describeTaskQueue({
          namespace,
          taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        }),
      timeoutMs,
    );
    return (described.pollers ?? []).map(({ lastAccessTime: at }) => (at ? timestampMs(at) : 0));
  };
}

/** Readiness from the state of the worker of this process (`getState()` of the SDK's Worker). */
export function ownWorkerReadiness(taskQueue: string, state: () => string, failure: () => unknown): WorkerReadiness {
  const now = state();
  if (now === 'RUNNING') return { ready: true, worker: 'running' };
  const error = failure();
  const why = error === undefined ? '' : ` (${error instanceof Error ? error.message : String(error)})`;
  const where = now === 'FAILED' ? 'has failed' : `is ${now.toLowerCase()}`;
  return {
    ready: false,
    reason: `no worker polls ${taskQueue}: the worker of this process ${where}${why}, so raised expectations would never progress`,
  };
}
