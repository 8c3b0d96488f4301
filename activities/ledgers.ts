/**
 * The activities that reach other workflows through the Temporal client: linking a dependent to its anchor, and
 * reading a subject ledger's history before a stall (the bridge subscribes expectations to their ledgers itself,
 * docs/raise-path.md).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ExpectationRecord } from '../core/types.js';
import { expectationWorkflowId } from '../core/ids.js';
import type { temporal } from '@temporalio/proto';
import { decodePayloads } from './payloads.js';
import {
  recordFactUpdate,
  registerDependentSignal,
  type FactRouterInput,
  type RoutedFact,
  type SubjectFact,
  type Unsubscribe,
} from '../workflows/messages.js';
import type {
  FactHeardInput,
  LedgerActivities,
  LinkAnchorInput,
  LinkAnchorResult,
  SubjectHeardInput,
} from '../workflows/activity-types.js';

/**
 * How many attempts wait for a superseding anchor that is not started yet (about a minute with the workflow's retry
 * policy: 1 s doubling); past them the bridge that withdrew the old anchor did not start it, and the link is given up.
 */
export const MOVED_ANCHOR_ATTEMPTS = 7;

/** The history of a workflow's current run, or undefined when there is no such workflow. */
async function historyOf(client: Client, workflowId: string): Promise<temporal.api.history.v1.IHistory | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).fetchHistory();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

/**
 * The latest fact on the subject that a bridge received between `sinceMs` and `untilMs`, read from the subject
 * ledger's history (its signals and the outbox it carried over), or undefined.
 */
async function subjectHeard(client: Client, input: SubjectHeardInput): Promise<SubjectFact | undefined> {
  const decoded = (payloads: temporal.api.common.v1.IPayload[] | null | undefined) => decodePayloads(client, payloads);
  const history = await historyOf(client, input.ledgerWorkflowId);
  if (!history) return undefined;
  let latest: SubjectFact | undefined;
  const consider = (fact: SubjectFact | undefined) => {
    const receivedMs = fact ? Date.parse(fact.receivedAt) : Number.NaN;
    if (!fact || !(receivedMs >= input.sinceMs && receivedMs <= input.untilMs)) return;
    if (!latest || Date.parse(fact.observedAt) > Date.parse(latest.observedAt)) latest = fact;
  };
  for (const event of history.events ?? []) {
    const signaled = event.workflowExecutionSignaledEventAttributes;
    // Recorded before the raise, it was received before it too: not one that counts.
    const recordedMs = eventMs(event);
    if (signaled?.signalName === 'subjectObserved' && recordedMs >= input.sinceMs) {
      consider((await decoded(signaled.input?.payloads))[0] as SubjectFact | undefined);
    }
    // A sibling satisfied by a fact that named no subject brings it as it leaves (messages.ts: Unsubscribe).
    if (signaled?.signalName === 'unsubscribe' && recordedMs >= input.sinceMs) {
      consider(((await decoded(signaled.input?.payloads))[0] as Unsubscribe | undefined)?.heard);
    }
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) {
      const [ledgerInput] = (await decoded(started.input?.payloads)) as Array<{
        carried?: { outbox?: Array<{ workflowId: string; fact: SubjectFact }> };
      }>;
      for (const entry of ledgerInput?.carried?.outbox ?? [])
        if (entry.workflowId === input.expectationWorkflowId) consider(entry.fact);
    }
  }
  return latest;
}

/** When the server wrote an event, epoch ms. */
function eventMs(event: temporal.api.history.v1.IHistoryEvent): number {
  return Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
}

/**
 * The first fact with the key that a bridge received between `sinceMs` and `untilMs` and the router recorded, read
 * from the router's history (its recordFact updates, and what it carried over: the key's latest fact and the forwards
 * still to send), or undefined. Its forward may be behind the router's or the server's backlog.
 */
async function factHeard(client: Client, input: FactHeardInput): Promise<RoutedFact | undefined> {
  const history = await historyOf(client, input.routerWorkflowId);
  if (!history) return undefined;
  let first: RoutedFact | undefined;
  const consider = (fact: RoutedFact | undefined) => {
    const receivedMs = fact?.receivedAt ? Date.parse(fact.receivedAt) : Number.NaN;
    if (!fact || fact.factKey !== input.factKey || !(receivedMs >= input.sinceMs && receivedMs <= input.untilMs))
      return;
    if (!first || receivedMs < Date.parse(first.receivedAt!)) first = fact;
  };
  for (const event of history.events ?? []) {
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) {
      const [routerInput] = (await decodePayloads(client, started.input?.payloads)) as Array<
        FactRouterInput | undefined
      >;
      const carried = routerInput?.carried;
      for (const entry of carried?.outbox ?? [])
        if (entry.workflowId === input.expectationWorkflowId) consider(entry.fact);
      consider(carried?.keys.find((key) => key.factKey === input.factKey)?.latest);
    }
    const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    // Recorded before the raise, it was received before it too: not one that counts.
    if (request?.name === recordFactUpdate.name && eventMs(event) >= input.sinceMs) {
      consider((await decodePayloads(client, request.args?.payloads))[0] as RoutedFact | undefined);
    }
  }
  return first;
}

/** The activities that reach other workflows, bound to a Temporal client. */
export function createLedgerActivities(deps: { client: Client }): LedgerActivities {
  const { client } = deps;

  return {
    subjectHeard: (input: SubjectHeardInput) => subjectHeard(client, input),
    factHeard: (input: FactHeardInput) => factHeard(client, input),

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
