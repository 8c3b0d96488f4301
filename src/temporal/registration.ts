/**
 * Registering a raised expectation with its fact and subject ledgers, from the bridge, before it answers `raised`
 * (docs/raise-path.md). A ledger that is not running is started with the expectation already among its subscribers;
 * a running one gets a `subscribe` signal. Either way the subscription is in the ledger's history when the call
 * returns, ahead of any fact recorded afterwards, so no fact received after the answer can miss the expectation.
 */
import {
  QueryNotRegisteredError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
} from '@temporalio/client';
import type { Fact, Subject } from '../../core/types.js';
import type { factLedgerWorkflow } from '../../workflows/fact-ledger.js';
import type { subjectLedgerWorkflow } from '../../workflows/subject-ledger.js';
import {
  ledgerLoadQuery,
  retainedFactQuery,
  subscribeSignal,
  type FactLedgerInput,
  type SubjectLedgerInput,
} from '../../workflows/messages.js';

/** How often a subscription is tried again when the ledger closed between our start and our signal. */
const SUBSCRIBE_TRIES = 3;

export interface Registration {
  /** Workflow id of the expectation that subscribes. */
  subscriber: string;
  factLedger: string;
  subjectLedger: string;
  factKey: string;
  subject: Subject;
  /** The fact ledger's retention, should this call start it. */
  retention: string;
}

/** Subscribes the expectation to both of its ledgers; idempotent (a ledger keeps a set of subscribers). */
export async function registerWithLedgers(client: Client, taskQueue: string, registration: Registration): Promise<void> {
  const { subscriber } = registration;
  const factLedger: FactLedgerInput = {
    factKey: registration.factKey,
    retention: registration.retention,
    subscribers: [subscriber],
  };
  const subjectLedger: SubjectLedgerInput = { subject: registration.subject, subscribers: [subscriber] };
  await Promise.all([
    subscribe<typeof factLedgerWorkflow>(client, 'factLedgerWorkflow', registration.factLedger, subscriber, {
      taskQueue,
      args: [factLedger],
      staticSummary: `fact ledger of ${registration.factKey}`,
    }),
    subscribe<typeof subjectLedgerWorkflow>(client, 'subjectLedgerWorkflow', registration.subjectLedger, subscriber, {
      taskQueue,
      args: [subjectLedger],
      staticSummary: `subject ledger of ${registration.subject.type}/${registration.subject.id}`,
    }),
  ]);
}

/**
 * Starts the ledger with the subscriber in its input (one workflow task, no signal), or signals a running one.
 * A ledger that closes between the two is started again.
 */
async function subscribe<W extends typeof factLedgerWorkflow | typeof subjectLedgerWorkflow>(
  client: Client,
  workflowType: 'factLedgerWorkflow' | 'subjectLedgerWorkflow',
  workflowId: string,
  subscriber: string,
  start: { taskQueue: string; args: Parameters<W>; staticSummary: string },
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.workflow.start<W>(workflowType, { workflowId, ...start, workflowIdConflictPolicy: 'FAIL' });
      return;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
    try {
      await client.workflow.getHandle(workflowId).signal(subscribeSignal, { workflowId: subscriber });
      return;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError) || attempt >= SUBSCRIBE_TRIES) throw error;
    }
  }
}

/**
 * The fact a running fact ledger retains (an early fact), read before an expectation whose deadline has already
 * passed is started, so that it is satisfied by it instead of lapsing in its first workflow task.
 */
export async function retainedFact(client: Client, factLedgerWorkflowId: string): Promise<Fact | undefined> {
  try {
    return await client.workflow.getHandle(factLedgerWorkflowId).query(retainedFactQuery);
  } catch (error) {
    // No ledger (never started, or closed with nothing retained) is the common case: nothing early to apply.
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

/**
 * How many expectations a ledger (fact or subject) forwards to now: 0 when it does not run, or when its worker
 * predates the query (it then keeps its bound itself).
 */
export async function ledgerSubscribers(client: Client, ledgerWorkflowId: string): Promise<number> {
  try {
    return (await client.workflow.getHandle(ledgerWorkflowId).query(ledgerLoadQuery)).subscribers;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError || error instanceof QueryNotRegisteredError) return 0;
    throw error;
  }
}
