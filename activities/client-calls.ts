/**
 * The activities that reach other workflows through the Temporal client: linking a dependent to its anchor, and
 * reading what the routers stored before a lapse (history-reads.ts; the bridge subscribes expectations to their
 * routers itself, docs/raise-path.md).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ExpectationRecord } from '../core/types.js';
import { expectationWorkflowId, routerTaskQueue } from '../core/ids.js';
import { subjectShardOf } from '../core/fact-shards.js';
import type { factRouterWorkflow } from '../workflows/fact-router.js';
import { factSignal, factsSignal, registerDependentSignal, type FactBatch } from '../workflows/messages.js';
import type {
  ClientActivities,
  ForwardFactsInput,
  ForwardFactsResult,
  LinkAnchorInput,
  LinkAnchorResult,
  StoreOnSubjectInput,
  StoredFactsInput,
} from '../workflows/activity-types.js';
import { RouterReads, storedFacts } from './history-reads.js';

/**
 * How many attempts wait for a superseding anchor that is not started yet (about a minute with the workflow's retry
 * policy: 1 s doubling); past them the bridge that withdrew the old anchor did not start it, and the link is given up.
 */
export const MOVED_ANCHOR_ATTEMPTS = 7;

/** Signals one forward call has in flight at once. */
export const FORWARD_CONCURRENCY = 16;

/**
 * Signals each subscriber its fact, FORWARD_CONCURRENCY at a time. A subscriber that has closed is gone; any other
 * failure fails the call once every forward was tried, and its retry sends them all again: a subscriber takes the
 * first fact on its key and closes, so a second copy finds it gone (or, lapsed and still open, changes nothing).
 */
export async function forwardFacts(client: Client, { forwards }: ForwardFactsInput): Promise<ForwardFactsResult> {
  const sent: string[] = [];
  const gone: string[] = [];
  const failures: unknown[] = [];
  let next = 0;
  const sender = async (): Promise<void> => {
    while (next < forwards.length) {
      const [workflowId, fact] = forwards[next++]!;
      try {
        await client.workflow.getHandle(workflowId).signal(factSignal, fact);
        sent.push(workflowId);
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) gone.push(workflowId);
        else failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(FORWARD_CONCURRENCY, forwards.length) }, sender));
  if (failures.length > 0) throw failures[0];
  return { sent, gone };
}

/** The activities that reach other workflows, bound to a Temporal client. */
export function createClientActivities(deps: { client: Client }): ClientActivities {
  const { client } = deps;
  const reads = new RouterReads(client);

  return {
    storedFacts: (input: StoredFactsInput) => storedFacts(reads, input),

    forwardFacts: (input: ForwardFactsInput) => forwardFacts(client, input),

    /** Stores a fact on a subject in its router, starting the router if need be (a workflow cannot signal-with-start). */
    async storeOnSubject({ routerWorkflowId, fact, retention }: StoreOnSubjectInput): Promise<void> {
      const shard = subjectShardOf(fact.subject);
      await client.workflow.signalWithStart<typeof factRouterWorkflow, [FactBatch]>('factRouterWorkflow', {
        workflowId: routerWorkflowId,
        taskQueue: routerTaskQueue(Context.current().info.taskQueue),
        args: [{ shard, retention }],
        signal: factsSignal,
        signalArgs: [{ subjects: [fact] }],
        staticSummary: `fact router ${shard}`,
      });
    },

    /**
     * Registers the dependent with a running anchor (which notifies it later), or reads a closed anchor's record:
     * satisfied (its observedAt), superseded (follow the new one), or closed unsatisfied.
     */
    async linkAnchor(input: LinkAnchorInput): Promise<LinkAnchorResult> {
      const handle = client.workflow.getHandle(input.anchorWorkflowId);
      try {
        await handle.signal(registerDependentSignal, { workflowId: input.dependentWorkflowId });
        return {};
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
      let record: ExpectationRecord;
      try {
        record = (await handle.result()) as ExpectationRecord;
      } catch (error) {
        if (
          error instanceof WorkflowNotFoundError &&
          input.moved &&
          Context.current().info.attempt < MOVED_ANCHOR_ATTEMPTS
        ) {
          throw ApplicationFailure.retryable(
            `superseding anchor ${input.anchorWorkflowId} is not started yet`,
            'AnchorNotStarted',
          );
        }
        if (error instanceof WorkflowNotFoundError || error instanceof WorkflowFailedError)
          return { closedUnsatisfied: true };
        throw error;
      }
      if (record.state === 'satisfied' && record.observedAt) return { satisfiedObservedAt: record.observedAt };
      if (record.supersededBy) {
        return {
          movedTo: { expectationId: record.supersededBy, workflowId: expectationWorkflowId(record.supersededBy) },
        };
      }
      return { closedUnsatisfied: true };
    },
  };
}
