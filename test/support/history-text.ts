/**
 * A workflow history as text, payloads included: what an operator reads with `temporal workflow show` or in the
 * UI. Payload data are bytes in the history object (JSON.stringify would print numbers), so the history is
 * encoded as protobuf and read as latin1, where a JSON payload's text appears as it was written.
 */
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

const { History } = proto.temporal.api.history.v1;

/** Every byte of every run's history of `workflowId` (current run and the runs it continued from). */
export async function historyText(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return Buffer.from(History.encode(History.fromObject(history)).finish()).toString('latin1');
}
