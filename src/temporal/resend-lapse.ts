/**
 * The operator's re-send of a lapse task (docs/api.md): the `resendLapse` update of the expectation's workflow, which
 * delivers the lapse again under its messageId unless it is delivered or on its way. The workflow decides, so a fact
 * or a delivery landing meanwhile cannot be overruled; a closed workflow is answered from its result.
 */
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { EXPECTATION_ENDED, LAPSE_NOT_FOUND } from '../../core/failures.js';
import type { expectationWorkflow } from '../../workflows/expectation.js';
import { resendLapseUpdate, type ResendLapseRequest, type ResendLapseResult } from '../../workflows/messages.js';
import { getExpectationRecord } from './expectations.js';
import { expectationWorkflowId } from '../../core/ids.js';

/** What a resend came to: the workflow's answer, or why there was nothing to re-send (with a sentence saying so). */
export type ResendOutcome =
  ResendLapseResult | { result: 'unknown-expectation' } | { result: 'unknown-lapse' | 'ended'; reason: string };

const noSuchLapse = (expectationId: string, messageId: string): string =>
  `expectation '${expectationId}' has no lapse whose delivery has messageId '${messageId}'`;

/** Asks the expectation's workflow (its latest run: continue-as-new carries every lapse) to re-send one lapse. */
export async function resendLapse(
  client: Client,
  expectationId: string,
  request: ResendLapseRequest,
): Promise<ResendOutcome> {
  const handle = client.workflow.getHandle<typeof expectationWorkflow>(expectationWorkflowId(expectationId));
  let status: string;
  try {
    status = (await handle.describe()).status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { result: 'unknown-expectation' };
    throw error;
  }
  if (status !== 'RUNNING') return fromClosed(client, expectationId, status, request.messageId);
  try {
    return await handle.executeUpdate(resendLapseUpdate, { args: [request] });
  } catch (error) {
    // It closed between describe and update.
    if (error instanceof WorkflowNotFoundError)
      return fromClosed(client, expectationId, 'COMPLETED', request.messageId);
    const cause = error instanceof WorkflowUpdateFailedError ? error.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === LAPSE_NOT_FOUND) {
      return { result: 'unknown-lapse', reason: cause.message };
    }
    if (cause instanceof ApplicationFailure && cause.type === EXPECTATION_ENDED) {
      return { result: 'ended', reason: cause.message };
    }
    throw error;
  }
}

/** A closed workflow takes no update; its result (the record) still says whether the lapse exists and was delivered. */
async function fromClosed(
  client: Client,
  expectationId: string,
  status: string,
  messageId: string,
): Promise<ResendOutcome> {
  const record = status === 'COMPLETED' ? await getExpectationRecord(client, expectationId) : undefined;
  if (!record) {
    const how = status.toLowerCase().replaceAll('_', ' ');
    return {
      result: 'ended',
      reason: `expectation '${expectationId}' is closed: its workflow is ${how}, so nothing can deliver its lapse tasks`,
    };
  }
  const entry = record.lapses.find((candidate) => candidate.delivery.messageId === messageId);
  if (!entry) return { result: 'unknown-lapse', reason: noSuchLapse(expectationId, messageId) };
  if (entry.delivery.status === 'delivered') return { result: 'delivered', entry };
  const closed = record.closedAt ? ` at ${record.closedAt}` : '';
  return {
    result: 'ended',
    reason:
      `expectation '${expectationId}' is closed (${record.state}${closed}): ` +
      'its workflow has completed, so its lapse tasks are delivered no more',
  };
}
