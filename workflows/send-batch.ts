/**
 * The router's signals to other workflows, one batch of its outbox (outbox.ts) at once.
 */
import { getExternalWorkflowHandle, type SignalDefinition } from '@temporalio/workflow';

/** Signals each subscriber of the batch: which got their signal, and which are gone (closed), which the caller drops. */
export async function sendBatch<T>(
  signal: SignalDefinition<[T]>,
  batch: Array<[string, T]>,
): Promise<{ sent: string[]; gone: string[] }> {
  const sent: string[] = [];
  const gone: string[] = [];
  await Promise.all(
    batch.map(async ([workflowId, item]) => {
      try {
        await getExternalWorkflowHandle(workflowId).signal(signal, item);
        sent.push(workflowId);
      } catch {
        gone.push(workflowId);
      }
    }),
  );
  return { sent, gone };
}
