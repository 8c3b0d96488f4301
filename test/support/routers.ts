/**
 * Reading what a fact router (`facts:<taskQueue>:<nnn>`, serving many keys) holds about one key, from its history as
 * an operator reads it in the Temporal UI.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { factRouterWorkflowId } from '../../core/ids.js';

const { EventType } = proto.temporal.api.enums.v1;

/** The types of the events of the key's router (its current run) whose payloads name the key; none when it never ran. */
export async function routerEventsOf(client: Client, taskQueue: string, factKey: string): Promise<string[]> {
  let history;
  try {
    history = await client.workflow.getHandle(factRouterWorkflowId(factKey, taskQueue)).fetchHistory();
  } catch (error) {
    // fetchHistory passes the server's NOT_FOUND (gRPC status 5) on as it is.
    if (error instanceof WorkflowNotFoundError || (error as { code?: number }).code === 5) return [];
    throw error;
  }
  const named: string[] = [];
  for (const event of history.events ?? []) {
    const payloads = [
      ...(event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads ?? []),
      ...(event.workflowExecutionSignaledEventAttributes?.input?.payloads ?? []),
    ];
    const data = payloads.map((p) => Buffer.from(p.data ?? []).toString('utf8')).join('\n');
    if (data.includes(JSON.stringify(factKey))) named.push(EventType[event.eventType ?? 0] ?? String(event.eventType));
  }
  return named;
}

/** Whether the key's router recorded a fact with the key (a `recordFact` update accepted with it). */
export async function routerRecorded(client: Client, taskQueue: string, factKey: string): Promise<boolean> {
  return (await routerEventsOf(client, taskQueue, factKey)).includes('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
}

/** The answers of the key's router to each `recordFact` update with the key (its current run), in order. */
export async function routerOutcomesOf(client: Client, taskQueue: string, factKey: string): Promise<unknown[]> {
  const history = await client.workflow.getHandle(factRouterWorkflowId(factKey, taskQueue)).fetchHistory();
  const ofKey = new Set<string>();
  const outcomes: unknown[] = [];
  for (const event of history.events ?? []) {
    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
    if (accepted) {
      const fact = defaultPayloadConverter.fromPayload<{ factKey?: string }>(accepted.input!.args!.payloads![0]!);
      if (fact.factKey === factKey) ofKey.add(accepted.meta!.updateId!);
    }
    const completed = event.workflowExecutionUpdateCompletedEventAttributes;
    const answer = completed?.outcome?.success?.payloads?.[0];
    if (completed && answer && ofKey.has(completed.meta!.updateId!))
      outcomes.push(defaultPayloadConverter.fromPayload(answer));
  }
  return outcomes;
}

/** A workflow that never closes (a fact router) is at rest when no task is pending and its history stops growing. */
export async function atRest(client: Client, workflowId: string, quietMs = 1000): Promise<boolean> {
  const length = async () => {
    const description = await client.workflow.getHandle(workflowId).describe();
    return description.raw.pendingWorkflowTask ? -1 : description.historyLength;
  };
  const before = await length();
  await new Promise((resolve) => setTimeout(resolve, quietMs));
  return before >= 0 && (await length()) === before;
}
