/**
 * Facts that come after the late window (DESIGN 3.3): the bridge asks the visibility store which closed lapsed
 * expectations waited on the facts no running one took, and counts and logs them; they satisfy nothing.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { WatcherMetrics } from '../metrics.js';
import type { Fact } from '../../core/schemas/extension.js';
import { keywordValue } from '../../core/ids.js';
import { ExpectationFactKey, ExpectationState } from '../temporal/search-attributes.js';
import { quote, WORKFLOW_TYPE } from './records.js';
import type { TemporalCall } from './temporal-call.js';

/** How many of the closed expectations on one key a log line names. */
export const NAMED_PER_LINE = 10;

/**
 * The visibility query for expectations on `factKey` closed lapsed, i.e. past their late window: a satisfied or
 * withdrawn one changes its state first, so `lapsed` and Completed is exactly that end.
 */
export function pastLateWindowQuery(taskQueue: string, factKey: string): string {
  return [
    `WorkflowType = ${quote(WORKFLOW_TYPE)}`,
    `TaskQueue = ${quote(taskQueue)}`,
    `${ExpectationFactKey.name} = ${quote(keywordValue(factKey))}`,
    `${ExpectationState.name} = ${quote('lapsed')}`,
    `ExecutionStatus = 'Completed'`,
  ].join(' AND ');
}

export interface LateFactDeps {
  client: Client;
  /** The bridge's task queue: only its expectations are looked up. */
  taskQueue: string;
  call: TemporalCall;
  metrics?: WatcherMetrics;
  logger?: Logger;
}

/** Looks a fact nobody waited on up; never throws (the fact is recorded whatever this finds). */
export function createLateFactCheck(deps: LateFactDeps) {
  async function closedOnKey(factKey: string): Promise<string[]> {
    const ids: string[] = [];
    const executions = deps.client.workflow.list({
      query: pastLateWindowQuery(deps.taskQueue, factKey),
      pageSize: NAMED_PER_LINE,
    });
    for await (const execution of executions) {
      // The id as raised is in the memo (a long id's workflow id is a hash).
      const raised = execution.memo?.expectationId;
      ids.push(typeof raised === 'string' ? raised : execution.workflowId);
      if (ids.length >= NAMED_PER_LINE) break;
    }
    return ids;
  }

  return {
    /** Counts and logs `fact` when expectations waiting on its key closed after their late window. */
    async afterUnawaited(fact: Fact): Promise<void> {
      let expectationIds: string[];
      try {
        expectationIds = await deps.call(() => closedOnKey(fact.factKey));
      } catch (error) {
        deps.logger?.warn(
          { err: error, factKey: fact.factKey },
          'could not tell whether a fact came after a late window',
        );
        return;
      }
      if (expectationIds.length === 0) return;
      deps.metrics?.factsAfterLateWindow.inc();
      deps.logger?.warn(
        {
          factKey: fact.factKey,
          expectationId: expectationIds[0],
          expectationIds,
          observedAt: fact.observedAt,
          source: fact.source,
        },
        'fact after the late window: the expectation waiting on its key closed lapsed, so the fact satisfies nothing',
      );
    },
  };
}

export type LateFactCheck = ReturnType<typeof createLateFactCheck>;
