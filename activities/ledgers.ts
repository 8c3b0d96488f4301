/**
 * Activities that reach other workflows through the Temporal client: subscribing an expectation to its fact and
 * subject ledgers (signal-with-start) and linking a dependent to its anchor.
 */
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ExpectationRecord } from '../core/types.js';
import { expectationWorkflowId } from '../src/temporal/ids.js';
import { registerDependentSignal, retainedFactQuery, subscribeSignal } from '../workflows/messages.js';
import type {
  LedgerActivities,
  LinkAnchorInput,
  LinkAnchorResult,
  SubscribeFactLedgerInput,
  SubscribeFactLedgerResult,
  SubscribeSubjectLedgerInput,
} from './types.js';

/** The ledger and anchor activities, bound to a Temporal client. */
export function createLedgerActivities(deps: { client: Client }): LedgerActivities {
  const { client } = deps;
  return {
    /** Starts the fact ledger if needed, subscribes, and returns the fact it retains from before (if any). */
    async subscribeFactLedger(input: SubscribeFactLedgerInput): Promise<SubscribeFactLedgerResult> {
      const handle = await client.workflow.signalWithStart('factLedgerWorkflow', {
        workflowId: input.ledgerWorkflowId,
        taskQueue: input.taskQueue,
        args: [{ factKey: input.factKey, retention: input.retention }],
        signal: subscribeSignal,
        signalArgs: [{ workflowId: input.subscriberWorkflowId }],
        staticSummary: `fact ledger of ${input.factKey}`,
      });
      try {
        return { retained: await handle.query(retainedFactQuery) };
      } catch {
        // A ledger that closed meanwhile retains nothing; the subscription above forwards whatever it held anyway.
        return {};
      }
    },

    /** Starts the subject ledger if needed and subscribes to it. */
    async subscribeSubjectLedger(input: SubscribeSubjectLedgerInput): Promise<void> {
      await client.workflow.signalWithStart('subjectLedgerWorkflow', {
        workflowId: input.ledgerWorkflowId,
        taskQueue: input.taskQueue,
        args: [{ subject: input.subject }],
        signal: subscribeSignal,
        signalArgs: [{ workflowId: input.subscriberWorkflowId }],
        staticSummary: `subject ledger of ${input.subject.type}/${input.subject.id}`,
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
        if (error instanceof WorkflowNotFoundError || error instanceof WorkflowFailedError) return { closedUnsatisfied: true };
        throw error;
      }
      if (record.state === 'satisfied' && record.observedAt) return { satisfiedObservedAt: record.observedAt };
      if (record.supersededBy) {
        return { movedTo: { expectationId: record.supersededBy, workflowId: expectationWorkflowId(record.supersededBy) } };
      }
      return { closedUnsatisfied: true };
    },
  };
}
