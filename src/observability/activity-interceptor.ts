/**
 * What the worker tells operators about its activities: every activity log line carries the expectationId (beside
 * the workflowId, activityType and attempt the SDK adds), and lapse deliveries are counted on the worker's metrics
 * (Temporal's meter, exported with the SDK's own metrics; and the bridge's prom-client registry when both run in
 * one process).
 */
import type { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { DeliverLapseInput, DeliverLapseResult } from '../../workflows/activity-types.js';
import type { WatcherMetrics } from '../metrics.js';

/**
 * The lapse counters on Temporal's meter. Its Prometheus exporter appends `_total` (countersTotalSuffix), so they are
 * scraped as `watcher_lapses_total` and `watcher_lapse_deliveries_failed_total`, the names of the bridge's twins.
 */
export const LAPSES = 'watcher_lapses';
export const LAPSE_DELIVERIES_FAILED = 'watcher_lapse_deliveries_failed';

const EXPECTATION_WORKFLOW = /^expectation:(?!sha256:[0-9a-f]{64}$)(.+)$/s;

/**
 * The expectation an activity works for: the lapse's own id for a delivery, else the calling workflow's
 * (`expectation:<id>`; a hashed id of an over-long expectationId cannot be read back and gives undefined).
 */
export function expectationIdOf(
  activityType: string,
  args: readonly unknown[],
  workflowId: string | undefined,
): string | undefined {
  if (activityType === 'deliverLapse') {
    const id = (args[0] as Partial<DeliverLapseInput> | undefined)?.lapse?.expectationId;
    if (typeof id === 'string') return id;
  }
  return workflowId ? EXPECTATION_WORKFLOW.exec(workflowId)?.[1] : undefined;
}

const isFinalFailure = (error: unknown) => error instanceof ApplicationFailure && error.nonRetryable;

/** The interceptor factory for `Worker.create({ interceptors: { activity: [...] } })`. */
export function activityObservability(options: { metrics?: WatcherMetrics } = {}): ActivityInterceptorsFactory {
  return (ctx: Context) => {
    const workflowId = ctx.info.workflowExecution?.workflowId;
    let expectationId = expectationIdOf(ctx.info.activityType, [], workflowId);
    return {
      outbound: {
        getLogAttributes: (attributes, next) => next(expectationId ? { ...attributes, expectationId } : attributes),
        // The SDK tags custom metrics in camelCase; Temporal's own series use snake_case labels, so follow those.
        getMetricTags: ({ namespace, taskQueue, activityType, ...rest }, next) =>
          next({ ...rest, namespace: namespace ?? '', task_queue: taskQueue ?? '', activity_type: activityType ?? '' }),
      },
      inbound: {
        async execute(input, next) {
          expectationId = expectationIdOf(ctx.info.activityType, input.args, workflowId);
          if (ctx.info.activityType !== 'deliverLapse') return next(input);

          const { lapse, resend } = input.args[0] as DeliverLapseInput;
          // One lapse, however many attempts its delivery takes and however often an admin re-sends it.
          if (ctx.info.attempt === 1 && resend === undefined) {
            ctx.metricMeter.createCounter(LAPSES, '', 'Lapses raised, by type').add(1, { lapse: lapse.lapse });
            options.metrics?.lapses.inc({ lapse: lapse.lapse });
          }
          try {
            const result = (await next(input)) as DeliverLapseResult;
            ctx.log.info('lapse delivered', {
              lapse: lapse.lapse,
              dueAt: lapse.dueAt,
              lapseTaskId: result.taskId,
              warnings: result.warnings,
            });
            return result;
          } catch (error) {
            if (isFinalFailure(error)) {
              ctx.metricMeter
                .createCounter(
                  LAPSE_DELIVERIES_FAILED,
                  '',
                  'Lapse tasks the agent refused or that could not be delivered',
                )
                .add(1, { lapse: lapse.lapse });
              options.metrics?.lapseDeliveriesFailed.inc();
              ctx.log.error('lapse delivery failed for good', { lapse: lapse.lapse, dueAt: lapse.dueAt, error });
            }
            throw error;
          }
        },
      },
    };
  };
}
