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
/** The events of the current run of the key's router; none when it never ran. */
async function routerHistoryOf(client: Client, taskQueue: string, factKey: string) {
  try {
    return (await client.workflow.getHandle(factRouterWorkflowId(factKey, taskQueue)).fetchHistory()).events ?? [];
  } catch (error) {
    // fetchHistory passes the server's NOT_FOUND (gRPC status 5) on as it is.
    if (error instanceof WorkflowNotFoundError || (error as { code?: number }).code === 5) return [];
    throw error;
  }
}

export async function routerEventsOf(client: Client, taskQueue: string, factKey: string): Promise<string[]> {
  const named: string[] = [];
  for (const event of await routerHistoryOf(client, taskQueue, factKey)) {
    const payloads = [
      ...(event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads ?? []),
      ...(event.workflowExecutionSignaledEventAttributes?.input?.payloads ?? []),
    ];
    const data = payloads.map((p) => Buffer.from(p.data ?? []).toString('utf8')).join('\n');
    if (data.includes(JSON.stringify(factKey))) named.push(EventType[event.eventType ?? 0] ?? String(event.eventType));
  }
  return named;
}

/**
 * The facts with the key stored in its router (its current run), in order: those of `facts` signals (the bridge's
 * store) and of `recordFact` updates (`wait=true`), each as the bridge sent it.
 */
export async function routerStored(
  client: Client,
  taskQueue: string,
  factKey: string,
): Promise<Array<{ factKey: string; observedAt: string; source?: string }>> {
  type Stored = { factKey: string; observedAt: string; source?: string };
  const stored: Stored[] = [];
  for (const event of await routerHistoryOf(client, taskQueue, factKey)) {
    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
    if (accepted?.input?.name === 'recordFact')
      stored.push(defaultPayloadConverter.fromPayload<Stored>(accepted.input.args!.payloads![0]!));
    const signaled = event.workflowExecutionSignaledEventAttributes;
    if (signaled?.signalName === 'facts') {
      const batch = defaultPayloadConverter.fromPayload<{ facts?: Stored[] }>(signaled.input!.payloads![0]!);
      stored.push(...(batch.facts ?? []));
    }
  }
  return stored.filter((fact) => fact.factKey === factKey);
}

/**
 * The subscribers a router forwarded facts to, in order, as an operator reads them in the Temporal UI
 * (workflows/fact-router.ts): each `fact` signal it sent, and the `sent` of each `forwardFacts` local activity's marker.
 */
export async function routerForwards(client: Client, workflowId: string): Promise<string[]> {
  const { events } = await client.workflow.getHandle(workflowId).fetchHistory();
  return (events ?? []).flatMap((event) => {
    const signalled = event.signalExternalWorkflowExecutionInitiatedEventAttributes;
    if (signalled?.signalName === 'fact') return [signalled.workflowExecution?.workflowId ?? ''];
    const details = event.markerRecordedEventAttributes?.details;
    const data = details?.data?.payloads?.[0];
    const result = details?.result?.payloads?.[0];
    if (!data || !result) return [];
    if (defaultPayloadConverter.fromPayload<{ activity_type?: string }>(data).activity_type !== 'forwardFacts')
      return [];
    return defaultPayloadConverter.fromPayload<{ sent: string[] }>(result).sent;
  });
}

/** Whether the key's router holds a fact with the key (stored by signal, or recorded by an update). */
export async function routerRecorded(client: Client, taskQueue: string, factKey: string): Promise<boolean> {
  return (await routerStored(client, taskQueue, factKey)).length > 0;
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
